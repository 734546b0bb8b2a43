package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
)

// Run is one execution of a plan. Its list columns (DurationS … ErrorRate) are those of the last
// stored second while it runs, and the final figures once it has ended.
type Run struct {
	ThresholdsOK *bool // nil: no thresholds, or not ended
	ID           int64
	PlanID       int64
	PlanName     string
	Status       string // running, finished, stopped, failed or interrupted
	StartedAt    time.Time
	EndedAt      *time.Time
	DurationS    float64
	Requests     int64
	RPS          float64
	P95Ms        float64
	ErrorRate    float64
	Error        string
	PlanSpec     []byte // the plan JSON as it was when the run started; only filled by GetRun
	Summary      []byte // the summary JSON; nil until the run has ended; only filled by GetRun
	Notes        string
	Tags         []string // sorted; filled by GetRun and ListRuns (empty, not nil, when none)
	// ServerCPUMax is the target server's CPU % at its busiest (Progress.ServerCPUMax); nil when
	// unknown.
	ServerCPUMax *float64
	// Agents is how many agents generated the load (0: the server's own engine); Degraded: an
	// agent was lost during the run (Progress.Agents, Progress.Degraded).
	Agents   int
	Degraded bool
}

// Progress is the running totals written with each sample and at the end of a run.
type Progress struct {
	DurationS float64
	Requests  int64
	RPS       float64
	P95Ms     float64
	ErrorRate float64
	// ThresholdsOK is set at the end of a run that had thresholds (nil otherwise).
	ThresholdsOK *bool
	// ServerCPUMax is set at the end of a run whose server monitor had a value (nil otherwise):
	// the target server's CPU % at its busiest (runs.ServerCPUMax). Only FinishRun writes it.
	ServerCPUMax *float64
	// Agents and Degraded are set at the end of a run over agents (metrics.Summary.Agents,
	// Degraded; 0 and false for a local run). Only FinishRun writes them.
	Agents   int
	Degraded bool
}

// Sample is one second of a run.
type Sample struct {
	Second int    // elapsed_s: 1 for the run's first second
	TMs    int64  // end of the second, unix milliseconds
	Data   []byte // the sample JSON
	Hist   []byte // the second's encoded latency histogram, or nil
}

// RunFilter selects and orders runs for ListRuns. Zero fields do not filter.
type RunFilter struct {
	PlanID int64
	Status string
	Tag    string    // runs carrying this tag
	From   time.Time // started_at ≥ From
	To     time.Time // started_at < To
	// Thresholds is "passed" (thresholds_ok true), "failed" (false) or "" (any, NULL included).
	Thresholds string
	// Outcomes selects the ended runs with one of these outcomes (RunOutcomes; the runs.outcome
	// column, metrics.OutcomeOf); empty: any, running runs included.
	Outcomes []string
	// Sort is one of SortColumns ("" = started_at); Order is "asc" or "desc" ("" = desc). Ties
	// are broken by id in the same direction.
	Sort   string
	Order  string
	Limit  int // 0 means 50; at most 500
	Offset int
}

// Paging bounds of RunFilter.
const (
	DefaultRunLimit = 50
	MaxRunLimit     = 500
)

type runRow struct {
	ID           int64      `gorm:"column:id"`
	PlanID       int64      `gorm:"column:plan_id"`
	PlanName     string     `gorm:"column:plan_name"`
	Status       string     `gorm:"column:status"`
	StartedAt    time.Time  `gorm:"column:started_at"`
	EndedAt      *time.Time `gorm:"column:ended_at"`
	DurationS    float64    `gorm:"column:duration_s"`
	Requests     int64      `gorm:"column:requests"`
	RPS          float64    `gorm:"column:rps"`
	P95Ms        float64    `gorm:"column:p95_ms"`
	ErrorRate    float64    `gorm:"column:error_rate"`
	Error        string     `gorm:"column:error"`
	ThresholdsOK *bool      `gorm:"column:thresholds_ok"`
	PlanSpec     []byte     `gorm:"column:plan_spec"`
	Summary      []byte     `gorm:"column:summary"`
	Notes        string     `gorm:"column:notes"`
	ServerCPUMax *float64   `gorm:"column:server_cpu_max"`
	Agents       int        `gorm:"column:agents"`
	Degraded     bool       `gorm:"column:degraded"`
}

func (r runRow) run() Run {
	run := Run{
		ID: r.ID, PlanID: r.PlanID, PlanName: r.PlanName, Status: r.Status,
		StartedAt: utc(r.StartedAt), DurationS: r.DurationS, Requests: r.Requests,
		RPS: r.RPS, P95Ms: r.P95Ms, ErrorRate: r.ErrorRate, Error: r.Error,
		PlanSpec: r.PlanSpec, Summary: r.Summary, ThresholdsOK: r.ThresholdsOK, Notes: r.Notes,
		ServerCPUMax: r.ServerCPUMax, Agents: r.Agents, Degraded: r.Degraded,
	}
	if r.EndedAt != nil {
		t := utc(*r.EndedAt)
		run.EndedAt = &t
	}
	return run
}

