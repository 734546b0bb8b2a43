package monitor

import (
	"context"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// BenchmarkScrapeNode is one scrape of a node monitor: the HTTP exchange over loopback, reading
// and parsing a real node_exporter 1.5 answer (testdata/node_exporter.txt, 57 KB, 1067 lines, 2
// cores) and deriving the preset's values. A run's monitors cost this once a second each
// (docs/benchmarks.md: the share of the generator's CPU).
func BenchmarkScrapeNode(b *testing.B) {
	body, err := os.ReadFile("testdata/node_exporter.txt")
	if err != nil {
		b.Fatal(err)
	}
	tg := testutil.NewTarget(b, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) })
	s := newSet([]plan.Monitor{spec("node", tg.URL)}, nil)
	m := s.mons[0]
	m.once(context.Background())
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	// CPU time (user + system, the whole process: the loopback server's share included) per
	// scrape: on a busy machine the wall time per op is mostly waiting.
	cpu := func() float64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
	}
	c0 := cpu()
	for b.Loop() {
		m.once(context.Background())
	}
	b.ReportMetric((cpu()-c0)/float64(b.N), "cpu-µs/op")
	if m.err != "" || len(m.vals) < 5 {
		b.Fatalf("error %q, values %v", m.err, m.vals)
	}
}
