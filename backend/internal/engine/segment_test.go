package engine

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	seg "github.com/volley-load/volley/backend/internal/segment"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// runSegments runs one plan on len(weights) engines at once, each with its segment of the
// weighted sequence (as agents would), and returns their summaries in part order.
func runSegments(t *testing.T, js string, weights ...int) []*metrics.Summary {
	t.Helper()
	s, err := seg.New(weights...)
	if err != nil {
		t.Fatal(err)
	}
	sums := make([]*metrics.Summary, len(weights))
	errs := make([]error, len(weights))
	var wg sync.WaitGroup
	for j := range weights {
		e, err := newEngine(mustPlan(t, js), Options{Segment: s.Segment(j)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { sums[j], errs[j] = e.Run(context.Background()) })
	}
	wg.Wait()
	for j, err := range errs {
		if err != nil {
			t.Fatalf("part %d: %v", j, err)
		}
	}
	return sums
}

// headerCounts counts, per value of one request header, the requests a target received.
type headerCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *headerCounts) handler(header string) http.HandlerFunc {
	s.n = map[string]int{}
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.n[r.Header.Get(header)]++
		s.mu.Unlock()
	}
}

// per-vu-iterations 10 VUs × 7 over three equal segments: the target counts exactly 70 requests,
// each of the run's VUs 1–10 exactly 7 times, from 4/3/3 VUs.
func TestSegmentsSplitPerVUIterations(t *testing.T) {
	var s headerCounts
	tg := testutil.NewTarget(t, s.handler("X-VU"))
	sums := runSegments(t, fmt.Sprintf(`{"name":"seg","requests":[{"url":%q,"headers":{"X-VU":"{{vu}}"}}],
		"load":{"executor":"per-vu-iterations","vus":10,"iterations":7},"http":{"timeout":"2s"}}`, tg.URL), 1, 1, 1)
	if tg.Requests() != 70 {
		t.Errorf("target counted %d requests, want 70", tg.Requests())
	}
	for v := 1; v <= 10; v++ {
		if n := s.n[fmt.Sprint(v)]; n != 7 {
			t.Errorf("VU %d sent %d requests, want 7 (all: %v)", v, n, s.n)
		}
	}
	want := []int64{28, 21, 21} // 4, 3 and 3 VUs × 7
	for j, sum := range sums {
		if sum.Requests != want[j] || sum.Errors != 0 {
			t.Errorf("part %d: %d requests (%d errors), want %d", j, sum.Requests, sum.Errors, want[j])
		}
	}
}

// shared-iterations 100 over weights 2:1:1: exactly 100 at the target, 50/25/25 by the parts.
func TestSegmentsSplitSharedIterations(t *testing.T) {
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	sums := runSegments(t, fmt.Sprintf(`{"name":"seg","requests":[{"url":%q}],
		"load":{"executor":"shared-iterations","vus":4,"iterations":100},"http":{"timeout":"2s"}}`, tg.URL), 2, 1, 1)
	if tg.Requests() != 100 {
		t.Errorf("target counted %d requests, want 100", tg.Requests())
	}
	for j, want := range []int64{50, 25, 25} {
		if sums[j].Requests != want {
			t.Errorf("part %d: %d requests, want %d", j, sums[j].Requests, want)
		}
	}
}