// runListColumns leaves out plan_spec: the list never shows it.
const runListColumns = "id, plan_id, plan_name, status, started_at, ended_at, duration_s, requests, rps, p95_ms, error_rate, error, thresholds_ok, notes, server_cpu_max, agents, degraded"

// CreateRun stores a new run of a plan with status "running". planSpec is the plan JSON as it
// is now. It returns ErrNotFound if the plan does not exist.
func (s *Store) CreateRun(ctx context.Context, planID int64, planName string, planSpec []byte, startedAt time.Time) (*Run, error) {
	startedAt = startedAt.UTC()
	var id int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		// The foreign key would refuse a missing plan too, but only with a generic message;
		// checked inside the (IMMEDIATE) transaction, the answer cannot go stale.
		var n int64
		if err := tx.Raw("SELECT count(*) FROM plans WHERE id = ?", planID).Scan(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("plan %d: %w", planID, ErrNotFound)
		}
		return tx.Raw(`INSERT INTO runs (plan_id, plan_name, status, started_at, plan_spec)
			VALUES (?, ?, ?, ?, ?) RETURNING id`,
			planID, planName, StatusRunning, startedAt, string(planSpec)).Scan(&id).Error
	})
	if err != nil {
		return nil, fmt.Errorf("store: create run: %w", err)
	}
	return &Run{ID: id, PlanID: planID, PlanName: planName, Status: StatusRunning,
		StartedAt: startedAt, PlanSpec: clone(planSpec), Tags: []string{}}, nil
}

// AppendSample stores one second of a run and the run's running totals in one transaction, so
// the run's list columns always agree with its last stored second. It has committed when it
// returns, which is what bounds a crash's loss to the current second. It returns ErrNotFound if
// the run does not exist; storing the same second twice is an error.
func (s *Store) AppendSample(ctx context.Context, runID int64, smp Sample, p Progress) error {
	err := s.write(ctx, func(tx *gorm.DB) error { return writeSamples(tx, runID, []Sample{smp}, p) })
	if err != nil {
		return fmt.Errorf("store: run %d: append sample %d: %w", runID, smp.Second, err)
	}
	return nil
}

// FinishRun ends a run in one transaction: its status (finished, stopped, failed or
// interrupted), end time, final totals (p.ThresholdsOK, ServerCPUMax, Agents, Degraded included) and error
// message, and its summary JSON with its merged latency histogram (replacing any earlier ones).
// With no summary and no histogram (a run that failed before measuring anything) no summary is
// stored and GetRun's Summary stays nil.
//
// When the write fails because the disk is full, FinishRun frees the store's reserve file (see
// ReserveBytes) and tries once more, so a run can still be marked failed on a full disk.
func (s *Store) FinishRun(ctx context.Context, runID int64, status string, endedAt time.Time, p Progress, summary, hist []byte, errMsg string) error {
	switch status {
	case StatusFinished, StatusStopped, StatusFailed, StatusInterrupted:
	default:
		return fmt.Errorf("store: finish run %d: status %q is not an end status", runID, status)
	}
	if len(summary) == 0 && len(hist) != 0 {
		return fmt.Errorf("store: finish run %d: a histogram without a summary", runID)
	}
	finish := func(tx *gorm.DB) error {
		if err := execRow(tx, `UPDATE runs SET status = ?, ended_at = ?, duration_s = ?, requests = ?, rps = ?,
			p95_ms = ?, error_rate = ?, error = ?, thresholds_ok = ?, server_cpu_max = ?,
			agents = ?, degraded = ? WHERE id = ?`,
			status, endedAt.UTC(), p.DurationS, p.Requests, p.RPS, p.P95Ms, p.ErrorRate, errMsg, p.ThresholdsOK,
			p.ServerCPUMax, max(p.Agents, 0), p.Degraded, runID); err != nil {
			return err
		}
		if len(summary) == 0 {
			return nil
		}
		return tx.Exec(`INSERT INTO run_summaries (run_id, data, hist) VALUES (?, ?, ?)
			ON CONFLICT (run_id) DO UPDATE SET data = excluded.data, hist = excluded.hist`,
			runID, string(summary), nullBlob(hist)).Error
	}
	err := s.write(ctx, finish)
	if sentinel, _ := classify(err); sentinel == ErrDiskFull && s.releaseReserve() {
		err = s.write(ctx, finish)
	}
	if err != nil {
		return fmt.Errorf("store: finish run %d: %w", runID, err)
	}
	return nil
}

