package cluster

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
)

// endedMax is how many ended runs a coordinator remembers (the oldest is forgotten first): an
// agent beating that it still runs one of them is told to stop (onPresence).
const endedMax = 1024

// endedGrace: a beat within this of a run's end is not acted on — sent before the end (an agent
// goes idle before its final is sent), it may arrive after it.
const endedGrace = 2 * bus.PresenceInterval

// endedReason is the reason of the stop sent to an agent still running an ended run.
const endedReason = "the run has ended on its controller"

// endedRuns remembers the runs that ended on this coordinator, each with the controller id its
// agents were prepared with, and when a late agent was last told to stop it.
type endedRuns struct {
	mu    sync.Mutex
	order []int64 // oldest first
	runs  map[int64]*endedRun

	// lookup (SetEndedLookup) knows the runs that ended before this process; asked holds the
	// runs it said were not ended, and when (asked again after lookupEvery; at most endedMax).
	lookup func(run int64) (controller string, ok bool)
	asked  map[int64]time.Time
}

// lookupEvery is how often a run that the lookup said was not ended is looked up again while an
// agent beats that it runs it.
const lookupEvery = 10 * time.Second

// SetEndedLookup gives the coordinator the runs that ended before this process started (a
// restarted controller): lookup says whether run ended and the controller id its agents were
// prepared with (the server: store.EndedRunController). An agent still running such a run —
// cut off when its controller died, back after the restarted one gave it up — is then told to
// stop as one of a run that ended here is (onPresence). Called from the broker's goroutine, at
// most once per lookupEvery per run an agent says it runs and this process does not know.
func (c *Coordinator) SetEndedLookup(lookup func(run int64) (controller string, ok bool)) {
	c.endedRuns.mu.Lock()
	c.endedRuns.lookup = lookup
	c.endedRuns.mu.Unlock()
}

// lookUp asks the lookup whether run (which an agent beats that it runs, unknown here) ended
// before this process, at most once per lookupEvery, and records it if so.
func (c *Coordinator) lookUp(run int64) bool {
	now, e := c.now(), &c.endedRuns
	e.mu.Lock()
	lookup := e.lookup
	if t, ok := e.asked[run]; lookup == nil || ok && now.Sub(t) < lookupEvery && !now.Before(t) {
		e.mu.Unlock()
		return false
	}
	if e.asked == nil || len(e.asked) >= endedMax {
		e.asked = map[int64]time.Time{}
	}
	e.asked[run] = now
	e.mu.Unlock()
	controller, ok := lookup(run)
	if !ok || controller == "" {
		return false
	}
	c.endedAt(run, controller, time.Time{}) // long ended: no grace
	return true
}

type endedRun struct {
	controller string
	at         time.Time // when it ended
	told       time.Time // when a stop was last sent for it by onPresence (zero: never)
}

// ended records that run (prepared by controller) has ended here, now.
func (c *Coordinator) ended(run int64, controller string) { c.endedAt(run, controller, c.now()) }

// endedAt records that run (prepared by controller) ended at at.
func (c *Coordinator) endedAt(run int64, controller string, at time.Time) {
	if controller == "" {
		return
	}
	e := &c.endedRuns
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runs == nil {
		e.runs = map[int64]*endedRun{}
	}
	if er, ok := e.runs[run]; ok {
		er.controller, er.at = controller, at
		return
	}
	if len(e.order) >= endedMax {
		delete(e.runs, e.order[0])
		e.order = e.order[1:]
	}
	e.order = append(e.order, run)
	e.runs[run] = &endedRun{controller: controller, at: at}
}

// onPresence tells an agent whose beat says it still runs a run that ended here (endedGrace ago
// or more) to stop, at most once per StopRepeat per run. A stop is a plain publish: an agent reconnecting while its run was
// stopped (a restarted broker, a network cut shorter than its fence) misses the repeats of a run
// that ended without its final (it was lost), and would load its target to the plan's end. The
// stop carries the run's controller id, so an agent of another controller on the same broker
// whose run has the same number ignores it (agent: onControl).
func (c *Coordinator) onPresence(m *nats.Msg) {
	var p bus.Presence
	if json.Unmarshal(m.Data, &p) != nil || p.State != "running" || p.Run <= 0 {
		return
	}
	c.mu.Lock()
	_, driven := c.runs[p.Run]
	c.mu.Unlock()
	if driven { // its own loop repeats its stop
		return
	}
	now, e := c.now(), &c.endedRuns
	e.mu.Lock()
	er := e.runs[p.Run]
	if er == nil {
		e.mu.Unlock()
		if c.lookUp(p.Run) {
			c.onPresence(m) // now known (once: it is in runs)
		}
		return
	}
	if now.Sub(er.at) < endedGrace ||
		(!er.told.IsZero() && now.Sub(er.told) < StopRepeat && !now.Before(er.told)) {
		e.mu.Unlock()
		return
	}
	first := er.told.IsZero()
	er.told = now
	controller := er.controller
	e.mu.Unlock()
	if first {
		c.log.Warn("an agent still runs a run that has ended; telling it to stop", "run", p.Run, "agent", presenceID(m.Subject))
	}
	b, _ := json.Marshal(Control{Kind: ControlStop, Run: p.Run, Controller: controller, Reason: endedReason})
	_ = c.conn.Publish(RunControlSubject(p.Run), b) // a lost one is sent again on a later beat
}