// constant-arrival-rate over weights 2:1:1: the parts together schedule exactly the single
// machine's iterations (sent + dropped), split 2:1:1 exactly, each planned at the whole run's due
// time — the union of the parts' schedules is the single-machine schedule. At 300/s the parts own
// iterations one by one; at 3 000/s in blocks of 2 (arrival.blockOf), 1 500/750/750 of 3 000.
func TestSegmentsSplitArrivalSchedule(t *testing.T) {
	for _, c := range []struct {
		rate int
		dur  string
		want []int64
	}{{300, "2s", []int64{300, 150, 150}}, {3000, "1s", []int64{1500, 750, 750}}} {
		tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
		sums := runSegments(t, fmt.Sprintf(`{"name":"seg","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":%d,"duration":%q,"pre_allocated_vus":8,"max_vus":40},
		"http":{"timeout":"2s"}}`, tg.URL, c.rate, c.dur), 2, 1, 1)
		var total int64
		for j, want := range c.want {
			got := sums[j].Requests + sums[j].DroppedIterations + sums[j].Interrupted
			if got != want {
				t.Errorf("%d/s part %d scheduled %d iterations (%d sent, %d dropped, %d interrupted), want %d",
					c.rate, j, got, sums[j].Requests, sums[j].DroppedIterations, sums[j].Interrupted, want)
			}
			total += got
		}
		if total != c.want[0]*2 {
			t.Errorf("%d/s: the parts scheduled %d iterations, the single machine's schedule has %d", c.rate, total, c.want[0]*2)
		}
		if sent := sums[0].Requests + sums[1].Requests + sums[2].Requests; tg.Requests() != sent {
			t.Errorf("%d/s: target counted %d, the parts sent %d", c.rate, tg.Requests(), sent)
		}
	}
}

// Per-VU CSV rows follow the run's VU numbers: ten VUs over three parts use each of ten rows once.
func TestSegmentsSplitDataRows(t *testing.T) {
	var s headerCounts
	tg := testutil.NewTarget(t, s.handler("X-User"))
	runSegments(t, fmt.Sprintf(`{"name":"seg","requests":[{"url":%q,"headers":{"X-User":"{{user}}"}}],
		"data":{"csv":"user\nu1\nu2\nu3\nu4\nu5\nu6\nu7\nu8\nu9\nu10\n","mode":"per-vu"},
		"load":{"executor":"per-vu-iterations","vus":10,"iterations":2},"http":{"timeout":"2s"}}`, tg.URL), 1, 1, 1)
	for i := 1; i <= 10; i++ {
		if n := s.n[fmt.Sprintf("u%d", i)]; n != 2 {
			t.Errorf("row u%d used %d times, want 2 (its one VU's two iterations; all: %v)", i, n, s.n)
		}
	}
}

// constant-vus 10 VUs over three parts: the run's VUs 1–10 all work, each on one part only (a VU
// of a profile executor works while the profile reaches its number in the whole run).
func TestSegmentsSplitConstantVUs(t *testing.T) {
	var h headerCounts
	tg := testutil.NewTarget(t, h.handler("X-VU"))
	sums := runSegments(t, fmt.Sprintf(`{"name":"seg","requests":[{"url":%q,"headers":{"X-VU":"{{vu}}"}}],
		"load":{"executor":"constant-vus","vus":10,"duration":"1s"},"http":{"timeout":"2s"}}`, tg.URL), 1, 1, 1)
	if len(h.n) != 10 {
		t.Errorf("VUs seen at the target: %v, want 1–10", h.n)
	}
	for v := 1; v <= 10; v++ {
		if h.n[fmt.Sprint(v)] == 0 {
			t.Errorf("VU %d sent nothing (all: %v)", v, h.n)
		}
	}
	var sent int64
	for _, s := range sums {
		sent += s.Requests
	}
	if sent != tg.Requests() {
		t.Errorf("parts sent %d, target counted %d", sent, tg.Requests())
	}
}

// An open model whose few VUs are all stuck on a slow target when the run ends: the iterations due
// that no VU could start are dropped iterations, so sent + dropped is exactly the schedule's
// count (200/s for 1 s), never fewer.
func TestArrivalAccountsForEveryScheduledIteration(t *testing.T) {
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) { time.Sleep(300 * time.Millisecond) })
	e, err := newEngine(mustPlan(t, fmt.Sprintf(`{"name":"stuck","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":200,"duration":"1s","pre_allocated_vus":2,"max_vus":2,
		"graceful_stop":"2s"},"http":{"timeout":"2s"}}`, tg.URL)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Requests + sum.DroppedIterations + sum.Interrupted; got != 200 || sum.DroppedIterations < 150 {
		t.Errorf("%d sent + %d dropped + %d interrupted = %d, want 200 with most dropped",
			sum.Requests, sum.DroppedIterations, sum.Interrupted, got)
	}
}
