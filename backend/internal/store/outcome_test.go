package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/migrations"
)

// The runs.outcome column (migrations/00010) is metrics.OutcomeOf of the run's stored status,
// requests, error rate and thresholds, for every combination around the rule's edges (running
// runs have none), and ListRuns' outcome filter selects exactly the runs with those outcomes.
func TestOutcomeColumnIsOutcomeOf(t *testing.T) {
	if !slices.Equal(RunOutcomes, []string{metrics.OutcomePassed, metrics.OutcomeFinishedWithErrors, metrics.OutcomeFailed, metrics.OutcomeStopped}) {
		t.Fatalf("RunOutcomes %v are not metrics' outcomes", RunOutcomes)
	}
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "p")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	yes, no := true, false
	want := map[int64]string{}
	byOutcome := map[string][]int64{}
	n := 0
	for _, status := range []string{StatusFinished, StatusStopped, StatusFailed, StatusInterrupted, StatusRunning} {
		for _, requests := range []int64{0, 1, 1000} {
			for _, rate := range []float64{0, 0.01, metrics.MaxPassedErrorRate, metrics.MaxPassedErrorRate + 1e-9, 0.5, 0.999, 1} {
				for _, thr := range []*bool{nil, &yes, &no} {
					n++
					r, err := s.CreateRun(ctx, p.ID, p.Name, []byte(`{}`), t0.Add(time.Duration(n)*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					prog := Progress{DurationS: 1, Requests: requests, ErrorRate: rate, ThresholdsOK: thr}
					if status == StatusRunning {
						prog.ThresholdsOK = nil // set only at the end
						err = s.AppendSample(ctx, r.ID, Sample{Second: 1, TMs: 1, Data: []byte(`{}`)}, prog)
					} else {
						err = s.FinishRun(ctx, r.ID, status, t0, prog, nil, nil, "")
					}
					if err != nil {
						t.Fatal(err)
					}
					o := metrics.OutcomeOf(status, requests, rate, prog.ThresholdsOK)
					want[r.ID] = o
					byOutcome[o] = append(byOutcome[o], r.ID)
				}
			}
		}
	}
	var rows []struct {
		ID      int64          `gorm:"column:id"`
		Outcome sql.NullString `gorm:"column:outcome"`
	}
	if err := s.DB().Raw("SELECT id, outcome FROM runs").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d runs stored, want %d", len(rows), n)
	}
	for _, r := range rows {
		if r.Outcome.String != want[r.ID] || r.Outcome.Valid != (want[r.ID] != "") {
			t.Errorf("run %d: outcome column %v, OutcomeOf %q", r.ID, r.Outcome, want[r.ID])
		}
	}
	for _, sel := range [][]string{{"passed"}, {"failed"}, {"finished_with_errors"}, {"stopped"}, {"passed", "finished_with_errors"}} {
		runs, total, err := s.ListRuns(ctx, RunFilter{Outcomes: sel, Sort: "started_at", Order: "asc", Limit: MaxRunLimit})
		if err != nil {
			t.Fatal(err)
		}
		var got, exp []int64
		for _, r := range runs {
			got = append(got, r.ID)
		}
		for _, o := range sel {
			exp = append(exp, byOutcome[o]...)
		}
		slices.Sort(exp)
		if !slices.Equal(got, exp) || total != int64(len(exp)) || len(exp) == 0 {
			t.Errorf("outcome %v: %d runs (total %d) %v, want %d %v", sel, len(got), total, got, len(exp), exp)
		}
	}
	if _, _, err := s.ListRuns(ctx, RunFilter{Outcomes: []string{"ok"}}); err == nil {
		t.Error("outcome ok accepted")
	}
	// The filter reads the index.
	var plan []struct{ Detail string }
	if err := s.DB().Raw("EXPLAIN QUERY PLAN SELECT id FROM runs WHERE outcome IN ('failed') ORDER BY started_at DESC LIMIT 50").Scan(&plan).Error; err != nil {
		t.Fatal(err)
	}
	if txt := fmt.Sprint(plan); !strings.Contains(txt, "runs_by_outcome") {
		t.Errorf("plan %s does not use runs_by_outcome", txt)
	}
}

// A database of an older version holds a run stopped before any request with the old rule's
// error ("no successful response: no request was sent"); migration 00010 gives it the outcome
// stopped and clears that error, and leaves every other run's error as it was.
func TestMigration10ClearsTheErrorOfAStoppedRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	sqlDB, err := s.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	prov, err := goose.NewProvider(goose.DialectSQLite3, sqlDB, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prov.DownTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, s, "p")
	const none = "no successful response: no request was sent"
	runs := []struct {
		status   string
		requests int64
		rate     float64
		msg      string
		outcome  string // after the migration
		wantMsg  string
	}{
		{StatusStopped, 0, 0, none, metrics.OutcomeStopped, ""},
		{StatusFinished, 0, 0, none, metrics.OutcomeFailed, none},
		{StatusStopped, 3, 1, "no successful response: 3 requests failed", metrics.OutcomeFailed, "no successful response: 3 requests failed"},
		{StatusStopped, 5, 0, "", metrics.OutcomePassed, ""},
		{StatusFailed, 0, 0, none, metrics.OutcomeFailed, none},
	}
	ids := make([]int64, len(runs))
	for i, c := range runs {
		r, err := s.CreateRun(ctx, p.ID, p.Name, []byte(`{}`), time.Date(2026, 3, 1, 12, 0, i, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = r.ID
		if err := s.FinishRun(ctx, r.ID, c.status, time.Now(), Progress{DurationS: 1, Requests: c.requests, ErrorRate: c.rate}, nil, nil, c.msg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := prov.Up(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range runs {
		var row struct {
			Outcome string `gorm:"column:outcome"`
			Error   string `gorm:"column:error"`
		}
		if err := s.DB().Raw("SELECT outcome, error FROM runs WHERE id = ?", ids[i]).Scan(&row).Error; err != nil {
			t.Fatal(err)
		}
		if row.Outcome != c.outcome || row.Error != c.wantMsg {
			t.Errorf("%s run, %d requests, error %q: outcome %q error %q after 00010, want %q %q",
				c.status, c.requests, c.msg, row.Outcome, row.Error, c.outcome, c.wantMsg)
		}
	}
}
