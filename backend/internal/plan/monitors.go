package plan

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Monitor is a Prometheus endpoint scraped during the run (package monitor): the target's side
// of the picture (issue 15). Type picks a preset:
//   - "node": a node_exporter or windows_exporter URL — host CPU % (total and per core), memory
//     used, load1 (node_exporter only), network in/out bytes/s (loopback excluded), established
//     TCP connections;
//   - "process": a `volley monitor` URL — CPU % and RSS of the processes it watches;
//   - "custom": one metric (Metric) whose series match Labels; counters are shown as rates.
//
// Name defaults to "<type>-<index>" (index in the plan's list); Interval to 1s (bounds
// MinMonitorInterval–MaxMonitorInterval) and Timeout to 800ms (at most the interval).
//
// Token, when set, is sent as "Authorization: Bearer <value>" with every scrape (the token a
// `volley monitor --token` beyond loopback requires). It must be a secret reference,
// "{{secret.NAME}}", resolved from the run's secrets like a request header's, so that the plan
// (and a run's snapshot of it) never holds the token itself.
type Monitor struct {
	Name     string            `json:"name,omitempty"`
	Type     string            `json:"type"`
	URL      string            `json:"url"`
	Interval Duration          `json:"interval,omitempty"`
	Timeout  Duration          `json:"timeout,omitempty"`
	Metric   string            `json:"metric,omitempty"`
	Labels   map[string]string `json:"labels,omitempty"`
	Token    string            `json:"token,omitempty"`
}

// Monitor types, defaults and bounds.
const (
	MonitorNode    = "node"
	MonitorProcess = "process"
	MonitorCustom  = "custom"

	DefaultMonitorInterval = time.Second
	DefaultMonitorTimeout  = 800 * time.Millisecond
	MinMonitorInterval     = 500 * time.Millisecond
	MaxMonitorInterval     = time.Minute
	MinMonitorTimeout      = 10 * time.Millisecond
	MaxMonitors            = 8
	MaxMonitorToken        = 100 // bytes of a monitor's token reference ({{secret.NAME}})
)

// MonitorTypes lists the monitor types.
var MonitorTypes = []string{MonitorNode, MonitorProcess, MonitorCustom}

var (
	monitorName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	metricName  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]{0,199}$`)
	labelName   = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,99}$`)
)

// defaultMonitors fills each monitor's name, interval and timeout (Defaults calls it).
func (p *Plan) defaultMonitors() {
	for i := range p.Monitors {
		m := &p.Monitors[i]
		if m.Name == "" {
			m.Name = m.Type + "-" + strconv.Itoa(i)
		}
		if m.Interval == 0 {
			m.Interval = Duration(DefaultMonitorInterval)
		}
		if m.Timeout == 0 {
			m.Timeout = Duration(min(DefaultMonitorTimeout, m.Interval.D()))
		}
	}
}

// validateMonitors names every problem of the plan's monitors by field path ("monitors[0].url").
func (p *Plan) validateMonitors(v *ValidationError) {
	if len(p.Monitors) > MaxMonitors {
		v.add("monitors", fmt.Sprintf("at most %d monitors", MaxMonitors))
	}
	seen := map[string]bool{}
	for i, m := range p.Monitors {
		f := "monitors[" + strconv.Itoa(i) + "]."
		if !slices.Contains(MonitorTypes, m.Type) {
			v.add(f+"type", fmt.Sprintf("%q is not one of %s", m.Type, oneOf(MonitorTypes)))
		}
		if !monitorName.MatchString(m.Name) {
			v.add(f+"name", "must be 1–64 letters, digits, '_', '.' or '-'")
		} else if seen[m.Name] {
			v.add(f+"name", fmt.Sprintf("%q names another monitor too", m.Name))
		}
		seen[m.Name] = true
		if msg := checkMonitorURL(m.URL); msg != "" {
			v.add(f+"url", msg)
		}
		if m.Interval.D() < MinMonitorInterval || m.Interval.D() > MaxMonitorInterval {
			v.add(f+"interval", monitorRange["interval"])
		}
		if m.Timeout.D() < MinMonitorTimeout || m.Timeout > m.Interval {
			v.add(f+"timeout", monitorRange["timeout"])
		}
		if msg := checkMonitorToken(m.Token); msg != "" {
			v.add(f+"token", msg)
		}
		if m.Type == MonitorCustom {
			if !metricName.MatchString(m.Metric) {
				v.add(f+"metric", "a custom monitor needs a Prometheus metric name (e.g. nginx_connections_active)")
			}
			for k, val := range m.Labels {
				if !labelName.MatchString(k) || len(val) > 200 {
					v.add(f+"labels", fmt.Sprintf("%q is not a label name with a value of at most 200 bytes", k))
				}
			}
		} else if m.Metric != "" || len(m.Labels) > 0 {
			v.add(f+"metric", "metric and labels are for custom monitors only")
		}
	}
}

