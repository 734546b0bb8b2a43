package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// Live control of a run over agents (docs/scale-out.md, "Live control over the bus"): the
// coordinator asks each of the run's agents still running on its own ChangeSubject (request-reply,
// ControlTimeout each, all at once), each agent's engine applies its segment's share of the
// run-wide value (engine.SetVUs, SetRate), and the coordinator records the change once — one
// metrics.RunEvent in the merged second it happened in and in the summary's events; the agents'
// own copies of it stay in their own seconds (RunHooks.OnAgentSecond) only.

// ControlTimeout bounds each agent's answer to a change (an engine waits up to 1 s for a run that
// is starting to have launched its VUs).
const ControlTimeout = 5 * time.Second

// Change is a live change of a run over agents: exactly one of VUs (closed models: hold that many
// VUs) and Rate (open models: iterations per the plan's time_unit), each the whole run's figure;
// By names who asks (metrics.RunEvent.By).
type Change struct {
	VUs  *int
	Rate *float64
	By   string
}

// ControlError is a change that an agent of the run did not apply: it refused (Reason is its
// sentence), did not answer within ControlTimeout, or is not connected. Applied names the agents
// that did apply it: when there are some, the run's load changed on them and the change is
// recorded (the caller gets the event with the error). When none did, Unwrap gives
// engine.ErrNotRunning, engine.ErrNotControllable or engine.ErrTooManyChanges when that is the
// agent's reason; a change some agents applied unwraps to nothing (it is not "not running").
//
// Local says Agent is this server's in-process agent (a single-machine run, localagent; set by
// whoever asked it): Error then speaks of the local engine, not of an agent as if it were a
// remote machine.
type ControlError struct {
	Agent   string
	Reason  string
	Applied []string
	Local   bool
	err     error
}

func (e *ControlError) Error() string {
	if e.Local { // the reason without the agent's own "agent ID: " (ChangeReply)
		reason, _ := strings.CutPrefix(e.Reason, "agent "+e.Agent+": ")
		return "the local engine did not apply the change: " + reason
	}
	msg := fmt.Sprintf("agent %q did not apply the change: %s", e.Agent, e.Reason)
	if len(e.Applied) > 0 {
		msg += fmt.Sprintf(" (applied by %s: the run's load changed on those agents)", strings.Join(e.Applied, ", "))
	}
	return msg
}

func (e *ControlError) Unwrap() error { return e.err }

// ChangeReply is an agent's answer to a change its engine made (err nil: OK, from the value
// before) or refused (err from engine.SetVUs or SetRate), naming the agent id.
func ChangeReply(id string, from float64, err error) ControlReply {
	if err == nil {
		return ControlReply{OK: true, From: from}
	}
	r := ControlReply{Error: fmt.Sprintf("agent %s: %v", id, err)}
	var ve *plan.ValidationError
	switch {
	case errors.As(err, &ve):
		r.Code, r.Fields = CodeInvalid, ve.Fields
	case errors.Is(err, engine.ErrNotRunning):
		r.Code = CodeNotRunning
	case errors.Is(err, engine.ErrNotControllable):
		r.Code = CodeNotControllable
	case errors.Is(err, engine.ErrTooManyChanges):
		r.Code = CodeTooManyChanges
	}
	return r
}

// codeErr is the engine error a reply's code stands for (nil: none).
func codeErr(code string) error {
	switch code {
	case CodeNotRunning:
		return engine.ErrNotRunning
	case CodeNotControllable:
		return engine.ErrNotControllable
	case CodeTooManyChanges:
		return engine.ErrTooManyChanges
	}
	return nil
}

// Control changes run runID's load on every agent still running it, from now to the run's end,
// and returns the change as recorded: Kind "vus" or "rate", To the value asked, From the first
// agent's (in part order) value before it, T and ElapsedS the controller's clock when it was asked
// (since the run's start_at), By ch.By. Changes of one run are made one at a time. Errors: an
// error wrapping engine.ErrNotRunning when the run is not running over agents here (not started,
// ended, or stopping); engine.ErrTooManyChanges after engine.MaxRunEvents changes; when no agent
// applied it, a *plan.ValidationError (an agent's, naming "vus" or "rate") or a *ControlError
// naming the first agent in part order that did not (wrapping its engine error); when some
// agents applied it and others did not, the recorded event and a *ControlError naming both.
func (c *Coordinator) Control(ctx context.Context, runID int64, ch Change) (metrics.RunEvent, error) {
	if (ch.VUs == nil) == (ch.Rate == nil) {
		return metrics.RunEvent{}, errors.New("cluster: a change sets exactly one of VUs and Rate")
	}
	c.mu.Lock()
	r := c.runs[runID]
	c.mu.Unlock()
	if r == nil {
		return metrics.RunEvent{}, fmt.Errorf("cluster: run %d is not running over agents here: %w", runID, engine.ErrNotRunning)
	}
	return r.change(ctx, ch)
}

// live is a run's state that live control (another goroutine than the loop's) reads: which agents
// are out (lost or finished), whether the run is stopping, and the channel by which a recorded
// change reaches the loop.
type live struct {
	ctlMu   sync.Mutex // one change at a time; guards changes
	changes int        // changes recorded

	mu     sync.Mutex
	out    []bool // agent i lost or finished (no longer asked)
	ending bool   // stop broadcast

	events chan metrics.RunEvent // recorded changes, to the loop
	done   chan struct{}         // closed when the run's loop has returned
}

// markOut says agent i is no longer asked to change (the loop: lost or finished).
func (r *run) markOut(i int) {
	r.live.mu.Lock()
	r.live.out[i] = true
	r.live.mu.Unlock()
}

