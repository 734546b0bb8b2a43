package bus

import (
	"fmt"
	"time"
)

// Protocol is the version of the messages between the controller and its agents. The controller
// refuses an agent speaking another one at hello, naming both. 2: live control (set_vus,
// set_rate) on the agent's change subject, and the final's checks as numbered rows with each
// request name once (an agent of protocol 1 would send checks a controller of 2 cannot read). 3:
// the open models' iterations are owned in blocks (segment.Blocked): agents of 2 and 3 in one run
// would both run some iterations and neither run others.
const Protocol = 3

// Subjects of the agents' protocol (permissions: SubjectsFor).
const (
	// SubjectHello is the agent's hello request (Hello → HelloReply).
	SubjectHello = "volley.ctl.hello"
	// SubjectTime is the clock probe: any request gets the controller's wall clock (cluster.TimeReply).
	SubjectTime = "volley.ctl.time"
	// SubjectPresenceAll matches every agent's presence subject (the controller subscribes it).
	SubjectPresenceAll = "volley.agent.*.presence"
)

// PresenceSubject is where agent id publishes its Presence, once a second: a core-NATS subject
// under its own tree (volley.agent.<id>.presence). A JetStream KV key would keep the last value
// for a restarted controller, but the controller expires agents by the age of their last message
// either way, and a core subject needs no stream.
func PresenceSubject(id string) string { return "volley.agent." + id + ".presence" }

// HelloAgainSubject is where the controller asks agent id to say hello again (any message, body
// ignored; the agent re-sends its Hello on SubjectHello). A controller that restarted on an
// external NATS never hears the hello of an agent that stayed connected (no reconnect), so its
// registry asks on that agent's first presence beat (cluster.Registry). Only the controller and
// agent id itself may publish it (SubjectsFor): an agent can only poke itself.
func HelloAgainSubject(id string) string { return "volley.agent." + id + ".hello" }

// Geometry is an HDR histogram's shape: agents' histograms merge bucket for bucket only when every
// side uses the same one.
type Geometry struct {
	LowestUs  int64 `json:"lowest_us"`
	HighestUs int64 `json:"highest_us"`
	SigFigs   int   `json:"sig_figs"`
}

func (g Geometry) String() string {
	return fmt.Sprintf("%d–%d µs, %d significant digits", g.LowestUs, g.HighestUs, g.SigFigs)
}

// Hello is an agent's introduction (JSON on SubjectHello). The controller refuses one whose
// fields are out of their bounds (cluster's checkBounds: weight, cores, host, version, labels).
type Hello struct {
	ID        string            `json:"id"`
	Version   string            `json:"version"`  // the agent binary's version
	Protocol  int               `json:"protocol"` // Protocol of the agent's build
	Host      string            `json:"host"`
	Cores     int               `json:"cores"`
	Labels    map[string]string `json:"labels,omitempty"`
	Weight    int               `json:"weight"` // share of a weighted split; 0: its cores
	Histogram Geometry          `json:"histogram"`
}

// HelloReply is the controller's answer: OK, or Error saying why the agent is refused.
type HelloReply struct {
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
	Version  string `json:"version"`  // the controller's version
	Protocol int    `json:"protocol"` // the controller's Protocol
}

// Presence is an agent's heartbeat (JSON on PresenceSubject, every PresenceInterval). The
// controller ignores one with another state, a negative run, or a run while idle.
type Presence struct {
	State      string  `json:"state"`         // "idle" (no run, Run 0) or "running"
	Run        int64   `json:"run,omitempty"` // the run it works on, 0: none
	Cores      int     `json:"cores"`
	CPUPercent float64 `json:"cpu_percent"` // of one core, since the previous presence (200 = two cores busy)
	RSSBytes   uint64  `json:"rss_bytes"`
}

// Presence timing: an agent publishes every PresenceInterval; the controller counts an agent gone
// when its last presence is older than PresenceTTL (a few missed beats, not one late one).
const (
	PresenceInterval = time.Second
	PresenceTTL      = 5 * time.Second
)
