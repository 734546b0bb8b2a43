package engine

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// BenchmarkCollectorByName measures the collector's per-second work for the per-name rows of a
// plan with metrics.MaxNames request names, every name's histograms filled in every shard: one
// op is one second's Sample.ByName (counts, rps, three cumulative percentiles, checks and the
// four phases of each name).
func BenchmarkCollectorByName(b *testing.B) {
	var reqs []string
	for i := range metrics.MaxNames {
		reqs = append(reqs, fmt.Sprintf(`{"name":"r%d","url":"http://127.0.0.1:1/%d","checks":[{"type":"status","op":"eq","value":200}]}`, i, i))
	}
	p := mustPlan(b, `{"name":"t","requests":[`+strings.Join(reqs, ",")+`],"load":{"vus":1,"duration":"1s"}}`)
	e, err := newEngine(p, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(e.names.Names) != metrics.MaxNames {
		b.Fatalf("%d names", len(e.names.Names))
	}
	for shard := range 4 {
		for j := range e.names.Names {
			blk := e.names.Block(shard, j)
			for k := range 200 { // a spread of values over several octaves
				us := int64(100 + k*k*50)
				blk.Record(metrics.Outcome{Status: 200, LatencyUs: us})
				blk.Phases().Record(k == 0, false, us/10, 0, us/2, us/4)
			}
		}
	}
	c := newCollector(e)
	d := metrics.NewCounts()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testutil.ProcessCPU()
	for range b.N {
		var s metrics.Sample
		d.Requests = 1
		for j := range c.e.names.Names { // every name busy: nothing cached
			blk := e.names.Block(0, j)
			blk.Record(metrics.Outcome{Status: 200, LatencyUs: 500})
		}
		c.nameStats().readChecks(c.e) // as tick does first
		c.sampleByName(&s, d, 1)
		if len(s.ByName) != metrics.MaxNames || s.ByName["r7"].P99 == 0 {
			b.Fatalf("rows %d, r7 %+v", len(s.ByName), s.ByName["r7"])
		}
	}
	// one op a second: its CPU time (ns) / 1 s, in % of a core
	b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N)/1e7, "cpu-%-per-s")
}

// TestChecksNeverAheadOfRequests: each second's cumulative checks of a one-check plan never pass
// the requests counted so far (a request is counted before its checks; the collector reads the
// checks before the requests).
func TestChecksNeverAheadOfRequests(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"name":"a","url":%q,
		"checks":[{"type":"status","op":"eq","value":200}]}],
		"load":{"executor":"constant-vus","vus":16,"duration":"3s"},"http":{"timeout":"2s"}}`, tg.URL))
	sum, samples := run(t, p)
	var requests int64
	for _, s := range samples {
		requests += s.Requests
		n := s.ByName["a"]
		if checks := n.ChecksPassed + n.ChecksFailed; checks > requests {
			t.Errorf("second %d: %d checks of %d requests", s.ElapsedS, checks, requests)
		}
	}
	if len(sum.Checks) != 1 || sum.Checks[0].Passes != sum.Requests || sum.Requests < 100 {
		t.Errorf("%d requests, checks %+v", sum.Requests, sum.Checks)
	}
}
