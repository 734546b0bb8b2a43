package api_test

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

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
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
	h.Open(run.ID)
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
	hist := metrics.NewHist()
	for i := range 140_000 {
		_ = hist.RecordValue(int64(300 + i%1500))
	}
	enc, err := metrics.EncodeHist(hist)
	if err != nil {
		b.Fatal(err)
	}
	s := metrics.Sample{T: time.Now().UnixMilli(), IntervalS: 1, Requests: 140_000, RPS: 140_000, Successes: 140_000,
		Latency: metrics.LatencyOf(hist, 140_000*700), ActiveVUs: 100, BytesIn: 119_000_000, BytesOut: 9_900_000,
		StatusCodes: map[string]int64{"200": 140_000}, ErrorKinds: map[string]int64{},
		Client: metrics.ClientSample{CPUPercent: 97.5, RSSBytes: 45 << 20, Goroutines: 108, OpenConns: 100}, Hist: enc}
	storeSink := &api.StoreSink{W: st, Log: log}
	hubSink := &api.HubSink{Hub: h, Log: log}
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
