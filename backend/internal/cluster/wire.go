package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/volley-load/volley/backend/internal/segment"
)

// The messages of a run over agents (JSON). Subjects: PrepareSubject (request-reply, controller →
// agent), RunControlSubject (broadcast, controller → the run's agents), SnapshotSubject
// (JetStream, agent → controller, message id SnapshotMsgID) and bus.SubjectTime (clock probe).
// Permissions: bus.SubjectsFor lets an agent publish only its own snapshot subject and subscribe
// only to its own subjects and the runs' control subjects.

// SnapshotStream is the JetStream stream holding every run's snapshots (subjects volley.run.*.snap.*).
const SnapshotStream = "VOLLEY_SNAPSHOTS"

// PrepareSubject is where agent id is asked to prepare a run (Prepare → Ready).
func PrepareSubject(id string) string { return "volley.agent." + id + ".prepare" }

// RunControlSubject is run's broadcast control subject (Control).
func RunControlSubject(run int64) string { return fmt.Sprintf("volley.run.%d.ctl", run) }

// SnapshotSubject is where agent id publishes run's snapshots (Snapshot).
func SnapshotSubject(run int64, id string) string {
	return fmt.Sprintf("volley.run.%d.snap.%s", run, id)
}

// SnapshotMsgID is a snapshot's JetStream message id ("<key>.<run>.<agent>.<second>",
// "<key>.<run>.<agent>.final" for the final one): the stream drops a republished second (after a
// reconnect) as a duplicate. key is the agent's Prepare.MsgKey: JetStream drops a message whose id
// it has seen within its duplicate window on ANY subject, so ids another agent could guess (or
// an earlier run of the same number: a new database on the same --agents-state) would have the
// stream drop this agent's seconds as duplicates. "" (a Prepare without a key) leaves it out.
func SnapshotMsgID(key string, run int64, id string, second int, final bool) string {
	sec := fmt.Sprint(second)
	if final {
		sec = "final"
	}
	if key == "" {
		return fmt.Sprintf("%d.%s.%s", run, id, sec)
	}
	return fmt.Sprintf("%s.%d.%s.%s", key, run, id, sec)
}

// NewMsgKey is a Prepare.MsgKey: 128 random bits in hex.
func NewMsgKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}

// ValidMsgKey says whether k is a Prepare.MsgKey an agent takes: "" or 1–64 hex digits.
func ValidMsgKey(k string) bool {
	if len(k) > 64 {
		return false
	}
	for _, c := range k {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Prepare asks an agent to get a run ready: validate the plan, check it against the agent's
// --allow-target list, build its engine for its segment and measure its clock offset.
type Prepare struct {
	Run int64 `json:"run"`
	// Controller identifies the controller process (random per start); an agent takes control
	// messages only for the run it prepared.
	Controller string          `json:"controller"`
	Plan       json.RawMessage `json:"plan"` // plan.Plan JSON, secrets resolved
	Segment    segment.Wire    `json:"segment"`
	Agents     []string        `json:"agents"` // the run's agents in part order
	// FenceAfterMs: an agent that has had no acknowledgement from the broker for this long stops
	// its load (fencing).
	FenceAfterMs int64 `json:"fence_after_ms"`
	// Secrets are the values of the plan's {{secret.NAME}} references (plan.Plan.Secrets, which
	// plan JSON never carries); nil when the plan has none. (Added by issue 14's agent side.)
	Secrets map[string]string `json:"secrets,omitempty"`
	// MsgKey begins this agent's snapshot message ids (SnapshotMsgID): a secret of this agent
	// and run (NewMsgKey), so that no other agent can publish ids that would make the stream drop
	// this agent's seconds as duplicates. Only this agent's Prepare subject carries it.
	MsgKey string `json:"msg_key,omitempty"`
}

// Ready is an agent's answer to Prepare.
type Ready struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"` // why not (a whole sentence naming the agent's reason)
	// Fields are the plan's problems by field (plan.ValidationError), when that is why.
	Fields map[string]string `json:"fields,omitempty"`
	VUs    int               `json:"vus"` // VUs this agent's share runs at most
	// ClockOffsetMs is the agent's clock minus the controller's (ms), RTTMs the probe's round
	// trip (best of several probes on bus.SubjectTime).
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	RTTMs         float64 `json:"rtt_ms"`
}

// Control kinds: start and stop are broadcast on RunControlSubject; set_vus and set_rate (live
// control) are requests to each of the run's agents on ChangeSubject, answered by ControlReply.
const (
	ControlStart   = "start"
	ControlStop    = "stop"
	ControlSetVUs  = "set_vus"
	ControlSetRate = "set_rate"
)

// Control is a run's broadcast: start at StartAtUnixNano (the controller's clock), or stop; or a
// live change asked of one agent: hold VUs VUs (set_vus) or start Rate iterations per the plan's
// time_unit (set_rate), both the whole run's figure (each agent's engine takes its segment's
// share, engine.SetVUs and SetRate), By naming who asked (metrics.RunEvent.By).
type Control struct {
	Kind            string   `json:"kind"`
	Run             int64    `json:"run"`
	Controller      string   `json:"controller"`
	StartAtUnixNano int64    `json:"start_at_unix_nano,omitempty"`
	Reason          string   `json:"reason,omitempty"`
	VUs             *int     `json:"vus,omitempty"`
	Rate            *float64 `json:"rate,omitempty"`
	By              string   `json:"by,omitempty"`
}

// ChangeSubject is where agent id is asked to change its run's load (Control set_vus or set_rate
// → ControlReply). Only the controller may publish it: bus.SubjectsFor denies it to the agent
// itself (the rest of volley.agent.<id>.> is the agent's).
func ChangeSubject(id string) string { return "volley.agent." + id + ".change" }

// Why an agent did not apply a change (ControlReply.Code); "" is another reason (its Error says).
const (
	CodeNotRunning      = "not_running"      // engine.ErrNotRunning: not started, ending, or another run
	CodeNotControllable = "not_controllable" // engine.ErrNotControllable
	CodeTooManyChanges  = "too_many_changes" // engine.ErrTooManyChanges
	CodeInvalid         = "invalid"          // a *plan.ValidationError: Fields names "vus" or "rate"
)

// ControlReply is an agent's answer to a change: OK with From, the run-wide value before the
// change (metrics.RunEvent.From, as its engine recorded it), or why not.
type ControlReply struct {
	OK     bool              `json:"ok"`
	From   float64           `json:"from"`
	Code   string            `json:"code,omitempty"`
	Error  string            `json:"error,omitempty"` // a whole sentence naming the agent
	Fields map[string]string `json:"fields,omitempty"`
}

// TimeReply is the controller's answer to a clock probe: its wall clock.
type TimeReply struct {
	UnixNano int64 `json:"unix_nano"`
}

// Snapshot is one agent's second of a run, or its final message.
type Snapshot struct {
	Run    int64  `json:"run"`
	Agent  string `json:"agent"`
	Second int    `json:"second"` // Sample.ElapsedS (1 = the first second); the last second + 1 for Final
	// StartedUnixNano is when the agent actually started (its engine's start, on the controller's
	// clock: its own minus its measured offset); in its first second and its final message.
	StartedUnixNano int64       `json:"started_unix_nano,omitempty"`
	Part            *SecondPart `json:"part,omitempty"`
	Final           *FinalPart  `json:"final,omitempty"`
	Error           string      `json:"error,omitempty"` // the agent's run failed (in Final)
	// Fenced says the agent stopped its load because it lost the broker for fence_after (Final).
	Fenced bool `json:"fenced,omitempty"`
}
