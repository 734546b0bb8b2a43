package api

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// SampleWriter is the storage a StoreSink writes to (implemented by *store.Store).
type SampleWriter interface {
	AppendSample(ctx context.Context, runID int64, smp store.Sample, p store.Progress) error
	FinishRun(ctx context.Context, runID int64, status string, endedAt time.Time, p store.Progress, summary, hist []byte, errMsg string) error
}

// StoreSink writes every second of a run as it happens (one transaction per second, so a crash
// loses at most the current second) and the summary at the end. It keeps the run's merged
// histogram so the run's list columns (p95 so far) stay exact while it runs.
type StoreSink struct {
	W   SampleWriter
	Log *slog.Logger

	runID    int64
	merged   *hdr.Histogram
	requests int64
	errors   int64
}

// Sample implements runner.Sink: one transaction for the second's row and the run's totals.
// The sample's JSON is the runner's shared encoding (the live stream sends the same bytes).
func (k *StoreSink) Sample(runID int64, s *runner.Sample) {
	if k.runID != runID || k.merged == nil {
		k.runID, k.merged, k.requests, k.errors = runID, metrics.NewHist(), 0, 0
	}
	k.requests += s.Requests
	k.errors += s.Errors
	if h, err := metrics.DecodeHist(s.Hist); err == nil {
		k.merged.Merge(h)
	}
	data, err := s.JSON()
	if err != nil {
		k.Log.Error("encode sample", "run", runID, "err", err)
		return
	}
	elapsed := float64(s.ElapsedS-1) + s.IntervalS
	p := store.Progress{DurationS: elapsed, Requests: k.requests, P95Ms: metrics.Percentile(k.merged, 95)}
	if elapsed > 0 {
		p.RPS = float64(k.requests) / elapsed
	}
	if k.requests > 0 {
		p.ErrorRate = float64(k.errors) / float64(k.requests)
	}
	smp := store.Sample{Second: s.ElapsedS, TMs: s.T, Data: data}
	if s.Hist != "" {
		smp.Hist = []byte(s.Hist)
	}
	if err := k.W.AppendSample(context.Background(), runID, smp, p); err != nil {
		k.Log.Error("store sample", "run", runID, "second", s.ElapsedS, "err", err)
	}
}

// Finish implements runner.Sink.
func (k *StoreSink) Finish(runID int64, status string, _, ended time.Time, sum *metrics.Summary, runErr error) {
	var data, hist []byte
	var p store.Progress
	if sum != nil {
		data, _ = json.Marshal(sum)
		hist = []byte(sum.Hist)
		p = store.Progress{DurationS: sum.DurationS, Requests: sum.Requests, RPS: sum.RPS, P95Ms: sum.Latency.P95, ErrorRate: sum.ErrorRate,
			ThresholdsOK: thresholdsOK(sum)}
	}
	msg := ""
	if runErr != nil {
		msg = runErr.Error()
	}
	if err := k.W.FinishRun(context.Background(), runID, status, ended, p, data, hist, msg); err != nil {
		k.Log.Error("store summary", "run", runID, "err", err)
	}
	k.merged = nil
}

// HubSink publishes every second and the summary to the run's live topic, encoded once.
type HubSink struct {
	Hub *hub.Hub
	Log *slog.Logger
}

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

// Finish implements runner.Sink.
func (k *HubSink) Finish(runID int64, status string, started, ended time.Time, sum *metrics.Summary, runErr error) {
	r := runJSON{ID: runID, Status: status, StartedAt: started.UTC(), EndedAt: ptr(ended.UTC())}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	var data []byte
	if sum != nil {
		data, _ = json.Marshal(sum)
		r.DurationS, r.Requests, r.RPS, r.P95Ms, r.ErrorRate = sum.DurationS, sum.Requests, sum.RPS, sum.Latency.P95, sum.ErrorRate
		r.ThresholdsOK = thresholdsOK(sum)
	}
	k.Hub.Close(runID, summaryMessage(data, r))
}

func ptr[T any](v T) *T { return &v }

// thresholdsOK is nil for a run without thresholds.
func thresholdsOK(sum *metrics.Summary) *bool {
	if len(sum.Thresholds) == 0 {
		return nil
	}
	return ptr(sum.ThresholdsOK())
}

// Live stream messages: {"type":"sample","data":…} and {"type":"summary","data":…,"run":…}.
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
