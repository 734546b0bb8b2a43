package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/migrations"
)

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "volley.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustPlan(t testing.TB, s *Store, name string) *Plan {
	t.Helper()
	p, err := s.CreatePlan(context.Background(), name, []byte(`{"name":"`+name+`"}`))
	if err != nil {
		t.Fatalf("CreatePlan: %v", err)
	}
	return p
}

func mustRun(t testing.TB, s *Store, p *Plan, started time.Time) *Run {
	t.Helper()
	r, err := s.CreateRun(context.Background(), p.ID, p.Name, p.Spec, started)
	if err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return r
}

func sample(second int, t0 time.Time) Sample {
	return Sample{
		Second: second,
		TMs:    t0.Add(time.Duration(second) * time.Second).UnixMilli(),
		Data:   fmt.Appendf(nil, `{"elapsed_s":%d,"requests":%d}`, second, second*100),
		Hist:   []byte{0x1c, 0x84, byte(second)},
	}
}

func progress(second int) Progress {
	return Progress{DurationS: float64(second), Requests: int64(second) * 100, RPS: 100,
		P95Ms: float64(second) / 10, ErrorRate: 0.01 * float64(second)}
}

func count(t testing.TB, s *Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.DB().Raw(query, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestOpenAppliesAndRecordsMigrations(t *testing.T) {
	s := newStore(t)
	for _, table := range []string{"plans", "runs", "run_samples", "run_summaries", "goose_db_version"} {
		if n := count(t, s, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table); n != 1 {
			t.Errorf("table %s: %d, want 1", table, n)
		}
	}
	for _, index := range []string{"runs_by_started", "runs_by_plan", "runs_by_status"} {
		if n := count(t, s, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?", index); n != 1 {
			t.Errorf("index %s: %d, want 1", index, n)
		}
	}
	files, _ := fs.Glob(migrations.FS, "*.sql")
	last, _ := strconv.ParseInt(files[len(files)-1][:5], 10, 64) // NNNNN_name.sql, sorted
	if v := count(t, s, "SELECT max(version_id) FROM goose_db_version WHERE is_applied"); v != last {
		t.Errorf("goose version %d, want %d (the last migration file's)", v, last)
	}
	if n := count(t, s, "SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'thresholds_ok'"); n != 1 {
		t.Errorf("runs.thresholds_ok missing")
	}
}

// Pragmas are per connection: every pooled connection must have them, not just the first.
func TestPragmasOnEveryConnection(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	sqlDB, err := s.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxOpenConns {
		conn, err := sqlDB.Conn(ctx) // the earlier ones are still held: each is a distinct connection
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for pragma, want := range map[string]string{
			"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "5000", "synchronous": "1",
		} {
			var got string
			if err := conn.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("connection %d: %s = %s, want %s", i, pragma, got, want)
			}
		}
	}
}

func TestOpenCreatesFileAndRejectsBadPaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database file not created: %v", err)
	}

	_, err = Open(filepath.Join(dir, "missing", "volley.db"))
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing directory: err = %v, want a 'does not exist' error", err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory as database: err = %v", err)
	}
	for _, p := range []string{"", ":memory:"} {
		if _, err := Open(p); err == nil {
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

func TestReopenIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "volley.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, s, "kept")
	rows := count(t, s, "SELECT count(*) FROM goose_db_version")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err = Open(path)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if got := count(t, s, "SELECT count(*) FROM goose_db_version"); got != rows {
			t.Errorf("goose_db_version rows %d after reopen, want %d", got, rows)
		}
		if _, err := s.GetPlan(t.Context(), p.ID); err != nil {
			t.Errorf("plan lost on reopen: %v", err)
		}
		s.Close()
	}
}

