package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

func TestRunNotesAndTags(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "meta")
	r := mustRun(t, s, p, time.Now())

	notes := "first try\nwith a newline"
	got, err := s.UpdateRunMeta(ctx, r.ID, &notes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Notes != notes || len(got.Tags) != 0 || got.Tags == nil {
		t.Errorf("after notes: %q %#v", got.Notes, got.Tags)
	}
	tags := []string{"v2", "baseline", "v2", "a.b_c-1"}
	if got, err = s.UpdateRunMeta(ctx, r.ID, nil, &tags); err != nil {
		t.Fatal(err)
	}
	if got.Notes != notes || !slices.Equal(got.Tags, []string{"a.b_c-1", "baseline", "v2"}) {
		t.Errorf("after tags: %q %v", got.Notes, got.Tags)
	}
	runs, _, err := s.ListRuns(ctx, RunFilter{})
	if err != nil || len(runs) != 1 || runs[0].Notes != notes || len(runs[0].Tags) != 3 {
		t.Errorf("list: %+v %v", runs, err)
	}
	for name, bad := range map[string][]string{
		"upper case": {"Baseline"},
		"empty":      {""},
		"too long":   {strings.Repeat("a", MaxTagLen+1)},
		"space":      {"a b"},
		"too many":   strings.Fields("a b c d e f g h i j k l m n o p q r s t u"),
	} {
		if _, err := s.UpdateRunMeta(ctx, r.ID, nil, &bad); err == nil {
			t.Errorf("%s: accepted %q", name, bad)
		}
	}
	long := strings.Repeat("x", MaxNotesLen+1)
	if _, err := s.UpdateRunMeta(ctx, r.ID, &long, nil); err == nil {
		t.Error("over-long notes accepted")
	}
	empty := []string{}
	if got, err = s.UpdateRunMeta(ctx, r.ID, nil, &empty); err != nil || len(got.Tags) != 0 {
		t.Errorf("clearing tags: %v %v", got, err)
	}
	if _, err := s.UpdateRunMeta(ctx, 999, &notes, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
	if _, err := s.UpdateRunMeta(ctx, r.ID, nil, &tags); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "SELECT count(*) FROM run_tags"); n != 0 {
		t.Errorf("tags of a deleted run: %d", n)
	}
}