// change asks the run's agents still running to make ch (Coordinator.Control).
func (r *run) change(ctx context.Context, ch Change) (metrics.RunEvent, error) {
	l := &r.live
	l.ctlMu.Lock()
	defer l.ctlMu.Unlock()
	l.mu.Lock()
	ending := l.ending
	var ask []int
	for i := range r.ids {
		if !l.out[i] {
			ask = append(ask, i)
		}
	}
	l.mu.Unlock()
	if ending || len(ask) == 0 {
		return metrics.RunEvent{}, fmt.Errorf("cluster: run %d is ending: %w", r.spec.Run, engine.ErrNotRunning)
	}
	if l.changes >= engine.MaxRunEvents {
		return metrics.RunEvent{}, engine.ErrTooManyChanges
	}
	m := Control{Run: r.spec.Run, Controller: r.spec.Controller, VUs: ch.VUs, Rate: ch.Rate, By: ch.By}
	ev := metrics.RunEvent{Kind: "vus", By: ch.By}
	if ch.VUs != nil {
		m.Kind, ev.To = ControlSetVUs, float64(*ch.VUs)
		r.merger.RaiseVUs(*ch.VUs) // before any agent holds them: its seconds may show them
	} else {
		m.Kind, ev.Kind, ev.To = ControlSetRate, "rate", *ch.Rate
	}
	body, err := json.Marshal(m)
	if err != nil {
		return metrics.RunEvent{}, fmt.Errorf("cluster: %w", err) // a rate that is not a number
	}
	now := r.c.now()
	ev.T = now.UnixMilli()
	ev.ElapsedS = math.Round(max(0, now.Sub(r.startAt).Seconds())*1000) / 1000

	replies := make([]ControlReply, len(r.ids))
	var wg sync.WaitGroup
	for _, i := range ask {
		wg.Go(func() { replies[i] = r.ask(ctx, r.ids[i], body) })
	}
	wg.Wait()

	var applied []string
	first := -1 // the first agent in part order that did not apply it
	for _, i := range ask {
		if replies[i].OK {
			// Rounded to 3 decimals; a value that then is not finite (an agent's 1e306) cannot be
			// stored (JSON has no Inf): left out.
			if from := math.Round(replies[i].From*1000) / 1000; len(applied) == 0 && !math.IsNaN(from) && !math.IsInf(from, 0) {
				ev.From = from
			}
			applied = append(applied, r.ids[i])
		} else if first < 0 {
			first = i
		}
	}
	if len(applied) == 0 {
		no := replies[first]
		if no.Code == CodeInvalid && len(no.Fields) > 0 {
			return metrics.RunEvent{}, &plan.ValidationError{Fields: no.Fields}
		}
		return metrics.RunEvent{}, &ControlError{Agent: r.ids[first], Reason: no.Error, err: codeErr(no.Code)}
	}
	l.changes++
	select {
	case l.events <- ev:
	case <-l.done: // the run ended meanwhile: its summary is made
	}
	r.log.Info("load changed on the agents", "kind", ev.Kind, "from", ev.From, "to", ev.To, "by", ev.By, "applied", applied)
	if first >= 0 {
		no := replies[first]
		return ev, &ControlError{Agent: r.ids[first], Reason: no.Error, Applied: applied}
	}
	return ev, nil
}

// ask sends a change to agent id and returns its answer; no answer is a refusal saying why.
func (r *run) ask(ctx context.Context, id string, body []byte) (rep ControlReply) {
	defer func() {
		if p := recover(); p != nil {
			rep = ControlReply{Error: fmt.Sprintf("asking it failed: %v", p)}
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, r.c.ctlTimeout)
	defer cancel()
	msg, err := r.c.conn.RequestWithContext(cctx, ChangeSubject(id), body)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return ControlReply{Error: "it is not connected"}
	case err != nil && ctx.Err() != nil:
		return ControlReply{Error: "the change was cancelled: " + ctx.Err().Error()}
	case err != nil:
		return ControlReply{Error: fmt.Sprintf("it did not answer within %s: %v", r.c.ctlTimeout, err)}
	}
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return ControlReply{Error: "its answer is not valid JSON: " + err.Error()}
	}
	if !rep.OK {
		rep.Error = clip(cmp.Or(rep.Error, "no reason given"))
	}
	for k, v := range rep.Fields { // an engine's field errors name "vus" or "rate"
		if k == "vus" || k == "rate" {
			rep.Fields[k] = clip(v)
		} else {
			delete(rep.Fields, k)
		}
	}
	return rep
}

// maxReason bounds an agent's sentence in a change's answer: a hostile agent's (up to
// bus.MaxPayload, 8 MiB) would reach the API's answer and the log.
const maxReason = 1000

// clip is s cut to maxReason bytes (at a character's start), "…" marking the cut.
func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "") + "…"
}

// eventSecond is the second a change belongs to: the one its ElapsedS falls in ((k−1, k] is k,
// as an engine's collector puts it; 0 is second 1).
func eventSecond(ev metrics.RunEvent) int {
	return max(1, int(math.Ceil(ev.ElapsedS)))
}

// secondEvents returns the recorded changes not yet in a merged second that belong to second s
// or an earlier one (a change recorded after its second was merged goes into the next).
func (r *run) secondEvents(s int) []metrics.RunEvent {
	var out []metrics.RunEvent
	for r.evNext < len(r.events) && eventSecond(r.events[r.evNext]) <= s {
		out = append(out, r.events[r.evNext])
		r.evNext++
	}
	return out
}
