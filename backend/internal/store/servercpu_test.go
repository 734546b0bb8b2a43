package store

import (
	"testing"
	"time"
)

// FinishRun stores Progress.ServerCPUMax in runs.server_cpu_max (NULL without one); GetRun and
// ListRuns return it, and ListRuns sorts by it with unknown values last in descending order.
func TestServerCPUMaxStoredListedAndSorted(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "cpu")
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cpus := []*float64{ptr(87.5), nil, ptr(312.25), ptr(4.0)}
	ids := make([]int64, len(cpus))
	for i, cpu := range cpus {
		r := mustRun(t, s, p, t0.Add(time.Duration(i)*time.Minute))
		ids[i] = r.ID
		// Seconds written while it runs leave the column alone.
		if err := s.AppendSample(ctx, r.ID, sample(1, t0), progress(1)); err != nil {
			t.Fatal(err)
		}
		prog := progress(1)
		prog.ServerCPUMax = cpu
		if err := s.FinishRun(ctx, r.ID, StatusFinished, t0.Add(time.Hour), prog, []byte(`{}`), nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	for i, id := range ids {
		got, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !sameFloat(got.ServerCPUMax, cpus[i]) {
			t.Errorf("run %d: GetRun ServerCPUMax %v, want %v", i, show(got.ServerCPUMax), show(cpus[i]))
		}
	}
	if n := count(t, s, "SELECT count(*) FROM runs WHERE server_cpu_max IS NULL"); n != 1 {
		t.Errorf("%d runs with a NULL server_cpu_max, want 1", n)
	}
	for _, tc := range []struct {
		order string
		want  []int // indexes into cpus
	}{{"desc", []int{2, 0, 3, 1}}, {"asc", []int{1, 3, 0, 2}}} {
		list, total, err := s.ListRuns(ctx, RunFilter{Sort: "server_cpu_max", Order: tc.order})
		if err != nil {
			t.Fatal(err)
		}
		if total != int64(len(cpus)) || len(list) != len(cpus) {
			t.Fatalf("%s: %d runs of %d, want %d", tc.order, len(list), total, len(cpus))
		}
		for j, r := range list {
			w := tc.want[j]
			if r.ID != ids[w] || !sameFloat(r.ServerCPUMax, cpus[w]) {
				t.Errorf("%s #%d: run %d with %v, want run %d with %v", tc.order, j, r.ID, show(r.ServerCPUMax), ids[w], show(cpus[w]))
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func sameFloat(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(v *float64) any {
	if v == nil {
		return "null"
	}
	return *v
}
