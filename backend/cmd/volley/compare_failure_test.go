package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/store"
)

// failKind is how a stored run's target behaves.
type failKind int

const (
	healthy failKind = iota
	hangs            // every request waits longer than the run: nothing completes
	refuses          // every request fails at once (connection refused)
)

// seedFailureDB stores one 14 s run per kind, as the engine would: 50 active VUs every second.
func seedFailureDB(t *testing.T, kinds ...failKind) (string, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "volley.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	spec := []byte(`{"name":"cli","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":50,"duration":"14s"}}`)
	p, err := st.CreatePlan(ctx, "cli", spec)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, k := range kinds {
		started := time.Now().Add(time.Duration(i-10) * time.Minute)
		r, err := st.CreateRun(ctx, p.ID, p.Name, spec, started)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(i)+1, 7))
		var total, errs int64
		for sec := 1; sec <= 14; sec++ {
			h := metrics.NewHist()
			smp := metrics.Sample{ElapsedS: sec, IntervalS: 1, ActiveVUs: 50, Client: metrics.ClientSample{CPUPercent: 30, RSSBytes: 30 << 20}}
			switch k {
			case healthy:
				for range 300 {
					_ = h.RecordValue(int64(2000 * math.Exp(0.4*rng.NormFloat64())))
				}
				smp.RPS = 30000 * (1 + 0.03*rng.NormFloat64())
				smp.Requests = int64(smp.RPS)
				smp.Successes = smp.Requests
			case refuses:
				smp.RPS = 38000 * (1 + 0.03*rng.NormFloat64())
				smp.Requests = int64(smp.RPS)
				smp.Errors = smp.Requests
				smp.ErrorKinds = map[string]int64{"connect": smp.Requests}
			}
			total, errs = total+smp.Requests, errs+smp.Errors
			smp.Latency = metrics.LatencyOf(h, 0)
			data, _ := json.Marshal(smp)
			var enc string
			if h.TotalCount() > 0 {
				enc, _ = metrics.EncodeHist(h)
			}
			if err := st.AppendSample(ctx, r.ID, store.Sample{Second: sec, TMs: int64(sec), Data: data, Hist: []byte(enc)}, store.Progress{}); err != nil {
				t.Fatal(err)
			}
		}
		sum := metrics.Summary{Requests: total, Successes: total - errs, Errors: errs, RPS: float64(total) / 14, DurationS: 14, Executor: "constant-vus"}
		if total > 0 {
			sum.ErrorRate = float64(errs) / float64(total)
		}
		b, _ := json.Marshal(sum)
		if err := st.FinishRun(ctx, r.ID, store.StatusFinished, started.Add(14*time.Second), store.Progress{}, b, nil, ""); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return path, ids
}

// The CI gate fails (exit 1) when the target stops answering or refuses every connection, prints
// unknown latencies as "—", and never proposes a longer run where length cannot decide.
func TestCompareFailingTargetExitsOne(t *testing.T) {
	db, ids := seedFailureDB(t, healthy, hangs, refuses)
	for _, c := range []struct {
		name string
		run  int64
	}{{"hangs", ids[1]}, {"refuses", ids[2]}} {
		out, ok := checkCompare(t, compareCase{c.name, []string{fmt.Sprint(ids[0]), fmt.Sprint(c.run), "--db", db}, 1,
			[]string{"REGRESSION", fmt.Sprintf("warning: #%d had no successful response", c.run)}, ""})
		if !ok {
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case "tps":
				if !strings.Contains(line, "REGRESSION") || !strings.Contains(line, "-100.0%") {
					t.Errorf("%s: tps line %q, want a −100 %% regression", c.name, line)
				}
			case "p50", "p90", "p95", "p99", "max":
				if len(f) < 8 || f[4] != "—" || f[5] != "—" || f[6] != "—" || f[7] != "none" {
					t.Errorf("%s: latency line %q, want — — — none", c.name, line)
				}
			}
			if strings.Contains(line, "improvement") || strings.Contains(line, "run both runs for") {
				t.Errorf("%s: %q", c.name, line)
			}
		}
	}
}
