package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/volley-load/volley/backend/internal/compare"
	"github.com/volley-load/volley/backend/internal/metrics"
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
	return seedRuns(t, 50, 14, len(kinds), 7, func(i, _ int, rng *rand.Rand, smp *metrics.Sample, h *hdr.Histogram) {
		smp.IntervalS, smp.ActiveVUs = 1, 50
		smp.Client = metrics.ClientSample{CPUPercent: 30, RSSBytes: 30 << 20}
		switch kinds[i] {
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
	})
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

// The effect's interval carries its unit on both bounds: "[-95.6%, +1949.6%]", not "[-95.6, +1949.6]".
func TestEffectTextIntervalHasUnit(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	v := compare.Value{Effect: f(0.12), CILow: f(-0.956), CIHigh: f(19.496)}
	if got, want := effectText(compare.Metric{EffectKind: "relative"}, v, 0.95), "effect +12.0%, 95% CI [-95.6%, +1949.6%]"; got != want {
		t.Errorf("relative: %q, want %q", got, want)
	}
	v = compare.Value{Effect: f(0.002), CILow: f(0.001), CIHigh: f(0.003)}
	if got, want := effectText(compare.Metric{EffectKind: "absolute"}, v, 0.95), "effect +0.2 pp, 95% CI [+0.1 pp, +0.3 pp]"; got != want {
		t.Errorf("absolute: %q, want %q", got, want)
	}
}
