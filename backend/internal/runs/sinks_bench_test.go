package runs_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

// BenchmarkSinksPerSecond is the server's own work for one second of a run, as `volley serve`
// does it beside the engine: the StoreSink's transaction on a SQLite file and the HubSink's
// message, delivered to 5 websocket viewers (each iteration waits until all 5 have it).
func BenchmarkSinksPerSecond(b *testing.B) {
	const viewers = 5
	ctx := context.Background()
	st, err := store.Open(filepath.Join(b.TempDir(), "volley.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	p, err := st.CreatePlan(ctx, "bench", []byte(planJSON("http://127.0.0.1:9/", 100, "10s")))
	if err != nil {
		b.Fatal(err)
	}
	run, err := st.CreateRun(ctx, p.ID, p.Name, p.Spec, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := hub.New(nil)
	storeSink := &runs.StoreSink{W: st, Log: log}
	hubSink := &runs.HubSink{Hub: h, Log: log}
	storeSink.Start(run.ID, run.StartedAt)
	hubSink.Start(run.ID, run.StartedAt) // opens the topic the viewers join
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = h.Serve(w, r, run.ID, nil)
	}))
	defer srv.Close()
	got := make(chan struct{}, viewers*64)
	for range viewers {
		c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
				got <- struct{}{}
			}
		}()
	}

	// A second of a 100-VU run against nginx: ~140 000 latencies, one status code, no errors.
	hist, enc := benchSecond(b)
	s := metrics.Sample{T: time.Now().UnixMilli(), IntervalS: 1, Requests: 140_000, RPS: 140_000, Successes: 140_000,
		Latency: metrics.LatencyOf(hist, 140_000*700), ActiveVUs: 100, BytesIn: 119_000_000, BytesOut: 9_900_000,
		StatusCodes: map[string]int64{"200": 140_000}, ErrorKinds: map[string]int64{},
		Client: metrics.ClientSample{CPUPercent: 97.5, RSSBytes: 45 << 20, Goroutines: 108, OpenConns: 100}, Hist: enc,
		P95SoFarMs: metrics.Percentile(hist, 95)} // as the collector hands it over
	b.ReportAllocs()
	sec := 0
	for b.Loop() {
		sec++
		s.ElapsedS = sec
		smp := runner.NewSample(s)
		storeSink.Sample(run.ID, smp)
		hubSink.Sample(run.ID, smp)
		for range viewers {
			<-got
		}
	}
	b.StopTimer()
	h.Close(run.ID, []byte(`{"type":"summary"}`))
}

// BenchmarkRunP95 is the once-a-second work of the run's p95 so far, the two ways: as StoreSink
// did it (decode the second's histogram, merge it into the run's) and as the engine's collector
// does it now (load its cumulative counts into a reused histogram: metrics.Sample.P95SoFarMs).
// A second of ~140 000 latencies, as in BenchmarkSinksPerSecond.
func BenchmarkRunP95(b *testing.B) {
	hist, enc := benchSecond(b)
	counts := hist.Export().Counts
	b.Run("decode-merge", func(b *testing.B) {
		merged := metrics.NewHist()
		b.ReportAllocs()
		for b.Loop() {
			h, err := metrics.DecodeHist(enc)
			if err != nil {
				b.Fatal(err)
			}
			merged.Merge(h)
			_ = metrics.Percentile(merged, 95)
		}
	})
	b.Run("cumulative-counts", func(b *testing.B) {
		soFar := metrics.NewHist()
		b.ReportAllocs()
		for b.Loop() {
			metrics.FillHist(soFar, counts)
			_ = metrics.Percentile(soFar, 95)
		}
	})
}

// benchSecond is the latencies of one busy second (~140 000, 0.3–1.8 ms) and their encoding.
func benchSecond(b *testing.B) (*hdr.Histogram, string) {
	hist := metrics.NewHist()
	for i := range 140_000 {
		_ = hist.RecordValue(int64(300 + i%1500))
	}
	enc, err := metrics.EncodeHist(hist)
	if err != nil {
		b.Fatal(err)
	}
	return hist, enc
}