// monitorRange is the problem of a monitor's interval or timeout out of its bounds.
var monitorRange = map[string]string{
	"interval": fmt.Sprintf("must be %v–%v (leave it out for the default 1s)", MinMonitorInterval, MaxMonitorInterval),
	"timeout":  fmt.Sprintf("must be %v up to the interval (leave it out for the default 800ms)", MinMonitorTimeout),
}

// checkMonitorDurations reports, on the decoded JSON before its shape is checked, a monitor
// interval or timeout that is zero (which would otherwise read as "not given" and silently take
// the default) or too long for a duration, with the monitor's bounds; it removes those keys so
// that they are reported once.
func checkMonitorDurations(raw map[string]any, v *ValidationError) {
	list, _ := raw["monitors"].([]any)
	for i, m := range list {
		obj, ok := m.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"interval", "timeout"} {
			s, ok := obj[k].(string)
			if !ok {
				continue
			}
			if d, err := time.ParseDuration(s); (err == nil && d == 0) || durationOverflows(s) {
				v.add("monitors["+strconv.Itoa(i)+"]."+k, fmt.Sprintf("%q: %s", s, monitorRange[k]))
				delete(obj, k)
			}
		}
	}
}

// checkMonitorURL accepts an absolute http(s) URL with a host, a port 1–65535 (parseURL, as
// request URLs) and no credentials.
func checkMonitorURL(raw string) string {
	if raw == "" {
		return "is required"
	}
	u, err := parseURL(raw)
	if err != nil {
		return err.Error()
	}
	if u.User != nil {
		return "must not hold credentials"
	}
	if strings.Contains(raw, "{{") {
		return "must not hold {{variables}}"
	}
	return ""
}

// checkMonitorToken accepts no token or exactly one secret reference, {{secret.NAME}}, of at
// most MaxMonitorToken bytes.
func checkMonitorToken(tok string) string {
	if tok == "" {
		return ""
	}
	const want = "must be a secret reference, {{secret.NAME}} (store the token as a secret: it is sent as Authorization: Bearer <value>)"
	if len(tok) > MaxMonitorToken {
		return fmt.Sprintf("%d bytes, over %d: %s", len(tok), MaxMonitorToken, want)
	}
	if _, ok := monitorTokenSecret(tok); !ok {
		return want
	}
	return ""
}

// monitorTokenSecret is the secret name of a token "{{secret.NAME}}" (spaces allowed inside the
// braces, as in templates), and whether tok is one.
func monitorTokenSecret(tok string) (string, bool) {
	parts, err := ParseTemplate(tok)
	if err != nil || len(parts) != 1 || !isSecretRef(parts[0].Var) {
		return "", false
	}
	return strings.TrimPrefix(parts[0].Var, SecretPrefix), true
}

// BearerToken is the value m.Token refers to in secrets ("" without a token or a value;
// CheckSecrets reports a missing one before a run).
func (m *Monitor) BearerToken(secrets SecretValues) string {
	name, ok := monitorTokenSecret(m.Token)
	if !ok {
		return ""
	}
	return secrets[name]
}

// checkMonitorTargets judges each monitor URL's host by the server's target policy
// (CheckTargets calls it).
func checkMonitorTargets(p *Plan, j TargetJudge, v *ValidationError) {
	for i, m := range p.Monitors {
		if u, err := url.Parse(m.URL); err == nil && u.Host != "" {
			if err := j.CheckHost(u.Host); err != nil {
				v.add("monitors["+strconv.Itoa(i)+"].url", err.Error())
			}
		}
	}
}
