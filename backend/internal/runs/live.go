package runs

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// Run is a run as the API lists it (docs/api.md, "Runs") and as the live stream's summary
// message carries it.
type Run struct {
	ID        int64      `json:"id"`
	PlanID    int64      `json:"plan_id"`
	PlanName  string     `json:"plan_name"`
	Status    string     `json:"status"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	DurationS float64    `json:"duration_s"`
	Requests  int64      `json:"requests"`
	RPS       float64    `json:"rps"`
	P95Ms     float64    `json:"p95_ms"`
	ErrorRate float64    `json:"error_rate"`
	Error     string     `json:"error"`
	// ThresholdsOK: whether every threshold passed; null when the plan has none or the run has
	// not ended.
	ThresholdsOK *bool `json:"thresholds_ok"`
	// Outcome is how an ended run went (metrics.OutcomeOf): "passed", "finished_with_errors",
	// "failed" or "stopped" (stopped before any request completed); "" while it runs.
	Outcome string  `json:"outcome"`
	Notes   string  `json:"notes"`
	Tags    TagList `json:"tags"`
	// ServerCPUMax is the target server's CPU % at its busiest (ServerCPUMax); null when the run
	// had no process or node monitor with a value, or has not ended.
	ServerCPUMax *float64 `json:"server_cpu_max"`
	// Agents is how many agents generated the run's load (0: this server's engine); Degraded:
	// an agent was lost, so some seconds miss its share (metrics.Summary.Agents, Degraded). Both
	// are set when the run ends.
	Agents   int  `json:"agents"`
	Degraded bool `json:"degraded"`
}

// RunOf is the stored run r as Run.
func RunOf(r *store.Run) Run {
	return Run{ID: r.ID, PlanID: r.PlanID, PlanName: r.PlanName, Status: r.Status, StartedAt: r.StartedAt,
		EndedAt: r.EndedAt, DurationS: r.DurationS, Requests: r.Requests, RPS: r.RPS, P95Ms: r.P95Ms,
		ErrorRate: r.ErrorRate, Error: r.Error, ThresholdsOK: r.ThresholdsOK, Notes: r.Notes, Tags: r.Tags,
		ServerCPUMax: r.ServerCPUMax, Agents: r.Agents, Degraded: r.Degraded,
		Outcome: metrics.OutcomeOf(r.Status, r.Requests, r.ErrorRate, r.ThresholdsOK)}
}

// TagList is a run's tags; it is written as [] (never null) when there are none.
type TagList []string

// MarshalJSON writes nil as [].
func (t TagList) MarshalJSON() ([]byte, error) {
	if t == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(t))
}

// Topics is the live hub as HubSink uses it (implemented by *hub.Hub).
type Topics interface {
	Open(runID int64)
	Publish(runID int64, msg []byte)
	Close(runID int64, final []byte)
}

// HubSink publishes every second and the summary to the run's live topic, encoded once. The
// topic's whole life is here: opened by Start, closed by Finish with the summary message.
type HubSink struct {
	Hub Topics
	Log *slog.Logger
	// Runs, when set, is where Finish reads the ended run's plan (id and name), start, notes and
	// tags for the summary message; the run is stored by then (StoreSink comes first). Without it, or
	// when the read fails, those fields stay zero (the start: the runner's).
	Runs interface {
		GetRun(ctx context.Context, id int64) (*store.Run, error)
	}
}

// Start implements runner.Sink: the run's topic opens before its id reaches any client.
func (k *HubSink) Start(runID int64, _ time.Time) { k.Hub.Open(runID) }

// Sample implements runner.Sink: the message wraps the runner's shared encoding of the sample,
// and the hub sends that one message to every viewer.
func (k *HubSink) Sample(runID int64, s *runner.Sample) {
	msg, err := sampleMessage(s.JSON())
	if err != nil {
		k.Log.Error("encode sample", "run", runID, "err", err)
		return
	}
	k.Hub.Publish(runID, msg)
}

// Failing implements runner.FailNotifier: viewers are told at once that the run is being failed
// and why ({"type":"error"}); the summary, with status "failed", follows when the run has ended.
func (k *HubSink) Failing(runID int64, err error) {
	k.Hub.Publish(runID, errorMessage(err))
}

// Finish implements runner.Sink: the summary message ends the topic.
func (k *HubSink) Finish(runID int64, status string, started, ended time.Time, sum *metrics.Summary, runErr error) {
	r := Run{ID: runID, Status: status, StartedAt: started.UTC(), EndedAt: ptr(ended.UTC()), Error: endMessage(status, sum, runErr)}
	if k.Runs != nil {
		if st, err := k.Runs.GetRun(context.Background(), runID); err == nil {
			r.PlanID, r.PlanName, r.Notes, r.Tags = st.PlanID, st.PlanName, st.Notes, st.Tags
			r.StartedAt = st.StartedAt // a resumed run's start, not the instant it was taken up again
		} else {
			k.Log.Error("summary message: read the run's plan", "run", runID, "err", err)
		}
	}
	var data []byte
	if sum != nil {
		data, _ = json.Marshal(sum)
		r.DurationS, r.Requests, r.RPS, r.P95Ms, r.ErrorRate = sum.DurationS, sum.Requests, sum.RPS, sum.Latency.P95, sum.ErrorRate
		r.ThresholdsOK, r.ServerCPUMax = thresholdsOK(sum), ServerCPUMax(sum)
	}
	r.Outcome = metrics.OutcomeOf(r.Status, r.Requests, r.ErrorRate, r.ThresholdsOK)
	k.Hub.Close(runID, summaryMessage(data, r))
}

// endMessage is the error stored with a run that ended with status: runErr's text, or for a run
// that ended without a successful response, why (metrics.Summary.NoSuccessMessage); "" otherwise
// — also for a run stopped before any request (metrics.OutcomeStopped: nothing failed).
func endMessage(status string, sum *metrics.Summary, runErr error) string {
	switch {
	case runErr != nil:
		return runErr.Error()
	case sum != nil:
		return sum.EndMessage(status)
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

// thresholdsOK is nil for a run without thresholds.
func thresholdsOK(sum *metrics.Summary) *bool {
	if len(sum.Thresholds) == 0 {
		return nil
	}
	return ptr(sum.ThresholdsOK())
}

// Live stream messages: {"type":"sample","data":…}, {"type":"error","data":{"error":…}} (the run
// is being failed, see HubSink.Failing) and {"type":"summary","data":…,"run":…}.
type liveMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	Run  any             `json:"run,omitempty"`
}

// sampleMessage wraps a sample's JSON (compact, as json.Marshal writes it) in the live envelope:
// the bytes json.Marshal(liveMessage{Type: "sample", Data: data}) would give, without decoding
// and re-encoding the sample.
func sampleMessage(data []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	const head, tail = `{"type":"sample","data":`, `}`
	msg := make([]byte, 0, len(head)+len(data)+len(tail))
	msg = append(msg, head...)
	msg = append(msg, data...)
	return append(msg, tail...), nil
}

// errorMessage is {"type":"error","data":{"error":"…"}}.
func errorMessage(err error) []byte {
	data, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{err.Error()})
	b, _ := json.Marshal(liveMessage{Type: "error", Data: data})
	return b
}

// summaryMessage is the stream's last message. A stored summary that is not valid JSON (a damaged
// row) is sent as null rather than making the whole message empty.
func summaryMessage(summary []byte, run any) []byte {
	if len(summary) == 0 || !json.Valid(summary) {
		summary = []byte("null")
	}
	b, err := json.Marshal(liveMessage{Type: "summary", Data: summary, Run: run})
	if err != nil {
		b, _ = json.Marshal(liveMessage{Type: "summary", Data: json.RawMessage("null")})
	}
	return b
}