func TestPlanCRUD(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()

	a, err := s.CreatePlan(ctx, "a", []byte(`{"name":"a","load":{"vus":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == 0 || a.CreatedAt.IsZero() || !a.CreatedAt.Equal(a.UpdatedAt) || a.CreatedAt.Location() != time.UTC {
		t.Errorf("created plan %+v", a)
	}
	b := mustPlan(t, s, "b")

	got, err := s.GetPlan(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || string(got.Spec) != `{"name":"a","load":{"vus":1}}` ||
		!got.CreatedAt.Equal(a.CreatedAt) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("GetPlan = %+v, want %+v", got, a)
	}

	list, err := s.ListPlans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
		t.Errorf("ListPlans order %v, want b then a", list)
	}

	up, err := s.UpdatePlan(ctx, a.ID, "a2", []byte(`{"name":"a2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if up.Name != "a2" || string(up.Spec) != `{"name":"a2"}` || !up.CreatedAt.Equal(a.CreatedAt) ||
		!up.UpdatedAt.After(a.UpdatedAt) {
		t.Errorf("UpdatePlan = %+v (created %v)", up, a.CreatedAt)
	}
	list, _ = s.ListPlans(ctx)
	if len(list) != 2 || list[0].ID != a.ID {
		t.Errorf("after update, ListPlans should put a first: %v", list)
	}

	if _, err := s.CreatePlan(ctx, "bad", []byte(`{not json`)); err == nil {
		t.Error("CreatePlan accepted invalid JSON")
	}
	if _, err := s.UpdatePlan(ctx, a.ID, "bad", nil); err == nil {
		t.Error("UpdatePlan accepted an empty spec")
	}

	if err := s.DeletePlan(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPlan(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetPlan after delete: %v, want ErrNotFound", err)
	}
	if _, err := s.UpdatePlan(ctx, a.ID, "x", []byte(`{}`)); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdatePlan missing: %v", err)
	}
	if err := s.DeletePlan(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeletePlan missing: %v", err)
	}
	// AUTOINCREMENT: a deleted id is never reused.
	if c := mustPlan(t, s, "c"); c.ID <= b.ID {
		t.Errorf("new plan id %d reuses an old id (b = %d)", c.ID, b.ID)
	}
}

func TestDeletePlanCascades(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	t0 := time.Now()
	doomed, kept := mustPlan(t, s, "doomed"), mustPlan(t, s, "kept")
	var doomedRuns []int64
	for _, p := range []*Plan{doomed, doomed, kept} {
		r := mustRun(t, s, p, t0)
		for sec := 1; sec <= 3; sec++ {
			if err := s.AppendSample(ctx, r.ID, sample(sec, t0), progress(sec)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.FinishRun(ctx, r.ID, StatusFinished, t0.Add(3*time.Second), progress(3),
			[]byte(`{"requests":300}`), []byte{1, 2, 3}, ""); err != nil {
			t.Fatal(err)
		}
		if p == doomed {
			doomedRuns = append(doomedRuns, r.ID)
		}
	}

	if err := s.DeletePlan(ctx, doomed.ID); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int64{"runs": 1, "run_samples": 3, "run_summaries": 1} {
		if n := count(t, s, "SELECT count(*) FROM "+table); n != want {
			t.Errorf("%s: %d rows left, want %d (the kept plan's)", table, n, want)
		}
	}
	for _, id := range doomedRuns {
		if _, err := s.GetRun(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("run %d of deleted plan: %v", id, err)
		}
	}
}

func TestRunLifecycle(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "lifecycle")
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))

	r, err := s.CreateRun(ctx, p.ID, p.Name, []byte(`{"name":"lifecycle","v":1}`), t0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusRunning || !r.StartedAt.Equal(t0) || r.StartedAt.Location() != time.UTC || r.EndedAt != nil {
		t.Errorf("CreateRun = %+v", r)
	}
	// The plan changes afterwards; the run keeps the spec it started with.
	if _, err := s.UpdatePlan(ctx, p.ID, p.Name, []byte(`{"name":"lifecycle","v":2}`)); err != nil {
		t.Fatal(err)
	}

	var want []Sample
	for sec := 1; sec <= 3; sec++ {
		smp := sample(sec, t0)
		if sec == 2 {
			smp.Hist = nil
		}
		want = append(want, smp)
		if err := s.AppendSample(ctx, r.ID, smp, progress(sec)); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != StatusRunning || got.Requests != int64(sec)*100 || got.DurationS != float64(sec) ||
			got.P95Ms != float64(sec)/10 || got.Summary != nil {
			t.Errorf("after second %d: %+v", sec, got)
		}
	}

	smps, err := s.Samples(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(smps) != len(want) {
		t.Fatalf("Samples: %d, want %d", len(smps), len(want))
	}
	for i := range want {
		g, w := smps[i], want[i]
		if g.Second != w.Second || g.TMs != w.TMs || !bytes.Equal(g.Data, w.Data) || !bytes.Equal(g.Hist, w.Hist) ||
			(w.Hist == nil) != (g.Hist == nil) {
			t.Errorf("sample %d = %+v, want %+v", i, g, w)
		}
	}

	ended := t0.Add(3*time.Second + 500*time.Millisecond)
	final := Progress{DurationS: 3.5, Requests: 310, RPS: 88.57, P95Ms: 4.2, ErrorRate: 0.02}
	if err := s.FinishRun(ctx, r.ID, StatusStopped, ended, final, []byte(`{"requests":310}`), []byte{9, 9, 9}, "stopped by user"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusStopped || got.EndedAt == nil || !got.EndedAt.Equal(ended) || got.EndedAt.Location() != time.UTC ||
		got.Requests != 310 || got.RPS != 88.57 || got.P95Ms != 4.2 || got.ErrorRate != 0.02 || got.DurationS != 3.5 ||
		got.Error != "stopped by user" || string(got.Summary) != `{"requests":310}` ||
		string(got.PlanSpec) != `{"name":"lifecycle","v":1}` || got.PlanName != "lifecycle" || got.PlanID != p.ID {
		t.Errorf("GetRun after finish = %+v", got)
	}
	if h, err := s.RunHistogram(ctx, r.ID); err != nil || !bytes.Equal(h, []byte{9, 9, 9}) {
		t.Errorf("RunHistogram = %v, %v", h, err)
	}

	// Finishing again replaces the summary (upsert), never duplicates it.
	if err := s.FinishRun(ctx, r.ID, StatusFinished, ended, final, []byte(`{"requests":311}`), nil, ""); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetRun(ctx, r.ID)
	if string(got.Summary) != `{"requests":311}` || got.Status != StatusFinished {
		t.Errorf("after second FinishRun: %+v", got)
	}
	if h, err := s.RunHistogram(ctx, r.ID); err != nil || h != nil {
		t.Errorf("RunHistogram after nil hist = %v, %v", h, err)
	}
	if n := count(t, s, "SELECT count(*) FROM run_summaries"); n != 1 {
		t.Errorf("run_summaries rows %d", n)
	}

	list, total, err := s.ListRuns(ctx, RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 || len(list) != 1 || list[0].ID != r.ID || list[0].Summary != nil || list[0].PlanSpec != nil ||
		list[0].Requests != 310 || list[0].EndedAt == nil {
		t.Errorf("ListRuns = %+v, %d", list, total)
	}

	// A failed run with nothing measured has no summary.
	r2 := mustRun(t, s, p, t0.Add(time.Minute))
	if err := s.FinishRun(ctx, r2.ID, StatusFailed, t0.Add(time.Minute), Progress{}, nil, nil, "dial tcp: refused"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRun(ctx, r2.ID); got.Summary != nil || got.Error != "dial tcp: refused" {
		t.Errorf("failed run = %+v", got)
	}
	if smps, err := s.Samples(ctx, r2.ID); err != nil || smps == nil || len(smps) != 0 {
		t.Errorf("Samples of a run without any = %v, %v; want empty, non-nil", smps, err)
	}

	if err := s.FinishRun(ctx, r.ID, StatusRunning, ended, final, nil, nil, ""); err == nil {
		t.Error("FinishRun accepted status running")
	}
	if err := s.FinishRun(ctx, 9999, StatusFinished, ended, final, nil, nil, ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("FinishRun missing run: %v", err)
	}
	if err := s.DeleteRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRun(ctx, r.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRun after delete: %v", err)
	}
	if _, err := s.Samples(ctx, r.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Samples after delete: %v", err)
	}
	if _, err := s.RunHistogram(ctx, r.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("RunHistogram after delete: %v", err)
	}
	if err := s.DeleteRun(ctx, r.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteRun twice: %v", err)
	}
	for _, table := range []string{"run_samples", "run_summaries"} {
		if n := count(t, s, "SELECT count(*) FROM "+table+" WHERE run_id = ?", r.ID); n != 0 {
			t.Errorf("%s rows of deleted run: %d", table, n)
		}
	}
}

func TestListRunsFiltersAndPaging(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p1, p2 := mustPlan(t, s, "p1"), mustPlan(t, s, "p2")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	// 10 runs alternating plans; started_at goes up by 1.5 s, and runs 8 and 9 share one start time
	// so the id breaks the tie. Even runs end finished, odd ones stay running.
	var ids []int64
	for i := range 10 {
		p := p1
		if i%2 == 1 {
			p = p2
		}
		start := t0.Add(time.Duration(i) * 1500 * time.Millisecond)
		if i == 9 {
			start = t0.Add(8 * 1500 * time.Millisecond)
		}
		r := mustRun(t, s, p, start)
		ids = append(ids, r.ID)
		if i%2 == 0 {
			if err := s.FinishRun(ctx, r.ID, StatusFinished, start.Add(time.Second), Progress{}, []byte(`{}`), nil, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	idsOf := func(runs []Run) []int64 {
		out := make([]int64, len(runs))
		for i, r := range runs {
			out[i] = r.ID
		}
		return out
	}

	for _, tc := range []struct {
		name      string
		f         RunFilter
		wantIDs   []int64
		wantTotal int64
	}{
		{"all", RunFilter{}, []int64{ids[9], ids[8], ids[7], ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}, 10},
		{"page 1", RunFilter{Limit: 4}, []int64{ids[9], ids[8], ids[7], ids[6]}, 10},
		{"page 3", RunFilter{Limit: 4, Offset: 8}, []int64{ids[1], ids[0]}, 10},
		{"past the end", RunFilter{Limit: 4, Offset: 20}, []int64{}, 10},
		{"negative offset", RunFilter{Limit: 1, Offset: -3}, []int64{ids[9]}, 10},
		{"plan", RunFilter{PlanID: p2.ID}, []int64{ids[9], ids[7], ids[5], ids[3], ids[1]}, 5},
		{"status", RunFilter{Status: StatusFinished}, []int64{ids[8], ids[6], ids[4], ids[2], ids[0]}, 5},
		{"plan and status", RunFilter{PlanID: p1.ID, Status: StatusRunning}, []int64{}, 0},
		{"plan, status, page", RunFilter{PlanID: p2.ID, Status: StatusRunning, Limit: 2, Offset: 1}, []int64{ids[7], ids[5]}, 5},
		{"unknown plan", RunFilter{PlanID: 999}, []int64{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, total, err := s.ListRuns(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := idsOf(runs); total != tc.wantTotal || fmt.Sprint(got) != fmt.Sprint(tc.wantIDs) {
				t.Errorf("ListRuns(%+v) = %v, total %d; want %v, total %d", tc.f, got, total, tc.wantIDs, tc.wantTotal)
			}
		})
	}
}

func TestListRunsLimitBounds(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "many")
	t0 := time.Now()
	for i := range MaxRunLimit + 1 {
		mustRun(t, s, p, t0.Add(time.Duration(i)*time.Millisecond))
	}
	for limit, want := range map[int]int{0: DefaultRunLimit, -1: DefaultRunLimit, 7: 7, MaxRunLimit + 100: MaxRunLimit} {
		runs, total, err := s.ListRuns(ctx, RunFilter{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != want || total != MaxRunLimit+1 {
			t.Errorf("Limit %d: %d runs, total %d; want %d, %d", limit, len(runs), total, want, MaxRunLimit+1)
		}
	}
}

// The list queries walk an index in order: no sort step however many runs are stored.
func TestListRunsQueryPlansUseIndexes(t *testing.T) {
	s := newStore(t)
	for query, index := range map[string]string{
		"SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 50":                                          "runs_by_started",
		"SELECT id FROM runs WHERE plan_id = 1 ORDER BY started_at DESC, id DESC LIMIT 50":                        "runs_by_plan",
		"SELECT id FROM runs WHERE status = 'running' ORDER BY started_at DESC, id DESC LIMIT 50":                 "runs_by_status",
		"SELECT id FROM runs WHERE plan_id = 1 AND status = 'running' ORDER BY started_at DESC, id DESC LIMIT 50": "runs_by_",
	} {
		var rows []struct{ Detail string }
		if err := s.DB().Raw("EXPLAIN QUERY PLAN " + query).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		var plan []string
		for _, r := range rows {
			plan = append(plan, r.Detail)
		}
		text := strings.Join(plan, "; ")
		if !strings.Contains(text, "INDEX "+index) || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s\n  plan: %s\n  want index %s and no sort", query, text, index)
		}
	}
}

func TestAppendSampleIsAtomic(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "atomic")
	t0 := time.Now()
	r := mustRun(t, s, p, t0)

	if err := s.AppendSample(ctx, r.ID, sample(1, t0), progress(1)); err != nil {
		t.Fatal(err)
	}
	// The run row is updated first inside the transaction; the failing insert must undo it.
	bad := map[string]Sample{
		"duplicate second":  sample(1, t0),
		"invalid JSON data": {Second: 2, TMs: 1, Data: []byte(`{"requests":`)},
	}
	for name, smp := range bad {
		if err := s.AppendSample(ctx, r.ID, smp, progress(9)); err == nil {
			t.Errorf("%s: AppendSample succeeded", name)
		}
	}
	got, err := s.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Requests != progress(1).Requests || got.DurationS != progress(1).DurationS || got.P95Ms != progress(1).P95Ms {
		t.Errorf("a failed AppendSample changed the run's progress: %+v", got)
	}
	smps, _ := s.Samples(ctx, r.ID)
	if len(smps) != 1 || !bytes.Equal(smps[0].Data, sample(1, t0).Data) {
		t.Errorf("samples after failed appends: %+v", smps)
	}

	if err := s.AppendSample(ctx, 9999, sample(1, t0), progress(1)); !errors.Is(err, ErrNotFound) {
		t.Errorf("AppendSample to a missing run: %v, want ErrNotFound", err)
	}
	if n := count(t, s, "SELECT count(*) FROM run_samples WHERE run_id = 9999"); n != 0 {
		t.Errorf("orphan samples: %d", n)
	}

	// Every committed second: progress and last sample agree.
	for sec := 2; sec <= 5; sec++ {
		if err := s.AppendSample(ctx, r.ID, sample(sec, t0), progress(sec)); err != nil {
			t.Fatal(err)
		}
	}
	var agree int64
	s.DB().Raw(`SELECT count(*) FROM runs r WHERE r.id = ? AND r.requests =
		(SELECT json_extract(data, '$.requests') FROM run_samples WHERE run_id = r.id ORDER BY second DESC LIMIT 1)`, r.ID).Scan(&agree)
	if agree != 1 {
		t.Error("run.requests does not match its last sample")
	}
}

func TestMarkInterrupted(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "crash")
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	withSamples, without, done := mustRun(t, s, p, t0), mustRun(t, s, p, t0), mustRun(t, s, p, t0)
	for sec := 1; sec <= 4; sec++ {
		if err := s.AppendSample(ctx, withSamples.ID, sample(sec, t0), progress(sec)); err != nil {
			t.Fatal(err)
		}
	}
	doneEnd := t0.Add(time.Second)
	if err := s.FinishRun(ctx, done.ID, StatusFinished, doneEnd, progress(1), []byte(`{}`), nil, ""); err != nil {
		t.Fatal(err)
	}

	now := t0.Add(time.Hour).In(time.FixedZone("X", -7200))
	ids, err := s.MarkInterrupted(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != fmt.Sprint([]int64{withSamples.ID, without.ID}) {
		t.Errorf("MarkInterrupted ids %v, want [%d %d]", ids, withSamples.ID, without.ID)
	}

	got, _ := s.GetRun(ctx, withSamples.ID)
	lastEnd := time.UnixMilli(sample(4, t0).TMs)
	if got.Status != StatusInterrupted || got.EndedAt == nil || !got.EndedAt.Equal(lastEnd) ||
		got.Requests != progress(4).Requests || got.Summary != nil {
		t.Errorf("run with samples = %+v, want interrupted ending %v", got, lastEnd)
	}
	if smps, _ := s.Samples(ctx, withSamples.ID); len(smps) != 4 {
		t.Errorf("samples kept: %d, want 4", len(smps))
	}
	got, _ = s.GetRun(ctx, without.ID)
	if got.Status != StatusInterrupted || got.EndedAt == nil || !got.EndedAt.Equal(now) || got.EndedAt.Location() != time.UTC {
		t.Errorf("run without samples = %+v, want ended at %v", got, now)
	}
	got, _ = s.GetRun(ctx, done.ID)
	if got.Status != StatusFinished || !got.EndedAt.Equal(doneEnd) {
		t.Errorf("finished run touched: %+v", got)
	}

	if ids, err := s.MarkInterrupted(ctx, now); err != nil || len(ids) != 0 {
		t.Errorf("second MarkInterrupted = %v, %v; want none", ids, err)
	}
	if runs, total, _ := s.ListRuns(ctx, RunFilter{Status: StatusInterrupted}); total != 2 || len(runs) != 2 {
		t.Errorf("interrupted runs listed: %d", total)
	}
}

func TestForeignKeysEnforced(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	err := s.DB().Exec(`INSERT INTO runs (plan_id, plan_name, status, started_at, plan_spec)
		VALUES (4242, 'ghost', 'running', '2026-01-01 00:00:00+00:00', '{}')`).Error
	if err == nil {
		t.Fatal("inserted a run for a missing plan: foreign keys are off")
	}
	if _, err := s.CreateRun(ctx, 4242, "ghost", []byte(`{}`), time.Now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("CreateRun for a missing plan: %v, want ErrNotFound", err)
	}
	err = s.DB().Exec(`INSERT INTO run_samples (run_id, second, t_ms, data) VALUES (4242, 1, 0, '{}')`).Error
	if err == nil {
		t.Error("inserted a sample for a missing run")
	}
	if n := count(t, s, "SELECT count(*) FROM runs"); n != 0 {
		t.Errorf("runs: %d", n)
	}
}

func TestTimesStoredInUTC(t *testing.T) {
	s := newStore(t)
	p := mustPlan(t, s, "tz")
	start := time.Date(2026, 6, 1, 23, 30, 0, 0, time.FixedZone("UTC+5", 5*3600))
	r := mustRun(t, s, p, start)
	var raw string
	// CAST: the driver turns a DATETIME column into a time.Time; the stored text is wanted here.
	s.DB().Raw("SELECT CAST(started_at AS TEXT) FROM runs WHERE id = ?", r.ID).Scan(&raw)
	if !strings.HasPrefix(raw, "2026-06-01 18:30:00") || !strings.HasSuffix(raw, "+00:00") {
		t.Errorf("stored started_at %q, want UTC", raw)
	}
}

func TestWritesHonourContext(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.CreatePlan(ctx, "late", []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("CreatePlan with a canceled context: %v", err)
	}
	if _, _, err := s.ListRuns(ctx, RunFilter{}); err == nil {
		t.Error("ListRuns with a canceled context succeeded")
	}
}

// One goroutine appends a run's seconds while others read and write: no "database is locked",
// and no reader ever sees progress ahead of the samples. Run with -race.
func TestConcurrentAppendWhileListing(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "busy")
	t0 := time.Now()
	r := mustRun(t, s, p, t0)

	const seconds = 300
	done := make(chan struct{})
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for sec := 1; sec <= seconds; sec++ {
			if err := s.AppendSample(ctx, r.ID, sample(sec, t0), progress(sec)); err != nil {
				errs <- fmt.Errorf("append %d: %w", sec, err)
				return
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				runs, total, err := s.ListRuns(ctx, RunFilter{PlanID: p.ID})
				if err != nil || total < 1 || len(runs) < 1 {
					errs <- fmt.Errorf("ListRuns: %v (total %d)", err, total)
					return
				}
				got, err := s.GetRun(ctx, r.ID)
				if err != nil {
					errs <- fmt.Errorf("GetRun: %w", err)
					return
				}
				smps, err := s.Samples(ctx, r.ID)
				if err != nil {
					errs <- fmt.Errorf("Samples: %w", err)
					return
				}
				// Read after the run, so at least as many seconds as its progress says.
				if int64(len(smps))*100 < got.Requests {
					errs <- fmt.Errorf("run says %d requests but only %d samples are stored", got.Requests, len(smps))
					return
				}
			}
		})
	}
	// Another writer (the API creating and deleting plans) competes for the write slot.
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			q, err := s.CreatePlan(ctx, fmt.Sprint("tmp", i), []byte(`{}`))
			if err == nil {
				err = s.DeletePlan(ctx, q.ID)
			}
			if err != nil {
				errs <- fmt.Errorf("plan churn: %w", err)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := count(t, s, "SELECT count(*) FROM run_samples WHERE run_id = ?", r.ID); n != seconds {
		t.Errorf("stored %d samples, want %d", n, seconds)
	}
}

// BenchmarkAppendSample measures one committed second: a ~1 KB sample JSON and a ~4 KB histogram.
func BenchmarkAppendSample(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	p := mustPlan(b, s, "bench")
	r := mustRun(b, s, p, time.Now())
	data := []byte(`{"t":1764460000000,"elapsed_s":3,"requests":5321,"rps":5321,"errors":2,` +
		`"latency_ms":{"min":0.2,"mean":1.1,"p50":0.9,"p75":1.2,"p90":1.9,"p95":2.4,"p99":4.8,"p99_9":9.1,"max":12.0},` +
		`"active_vus":50,"dropped_iterations":0,"interrupted":0,"bytes_in":4321000,"bytes_out":400000,` +
		`"status_codes":{"200":5319,"503":2},"error_kinds":{"status_5xx":2},` +
		`"client":{"cpu_percent":71.5,"rss_bytes":31457280,"goroutines":64,"open_conns":50},` +
		`"generator_bound":false,"by_name":{"index":{"requests":5321,"errors":2,"latency_ms":{"p50":0.9,"p95":2.4,"p99":4.8}}}}`)
	data = append(data[:len(data)-1], []byte(`,"pad":"`+strings.Repeat("x", 1024-len(data))+`"}`)...)
	hist := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 1024)
	b.SetBytes(int64(len(data) + len(hist)))
	b.ReportAllocs()
	sec := 0
	for b.Loop() {
		sec++
		if err := s.AppendSample(ctx, r.ID, Sample{Second: sec, TMs: int64(sec) * 1000, Data: data, Hist: hist}, progress(sec)); err != nil {
			b.Fatal(err)
		}
	}
}