// seedHistory makes 12 runs over two plans with distinct figures, tags and threshold outcomes.
// Run i starts at t0 + i minutes, has rps 100+i·10 (but run 5 is the fastest), p95 20−i and
// duration 10+(i%4).
func seedHistory(t *testing.T, s *Store) (ids []int64, p1, p2 *Plan, t0 time.Time) {
	t.Helper()
	ctx := t.Context()
	p1, p2 = mustPlan(t, s, "p1"), mustPlan(t, s, "p2")
	t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 12 {
		p := p1
		if i%3 == 2 {
			p = p2
		}
		start := t0.Add(time.Duration(i) * time.Minute)
		r := mustRun(t, s, p, start)
		ids = append(ids, r.ID)
		rps := 100 + float64(i)*10
		if i == 5 {
			rps = 1000
		}
		var ok *bool
		switch i % 3 {
		case 0:
			ok = ptrTo(true)
		case 1:
			ok = ptrTo(false)
		}
		prog := Progress{DurationS: 10 + float64(i%4), Requests: int64(1000 * (i + 1)), RPS: rps,
			P95Ms: 20 - float64(i), ErrorRate: float64(i%5) / 100, ThresholdsOK: ok}
		status := StatusFinished
		if i == 11 {
			status = StatusStopped
		}
		if err := s.FinishRun(ctx, r.ID, status, start.Add(10*time.Second), prog, []byte(`{}`), nil, ""); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			tags := []string{"even"}
			if i%4 == 0 {
				tags = append(tags, "four")
			}
			if _, err := s.UpdateRunMeta(ctx, r.ID, nil, &tags); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids, p1, p2, t0
}

func ptrTo[T any](v T) *T { return &v }

func TestListRunsHistoryFiltersAndSorting(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ids, p1, _, t0 := seedHistory(t, s)
	pick := func(is ...int) []int64 {
		out := make([]int64, len(is))
		for k, i := range is {
			out[k] = ids[i]
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		f         RunFilter
		want      []int64
		wantTotal int64
	}{
		{"tag", RunFilter{Tag: "four"}, pick(8, 4, 0), 3},
		{"tag and plan", RunFilter{Tag: "even", PlanID: p1.ID}, pick(10, 6, 4, 0), 4},
		{"unknown tag", RunFilter{Tag: "nope"}, pick(), 0},
		{"from (inclusive)", RunFilter{From: t0.Add(9 * time.Minute)}, pick(11, 10, 9), 3},
		{"to (exclusive)", RunFilter{To: t0.Add(2 * time.Minute)}, pick(1, 0), 2},
		{"from and to in another zone", RunFilter{From: t0.Add(3 * time.Minute).In(time.FixedZone("x", 5*3600)),
			To: t0.Add(5 * time.Minute).In(time.FixedZone("y", -7*3600))}, pick(4, 3), 2},
		{"passed", RunFilter{Thresholds: ThresholdsPassed}, pick(9, 6, 3, 0), 4},
		{"failed", RunFilter{Thresholds: ThresholdsFailed, Limit: 2}, pick(10, 7), 4},
		{"status", RunFilter{Status: StatusStopped}, pick(11), 1},
		{"rps desc", RunFilter{Sort: "rps", Limit: 3}, pick(5, 11, 10), 12},
		{"rps asc", RunFilter{Sort: "rps", Order: "asc", Limit: 3}, pick(0, 1, 2), 12},
		{"p95 asc", RunFilter{Sort: "p95_ms", Order: "asc", Limit: 2}, pick(11, 10), 12},
		{"requests desc page 2", RunFilter{Sort: "requests", Limit: 2, Offset: 2}, pick(9, 8), 12},
		// duration 10+(i%4): ties broken by id in the same direction
		{"duration desc", RunFilter{Sort: "duration_s", Limit: 4}, pick(11, 7, 3, 10), 12},
		{"duration asc", RunFilter{Sort: "duration_s", Order: "asc", Limit: 4}, pick(0, 4, 8, 1), 12},
		{"error rate desc", RunFilter{Sort: "error_rate", Limit: 3}, pick(9, 4, 8), 12},
		{"started asc", RunFilter{Sort: "started_at", Order: "asc", Limit: 2}, pick(0, 1), 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, total, err := s.ListRuns(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]int64, len(runs))
			for i, r := range runs {
				got[i] = r.ID
			}
			if total != tc.wantTotal || !slices.Equal(got, tc.want) {
				t.Errorf("got %v total %d, want %v total %d", got, total, tc.want, tc.wantTotal)
			}
		})
	}
	for _, bad := range []RunFilter{{Sort: "id; DROP TABLE runs"}, {Order: "up"}, {Thresholds: "maybe"}} {
		if _, _, err := s.ListRuns(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Every sort walks its own index (no sort step over all runs, whatever their number); the tag
// filter reads run_tags through its index and sorts only the tagged runs.
func TestListRunsSortQueryPlansUseIndexes(t *testing.T) {
	s := newStore(t)
	cases := map[string]string{
		"SELECT id FROM runs WHERE id IN (SELECT run_id FROM run_tags WHERE tag = 'x') ORDER BY started_at DESC, id DESC LIMIT 50": "run_tags_by_tag",
		"SELECT id FROM runs WHERE thresholds_ok = 0 ORDER BY started_at DESC, id DESC LIMIT 50":                                   "runs_by_thresholds",
	}
	index := map[string]string{"duration_s": "runs_by_duration", "requests": "runs_by_requests", "rps": "runs_by_rps",
		"p95_ms": "runs_by_p95", "error_rate": "runs_by_error_rate", "started_at": "runs_by_started",
		"server_cpu_max": "runs_by_server_cpu_max"}
	for _, col := range SortColumns {
		for _, dir := range []string{"ASC", "DESC"} {
			cases[fmt.Sprintf("SELECT id FROM runs ORDER BY %s %s, id %s LIMIT 50 OFFSET 50", col, dir, dir)] = index[col]
		}
	}
	for query, idx := range cases {
		var rows []struct{ Detail string }
		if err := s.DB().Raw("EXPLAIN QUERY PLAN " + query).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		var plan []string
		for _, r := range rows {
			plan = append(plan, r.Detail)
		}
		text := strings.Join(plan, "; ")
		sorts := strings.Contains(text, "TEMP B-TREE") && !strings.Contains(query, "run_tags")
		if !strings.Contains(text, idx) || sorts {
			t.Errorf("%s\n  plan: %s\n  want index %s and no sort", query, text, idx)
		}
	}
}

func TestPreviousRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ids, _, _, _ := seedHistory(t, s)
	// plan 1 has runs 0,1,3,4,6,7,9,10; plan 2 has 2,5,8,11.
	for i, want := range map[int]int{4: 3, 3: 1, 11: 8, 5: 2} {
		r, err := s.PreviousRun(ctx, ids[i])
		if err != nil || r.ID != ids[want] {
			t.Errorf("previous of run %d: %v %v, want run %d", i, r, err, want)
		}
	}
	for _, i := range []int{0, 2} {
		if _, err := s.PreviousRun(ctx, ids[i]); !errors.Is(err, ErrNotFound) {
			t.Errorf("first run of its plan: %v", err)
		}
	}
	if _, err := s.PreviousRun(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
	// A predecessor without a summary (failed before measuring, or running) is skipped.
	p := mustPlan(t, s, "gaps")
	t0 := time.Now()
	a, b, c := mustRun(t, s, p, t0), mustRun(t, s, p, t0.Add(time.Second)), mustRun(t, s, p, t0.Add(2*time.Second))
	if err := s.FinishRun(ctx, a.ID, StatusFinished, t0, Progress{}, []byte(`{}`), nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, b.ID, StatusFailed, t0, Progress{}, nil, nil, "boom"); err != nil {
		t.Fatal(err)
	}
	if r, err := s.PreviousRun(ctx, c.ID); err != nil || r.ID != a.ID {
		t.Errorf("skipping a run without summary: %v %v", r, err)
	}
}

func TestPlanTrend(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	ids, p1, p2, _ := seedHistory(t, s)
	mustRun(t, s, p2, time.Now()) // running: left out
	runs, err := s.PlanTrend(ctx, p2.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, r := range runs {
		got = append(got, r.ID)
	}
	if want := []int64{ids[5], ids[8], ids[11]}; !slices.Equal(got, want) {
		t.Errorf("trend %v, want %v (oldest first)", got, want)
	}
	if runs[0].RPS != 1000 || runs[2].Status != StatusStopped {
		t.Errorf("trend points: %+v", runs)
	}
	if runs, err := s.PlanTrend(ctx, p1.ID, 0); err != nil || len(runs) != 8 {
		t.Errorf("default limit: %d %v", len(runs), err)
	}
	if _, err := s.PlanTrend(ctx, 999, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing plan: %v", err)
	}
}

// BenchmarkListRuns5000 lists page 1 (50 runs) of 5 000 stored runs, with each filter and sort
// the history page offers; the total is counted each time as the API does.
func BenchmarkListRuns5000(b *testing.B) {
	s := newStore(b)
	ctx := b.Context()
	p1, p2 := mustPlan(b, s, "p1"), mustPlan(b, s, "p2")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := s.write(ctx, func(tx *gorm.DB) error {
		for i := range 5000 {
			pid := p1.ID
			if i%5 == 0 {
				pid = p2.ID
			}
			status := StatusFinished
			if i%7 == 0 {
				status = StatusStopped
			}
			var id int64
			if err := tx.Raw(`INSERT INTO runs (plan_id, plan_name, status, started_at, ended_at, duration_s,
					requests, rps, p95_ms, error_rate, thresholds_ok, plan_spec)
				VALUES (?, 'p', ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}') RETURNING id`,
				pid, status, t0.Add(time.Duration(i)*time.Minute), t0.Add(time.Duration(i)*time.Minute+30*time.Second),
				30+float64(i%13), 1000*(i%97), float64(i%89)*11.5, float64(i%83)/3, float64(i%11)/100, i%3 != 0).Scan(&id).Error; err != nil {
				return err
			}
			if i%10 == 0 {
				if err := tx.Exec("INSERT INTO run_tags (run_id, tag) VALUES (?, 'baseline')", id).Error; err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		f    RunFilter
	}{
		{"newest", RunFilter{}},
		{"plan", RunFilter{PlanID: p2.ID}},
		{"status", RunFilter{Status: StatusStopped}},
		{"tag", RunFilter{Tag: "baseline"}},
		{"thresholds_failed", RunFilter{Thresholds: ThresholdsFailed}},
		{"from_to", RunFilter{From: t0.Add(1000 * time.Minute), To: t0.Add(3000 * time.Minute)}},
		{"sort_p95_asc", RunFilter{Sort: "p95_ms", Order: "asc"}},
		{"sort_rps_plan", RunFilter{Sort: "rps", PlanID: p1.ID}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				runs, total, err := s.ListRuns(ctx, bc.f)
				if err != nil || len(runs) == 0 || total == 0 {
					b.Fatal(len(runs), total, err)
				}
			}
		})
	}
}
