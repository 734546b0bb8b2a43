package report

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
)

// field is one labelled setting: Key is a dictionary key, Value is shown as it is.
type field struct {
	Key   string
	Value string
}

type stageRow struct {
	N        int // from 1
	Duration string
	Target   int
}

type header struct{ Name, Value string }

type requestRow struct {
	Name, Method, URL string
	Weight            int
	ThinkTime         string
	Headers           []header
	Checks            int
}

// settings is the load a run applied, as the plan gave it.
type settings struct {
	Executor string
	Load     []field
	Stages   []stageRow
	// StageUnit is the dictionary key of what a stage's target counts (VUs or iterations per
	// time unit).
	StageUnit string
	Scenario  []field
	HTTP      []field
	Requests  []requestRow
}

func dur(d plan.Duration) string {
	if d == 0 {
		return ""
	}
	return time.Duration(d).String()
}

// settingsOf lists p's load settings. Header values that are secret (plan.Request.IsSecretHeader)
// are shown as plan.Masked; {{secret.NAME}} references are shown as written, by name: a plan's
// secret values (Plan.Secrets) are never read.
func settingsOf(p *plan.Plan, tr func(string, ...any) string) *settings {
	if p == nil {
		return nil
	}
	l := p.Load
	s := &settings{Executor: l.Executor, StageUnit: "set.stageVUs"}
	if strings.Contains(l.Executor, "arrival-rate") {
		s.StageUnit = "set.stageRate"
	}
	add := func(list *[]field, key, v string) {
		if v != "" && v != "0" {
			*list = append(*list, field{key, v})
		}
	}
	itoa := strconv.Itoa
	add(&s.Load, "set.vus", itoa(l.VUs))
	add(&s.Load, "set.startVUs", itoa(l.StartVUs))
	add(&s.Load, "set.duration", dur(l.Duration))
	add(&s.Load, "set.iterations", itoa(l.Iterations))
	add(&s.Load, "set.maxDuration", dur(l.MaxDuration))
	add(&s.Load, "set.rate", itoa(l.Rate))
	add(&s.Load, "set.startRate", itoa(l.StartRate))
	add(&s.Load, "set.timeUnit", dur(l.TimeUnit))
	add(&s.Load, "set.preAllocatedVUs", itoa(l.PreAllocatedVUs))
	add(&s.Load, "set.maxVUs", itoa(l.MaxVUs))
	if len(l.Levels) > 0 {
		lv := make([]string, len(l.Levels))
		for i, n := range l.Levels {
			lv[i] = itoa(n)
		}
		add(&s.Load, "set.levels", strings.Join(lv, ", "))
	}
	add(&s.Load, "set.stepDuration", dur(l.StepDuration))
	add(&s.Load, "set.gracefulStop", dur(l.GracefulStop))
	for i, st := range l.Stages {
		s.Stages = append(s.Stages, stageRow{N: i + 1, Duration: dur(st.Duration), Target: st.Target})
	}

	flow := p.Flow
	if flow == "" {
		flow = "weighted"
	}
	add(&s.Scenario, "set.flow", flow)
	add(&s.Scenario, "set.thinkTime", string(p.ThinkTime))
	if p.Data != nil {
		mode := p.Data.Mode
		if mode == "" {
			mode = "per-iteration"
		}
		add(&s.Scenario, "set.data", mode)
	}

	yesNo := func(b bool) string {
		if b {
			return tr("yes")
		}
		return tr("no")
	}
	add(&s.HTTP, "set.timeout", dur(p.HTTP.Timeout))
	add(&s.HTTP, "set.connectTimeout", dur(p.HTTP.ConnectTimeout))
	add(&s.HTTP, "set.keepAlive", yesNo(p.HTTP.KeepAliveOn()))
	follow := yesNo(p.HTTP.FollowRedirects)
	if p.HTTP.FollowRedirects && p.HTTP.MaxRedirects > 0 {
		follow += " (≤ " + itoa(p.HTTP.MaxRedirects) + ")"
	}
	add(&s.HTTP, "set.followRedirects", follow)
	if p.HTTP.InsecureSkipVerify {
		add(&s.HTTP, "set.insecure", tr("yes"))
	}
	add(&s.HTTP, "set.maxBody", itoa(p.HTTP.MaxBody))
	add(&s.HTTP, "set.cookies", p.HTTP.CookieMode())
	add(&s.HTTP, "set.compression", strings.Join(p.HTTP.Compression, ", "))
	if len(p.HTTP.Hosts) > 0 {
		var hs []string
		for _, k := range slices.Sorted(maps.Keys(p.HTTP.Hosts)) {
			hs = append(hs, k+" → "+p.HTTP.Hosts[k])
		}
		add(&s.HTTP, "set.hosts", strings.Join(hs, ", "))
	}

	for _, r := range p.Requests {
		row := requestRow{Name: r.Name, Method: r.Method, URL: r.URL, Weight: r.Weight, ThinkTime: string(r.ThinkTime), Checks: len(r.Checks)}
		if row.Method == "" {
			row.Method = "GET"
		}
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			v := r.Headers[k]
			if r.IsSecretHeader(k) {
				v = plan.Masked
			}
			row.Headers = append(row.Headers, header{k, v})
		}
		s.Requests = append(s.Requests, row)
	}
	return s
}
