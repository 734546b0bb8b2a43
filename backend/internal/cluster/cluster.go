// Package cluster is the controller side of scale-out inside `volley serve`: it answers agents'
// hellos (refusing an incompatible protocol or histogram geometry, naming both sides) and keeps
// the registry of agents from their hellos and presence beats. An agent whose presence stops is
// gone after bus.PresenceTTL.
package cluster

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/metrics"
)

// Geometry is the histogram geometry of this build (metrics' HDR histograms).
var Geometry = bus.Geometry{LowestUs: metrics.LowestUs, HighestUs: metrics.HighestUs, SigFigs: metrics.SigFigs}

// Agent is one agent as GET /api/agents lists it.
type Agent struct {
	ID         string            `json:"id"`
	Host       string            `json:"host"`
	Cores      int               `json:"cores"`
	Version    string            `json:"version"`
	Labels     map[string]string `json:"labels"`
	Weight     int               `json:"weight"`
	State      string            `json:"state"`
	Run        int64             `json:"current_run,omitempty"`
	CPUPercent float64           `json:"cpu_percent"`
	RSSBytes   uint64            `json:"rss_bytes"`
	LastSeen   time.Time         `json:"last_seen"`
}

// Registry is the controller's view of its agents. Safe for concurrent use.
type Registry struct {
	version string
	now     func() time.Time
	subs    []*nats.Subscription

	mu     sync.Mutex
	agents map[string]*entry

	ask helloAsker // asks unknown agents to say hello again (rehello.go)

	refusals atomic.Pointer[bus.Refusals] // refused hellos are logged here (LogRefusals)
}

// LogRefusals logs each refused hello (another protocol, a bad id or weight...) on log as a
// warning, rate-limited (bus.Refusals); nil: not logged (the default).
func (r *Registry) LogRefusals(log *slog.Logger) { r.refusals.Store(bus.NewRefusals(log)) }

// entry is a registered agent. An agent is listed once a presence beat has come after its hello:
// a hello could name any id, but only agent id's own connection may publish its presence subject
// (bus.SubjectsFor), so the beat proves the id.
type entry struct {
	Agent
	beat bool
}

// Start answers hellos and follows presence on conn (the controller's connection; every
// permission). version is the controller's. now is the clock (nil: time.Now).
func Start(conn *nats.Conn, version string, now func() time.Time) (*Registry, error) {
	if now == nil {
		now = time.Now
	}
	r := &Registry{version: version, now: now, agents: map[string]*entry{}, ask: helloAsker{conn: conn}}
	hs, err := conn.Subscribe(bus.SubjectHello, r.onHello)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	ps, err := conn.Subscribe(bus.SubjectPresenceAll, r.onPresence)
	if err != nil {
		_ = hs.Unsubscribe()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	r.subs = []*nats.Subscription{hs, ps}
	if err := conn.Flush(); err != nil {
		r.Stop()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return r, nil
}

// Stop stops answering and following (the registry keeps its last view).
func (r *Registry) Stop() {
	for _, s := range r.subs {
		_ = s.Unsubscribe()
	}
}

// Check says whether an agent saying h may join a controller of this build: nil, or an error
// naming both sides' protocol (or histogram geometry).
func Check(h bus.Hello, version string) error {
	if h.Protocol != bus.Protocol {
		return fmt.Errorf("agent %q speaks protocol %d (volley %s), this controller speaks protocol %d (volley %s): run the same Volley release on both",
			h.ID, h.Protocol, h.Version, bus.Protocol, version)
	}
	if h.Histogram != Geometry {
		return fmt.Errorf("agent %q records latencies in histograms of %s, this controller in %s: its results could not be merged exactly",
			h.ID, h.Histogram, Geometry)
	}
	return nil
}

// Bounds of what an agent may say of itself: a hello's weight, cores, host and version (refused
// outside them; its labels: CheckLabels), a presence's RSS (clamped; its CPU is clamped to
// [0, 100 × cores]). A host is at most a DNS name's 253 bytes; a version ("1.4.0",
// "v1.4.0-12-gabcdef0-dirty") fits in 64.
const (
	MaxWeight     = 1000
	MaxCores      = 4096
	MaxRSSBytes   = 1 << 40 // 1 TiB
	MaxHostLen    = 253
	MaxVersionLen = 64
)

// Bounds of labels, an agent's (its hello, volley agent --labels) and a run's selection by them
// (volley run --agent-labels, the API's agent_labels) alike: CheckLabels.
const (
	MaxLabels        = 20
	MaxLabelKeyLen   = 63
	MaxLabelValueLen = 253
)

// labelKey is a label key's form (as a Kubernetes label name's, with / allowed anywhere).
var labelKey = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)

// CheckLabels says which of labels breaks their bounds (nil: none): at most MaxLabels labels, each
// key 1–MaxLabelKeyLen bytes of letters, digits and . _ / - (beginning and ending with a letter
// or digit), each value at most MaxLabelValueLen bytes of UTF-8 without control characters (a
// label is shown in logs and on the Agents page). The error names the
// label (clipped, bus.ClipID) and the bound.
func CheckLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("%d labels: at most %d", len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		switch v := labels[k]; {
		case k == "":
			return fmt.Errorf("a label with an empty key: a key is 1–%d bytes", MaxLabelKeyLen)
		case len(k) > MaxLabelKeyLen:
			return fmt.Errorf("label key %q is %d bytes: a key is 1–%d bytes", bus.ClipID(k), len(k), MaxLabelKeyLen)
		case !labelKey.MatchString(k):
			return fmt.Errorf("label key %q: a key is letters, digits and . _ / - (beginning and ending with a letter or digit)", bus.ClipID(k))
		case len(v) > MaxLabelValueLen:
			return fmt.Errorf("label %q: its value is %d bytes, at most %d", k, len(v), MaxLabelValueLen)
		case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
			return fmt.Errorf("label %q: its value %q has a control character or is not UTF-8", k, bus.ClipID(v))
		}
	}
	return nil
}