// GetRun returns one run with its PlanSpec and Summary, or ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id int64) (*Run, error) {
	var rows []runRow
	err := s.db.WithContext(ctx).Raw(`SELECT r.id, r.plan_id, r.plan_name, r.status, r.started_at,
			r.ended_at, r.duration_s, r.requests, r.rps, r.p95_ms, r.error_rate, r.error, r.thresholds_ok, r.plan_spec,
			r.notes, r.server_cpu_max, r.agents, r.degraded, m.data AS summary
		FROM runs r LEFT JOIN run_summaries m ON m.run_id = r.id
		WHERE r.id = ?`, id).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: get run %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("store: get run %d: %w", id, ErrNotFound)
	}
	r := rows[0].run()
	runs := []Run{r}
	if err := fillTags(s.db.WithContext(ctx), runs); err != nil {
		return nil, fmt.Errorf("store: get run %d: %w", id, err)
	}
	return &runs[0], nil
}

// RunHistogram returns the merged latency histogram stored with a run's summary: nil if it has
// none, ErrNotFound if the run does not exist.
func (s *Store) RunHistogram(ctx context.Context, runID int64) ([]byte, error) {
	var rows []struct {
		Hist []byte `gorm:"column:hist"`
	}
	err := s.db.WithContext(ctx).Raw(`SELECT m.hist FROM runs r LEFT JOIN run_summaries m ON m.run_id = r.id
		WHERE r.id = ?`, runID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: run %d histogram: %w", runID, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("store: run %d histogram: %w", runID, ErrNotFound)
	}
	return orNil(rows[0].Hist), nil
}

// ListRuns returns one page of the runs f selects, in f's order (newest first by default), and
// how many runs it selects in all. PlanSpec and Summary are left nil; Tags are filled.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]Run, int64, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultRunLimit
	}
	limit = min(limit, MaxRunLimit)
	offset := max(f.Offset, 0)
	order, err := f.orderBy()
	if err != nil {
		return nil, 0, fmt.Errorf("store: list runs: %w", err)
	}

	q := s.db.WithContext(ctx).Table("runs")
	if f.PlanID != 0 {
		q = q.Where("plan_id = ?", f.PlanID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Tag != "" {
		q = q.Where("id IN (SELECT run_id FROM run_tags WHERE tag = ?)", f.Tag)
	}
	if !f.From.IsZero() {
		q = q.Where("started_at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		q = q.Where("started_at < ?", f.To.UTC())
	}
	switch f.Thresholds {
	case "":
	case ThresholdsPassed:
		q = q.Where("thresholds_ok = 1")
	case ThresholdsFailed:
		q = q.Where("thresholds_ok = 0")
	default:
		return nil, 0, fmt.Errorf("store: list runs: thresholds filter %q is not passed or failed", f.Thresholds)
	}
	if len(f.Outcomes) > 0 {
		for _, o := range f.Outcomes {
			if !slices.Contains(RunOutcomes, o) {
				return nil, 0, fmt.Errorf("store: list runs: outcome %q is not one of %v", o, RunOutcomes)
			}
		}
		q = q.Where("outcome IN ?", f.Outcomes)
	}
	var total int64
	if err := q.Session(&gorm.Session{}).Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("store: count runs: %w", err)
	}
	var rows []runRow
	err = q.Session(&gorm.Session{}).Select(runListColumns).
		Order(order).Limit(limit).Offset(offset).
		Scan(&rows).Error
	if err != nil {
		return nil, 0, fmt.Errorf("store: list runs: %w", err)
	}
	runs := make([]Run, len(rows))
	for i, r := range rows {
		runs[i] = r.run()
	}
	if err := fillTags(s.db.WithContext(ctx), runs); err != nil {
		return nil, 0, fmt.Errorf("store: list runs: %w", err)
	}
	return runs, total, nil
}

// Samples returns every stored second of a run in order, or ErrNotFound if the run does not
// exist.
func (s *Store) Samples(ctx context.Context, runID int64) ([]Sample, error) {
	db := s.db.WithContext(ctx)
	var rows []struct {
		Second int    `gorm:"column:second"`
		TMs    int64  `gorm:"column:t_ms"`
		Data   []byte `gorm:"column:data"`
		Hist   []byte `gorm:"column:hist"`
	}
	err := db.Raw("SELECT second, t_ms, data, hist FROM run_samples WHERE run_id = ? ORDER BY second", runID).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: run %d samples: %w", runID, err)
	}
	if len(rows) == 0 {
		var n int64
		if err := db.Raw("SELECT count(*) FROM runs WHERE id = ?", runID).Scan(&n).Error; err != nil {
			return nil, fmt.Errorf("store: run %d samples: %w", runID, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("store: run %d samples: %w", runID, ErrNotFound)
		}
	}
	out := make([]Sample, len(rows))
	for i, r := range rows {
		out[i] = Sample{Second: r.Second, TMs: r.TMs, Data: r.Data, Hist: orNil(r.Hist)}
	}
	return out, nil
}

// DeleteRun deletes a run with its samples (its agents' seconds too) and summary, or returns
// ErrNotFound.
func (s *Store) DeleteRun(ctx context.Context, id int64) error {
	return s.deleteRow(ctx, "runs", "run", id)
}
