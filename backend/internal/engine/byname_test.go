package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
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
	cpu := processCPU()
	for range b.N {
		var s metrics.Sample
		d.Requests = 1
		for j := range c.e.names.Names { // every name busy: nothing cached
			blk := e.names.Block(0, j)
			blk.Record(metrics.Outcome{Status: 200, LatencyUs: 500})
		}
		c.sampleByName(&s, d, 1)
		if len(s.ByName) != metrics.MaxNames || s.ByName["r7"].P99 == 0 {
			b.Fatalf("rows %d, r7 %+v", len(s.ByName), s.ByName["r7"])
		}
	}
	// one op a second: its CPU time (ns) / 1 s, in % of a core
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e7, "cpu-%-per-s")
}