// checkBounds says which field of hello h is out of its bounds (nil: none).
func checkBounds(h bus.Hello) error {
	if h.Weight < 0 || h.Weight > MaxWeight {
		return fmt.Errorf("agent %q: weight %d is not in 0–%d", h.ID, h.Weight, MaxWeight)
	}
	if h.Cores < 1 || h.Cores > MaxCores {
		return fmt.Errorf("agent %q: cores %d is not in 1–%d", h.ID, h.Cores, MaxCores)
	}
	if len(h.Host) > MaxHostLen {
		return fmt.Errorf("agent %q: host is %d bytes, at most %d", h.ID, len(h.Host), MaxHostLen)
	}
	if len(h.Version) > MaxVersionLen {
		return fmt.Errorf("agent %q: version is %d bytes, at most %d", h.ID, len(h.Version), MaxVersionLen)
	}
	if err := CheckLabels(h.Labels); err != nil {
		return fmt.Errorf("agent %q: labels: %w", h.ID, err)
	}
	return nil
}

// MaxHelloBytes bounds a hello message, refused undecoded past it: one at every bound (20 labels
// of a 63-byte key and a 253-byte value, a 253-byte host, a 64-byte version), every byte
// JSON-escaped as \u00XX, is under 40 KB.
const MaxHelloBytes = 64 << 10

// onHello answers an agent's hello and registers it (listed after its first presence beat). The
// reply must go to the named agent's own inbox.
func (r *Registry) onHello(m *nats.Msg) {
	reply := bus.HelloReply{Version: r.version, Protocol: bus.Protocol}
	var h bus.Hello
	if len(m.Data) > MaxHelloBytes { // not decoded: a hello within its bounds is a few KB
		reply.Error = fmt.Sprintf("a hello of %d bytes; at most %d", len(m.Data), MaxHelloBytes)
	} else if err := json.Unmarshal(m.Data, &h); err != nil {
		reply.Error = "the hello is not valid JSON: " + err.Error()
	} else if !bus.ValidAgentID(h.ID) || !strings.HasPrefix(m.Reply, bus.InboxPrefix(h.ID)+".") {
		reply.Error = fmt.Sprintf("%q is not this connection's agent id", h.ID)
	} else if err := Check(h, r.version); err != nil {
		reply.Error = err.Error()
	} else if err := checkBounds(h); err != nil {
		reply.Error = err.Error()
	} else {
		reply.OK = true
		r.mu.Lock()
		a := r.agents[h.ID]
		if a == nil {
			a = &entry{Agent: Agent{ID: h.ID, State: "idle"}}
			r.agents[h.ID] = a
		}
		a.Host, a.Cores, a.Version, a.Labels, a.Weight = h.Host, h.Cores, h.Version, h.Labels, h.Weight
		if a.Labels == nil {
			a.Labels = map[string]string{}
		}
		a.LastSeen = r.now()
		r.mu.Unlock()
	}
	if reply.Error != "" {
		reason := reply.Error
		if len(reason) > 300 { // a hello's fields are the agent's to say
			reason = strings.ToValidUTF8(reason[:300], "") + "…"
		}
		// Logged under the connection's agent id (its reply inbox is its own: the broker lets
		// no agent subscribe to another's), with the id its hello claimed when that differs.
		args := []any{"agent", bus.ClipID(inboxAgent(m.Reply))}
		if h.ID != "" && h.ID != inboxAgent(m.Reply) {
			args = append(args, "claimed_id", bus.ClipID(h.ID))
		}
		r.refusals.Load().Refused("agent refused at hello", append(args, "reason", reason)...)
	}
	b, _ := json.Marshal(reply)
	_ = m.Respond(b)
}

// inboxAgent is the agent id of a reply subject in an agent's inbox (bus.InboxPrefix(id)+"."…),
// "" for any other.
func inboxAgent(reply string) string {
	const pre = "_INBOX_"
	id, _, ok := strings.Cut(strings.TrimPrefix(reply, pre), ".")
	if !ok || !strings.HasPrefix(reply, pre) || !bus.ValidAgentID(id) {
		return ""
	}
	return id
}

// onPresence refreshes an agent that said hello; a beat of an agent the registry does not know
// (it said hello to an earlier controller) is otherwise ignored, and asks that agent to say hello
// again (askHello). A beat that is not a presence (validPresence) is ignored: it refreshes
// nothing, so an agent that only sends such beats is gone after bus.PresenceTTL.
func (r *Registry) onPresence(m *nats.Msg) {
	id := presenceID(m.Subject)
	var p bus.Presence
	if id == "" {
		return
	}
	if err := json.Unmarshal(m.Data, &p); err != nil || !validPresence(p) {
		why := fmt.Sprintf("state %.40q with run %d is not one of an agent of this protocol (idle with run 0, running with a run)", p.State, p.Run)
		if err != nil {
			why = "not valid JSON: " + clip(err.Error())
		}
		r.refusals.Load().Refused("ignoring an agent's presence beat", "agent", bus.ClipID(id), "reason", why)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.agents[id]
	if a == nil {
		r.askHello(id)
		return
	}
	a.State, a.Run, a.LastSeen, a.beat = p.State, p.Run, r.now(), true
	if p.Cores > 0 && p.Cores <= MaxCores {
		a.Cores = p.Cores
	}
	// A peer's figures, bounded: at most every core busy, at most MaxRSSBytes.
	a.CPUPercent = min(max(p.CPUPercent, 0), 100*float64(max(a.Cores, 1)))
	a.RSSBytes = min(p.RSSBytes, MaxRSSBytes)
}

// validPresence reports whether p is a presence an agent of this protocol sends: state "idle"
// with run 0, or "running" with a run ≥ 0.
func validPresence(p bus.Presence) bool {
	switch p.State {
	case "idle":
		return p.Run == 0
	case "running":
		return p.Run >= 0
	}
	return false
}

// presenceID is the agent id in a presence subject ("" if it is not one).
func presenceID(subject string) string {
	const pre, suf = "volley.agent.", ".presence"
	if len(subject) <= len(pre)+len(suf) || subject[:len(pre)] != pre || subject[len(subject)-len(suf):] != suf {
		return ""
	}
	return subject[len(pre) : len(subject)-len(suf)]
}

// List returns the agents seen within bus.PresenceTTL, by id; older ones are forgotten.
func (r *Registry) List() []Agent {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Agent, 0, len(r.agents))
	for id, a := range r.agents {
		if now.Sub(a.LastSeen) > bus.PresenceTTL {
			delete(r.agents, id)
			continue
		}
		if !a.beat {
			continue
		}
		c := a.Agent
		c.Labels = maps.Clone(a.Labels)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Seen is when agent id last said hello or beat (the registry's clock); false when the registry
// does not know it (never joined, or forgotten by List after bus.PresenceTTL). A run counts an
// agent lost once its last beat is older than bus.PresenceTTL.
func (r *Registry) Seen(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.agents[id]
	if a == nil {
		return time.Time{}, false
	}
	return a.LastSeen, true
}

// Controller is a controller's side on a broker: its connection, the registry and the
// coordinator on it (StartController).
type Controller struct {
	Conn        *nats.Conn
	Registry    *Registry
	Coordinator *Coordinator
}

// StartController connects to broker b as the controller (b.Controller("controller")) and starts
// the registry (Start with version and now) and the coordinator (NewCoordinator with log and
// opts) on that connection. Errors: the connection's, Start's, NewCoordinator's (nothing is left
// running then).
func StartController(b *bus.Bus, version string, now func() time.Time, log *slog.Logger, opts ...CoordinatorOption) (*Controller, error) {
	c := &Controller{}
	var err error
	if c.Conn, err = b.Controller("controller"); err != nil {
		return nil, err
	}
	if c.Registry, err = Start(c.Conn, version, now); err == nil {
		c.Coordinator, err = NewCoordinator(c.Conn, c.Registry, log, opts...)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close stops the coordinator and the registry and closes the connection.
func (c *Controller) Close() {
	if c.Coordinator != nil {
		c.Coordinator.Close()
	}
	if c.Registry != nil {
		c.Registry.Stop()
	}
	c.Conn.Close()
}
