package store

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"gorm.io/gorm"
)

// Values of RunFilter.Thresholds.
const (
	ThresholdsPassed = "passed"
	ThresholdsFailed = "failed"
)

// RunOutcomes are the values of the runs.outcome column (migrations/00010, which computes it
// from status, requests, error_rate and thresholds_ok as metrics.OutcomeOf does) and of
// RunFilter.Outcomes; a running run's outcome is NULL.
var RunOutcomes = []string{"passed", "finished_with_errors", "failed", "stopped"}

// Tag and note bounds (the API validates against them; the store refuses anything else too).
const (
	MaxTags     = 20
	MaxTagLen   = 40
	MaxNotesLen = 10_000 // bytes
)

// tagRE is a valid tag: 1–40 characters of a-z, 0-9, '.', '_' and '-'.
var tagRE = regexp.MustCompile(`^[a-z0-9._-]{1,40}$`)

// ValidTag reports whether t is a valid tag.
func ValidTag(t string) bool { return tagRE.MatchString(t) }

// SortColumns are the columns ListRuns can order by (each has an index, migrations/00003 and
// 00007). Runs whose column is NULL (server_cpu_max unknown) come first in ascending order, last
// in descending order.
var SortColumns = []string{"started_at", "duration_s", "requests", "rps", "p95_ms", "error_rate", "server_cpu_max"}

// orderBy is the ORDER BY clause of f, built only from the allow-listed names above.
func (f RunFilter) orderBy() (string, error) {
	col := f.Sort
	if col == "" {
		col = "started_at"
	}
	if !slices.Contains(SortColumns, col) {
		return "", fmt.Errorf("cannot sort by %q", f.Sort)
	}
	dir := "DESC"
	switch f.Order {
	case "", "desc":
	case "asc":
		dir = "ASC"
	default:
		return "", fmt.Errorf("order %q is not asc or desc", f.Order)
	}
	return col + " " + dir + ", id " + dir, nil
}

// fillTags sets the Tags of runs (sorted; empty, never nil) with one query.
func fillTags(db *gorm.DB, runs []Run) error {
	if len(runs) == 0 {
		return nil
	}
	ids := make([]int64, len(runs))
	at := make(map[int64]int, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
		at[runs[i].ID] = i
		runs[i].Tags = []string{}
	}
	var rows []struct {
		RunID int64  `gorm:"column:run_id"`
		Tag   string `gorm:"column:tag"`
	}
	if err := db.Raw("SELECT run_id, tag FROM run_tags WHERE run_id IN ? ORDER BY run_id, tag", ids).Scan(&rows).Error; err != nil {
		return fmt.Errorf("tags: %w", err)
	}
	for _, r := range rows {
		i := at[r.RunID]
		runs[i].Tags = append(runs[i].Tags, r.Tag)
	}
	return nil
}

// UpdateRunMeta sets a run's notes (when notes is not nil) and replaces its tags (when tags is
// not nil; duplicates are dropped) in one transaction, and returns the run as GetRun does. It
// returns ErrNotFound if there is no such run. It works on a running run too: it touches only
// notes and tags, never the columns the run's samples update.
func (s *Store) UpdateRunMeta(ctx context.Context, id int64, notes *string, tags *[]string) (*Run, error) {
	if notes != nil && len(*notes) > MaxNotesLen {
		return nil, fmt.Errorf("store: run %d: notes are longer than %d bytes", id, MaxNotesLen)
	}
	var set []string
	if tags != nil {
		set = slices.Clone(*tags)
		slices.Sort(set)
		set = slices.Compact(set)
		if len(set) > MaxTags {
			return nil, fmt.Errorf("store: run %d: %d tags, at most %d", id, len(set), MaxTags)
		}
		for _, t := range set {
			if !ValidTag(t) {
				return nil, fmt.Errorf("store: run %d: invalid tag %q", id, t)
			}
		}
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Raw("SELECT count(*) FROM runs WHERE id = ?", id).Scan(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		if notes != nil {
			if err := tx.Exec("UPDATE runs SET notes = ? WHERE id = ?", *notes, id).Error; err != nil {
				return err
			}
		}
		if tags != nil {
			if err := tx.Exec("DELETE FROM run_tags WHERE run_id = ?", id).Error; err != nil {
				return err
			}
			for _, t := range set {
				if err := tx.Exec("INSERT INTO run_tags (run_id, tag) VALUES (?, ?)", id, t).Error; err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: update run %d: %w", id, err)
	}
	return s.GetRun(ctx, id)
}

// PreviousRun returns the latest run of the same plan that started before run id and has a
// summary (so it can be compared), as GetRun does. It returns ErrNotFound if run id does not exist
// or has no such predecessor.
func (s *Store) PreviousRun(ctx context.Context, id int64) (*Run, error) {
	db := s.db.WithContext(ctx)
	var n int64
	if err := db.Raw("SELECT count(*) FROM runs WHERE id = ?", id).Scan(&n).Error; err != nil {
		return nil, fmt.Errorf("store: previous of run %d: %w", id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("store: previous of run %d: %w", id, ErrNotFound)
	}
	// Compared in SQL, on the stored text, so the time never round-trips through Go.
	var prev []int64
	err := db.Raw(`SELECT r.id FROM runs r, runs c
		WHERE c.id = ? AND r.plan_id = c.plan_id
			AND (r.started_at < c.started_at OR (r.started_at = c.started_at AND r.id < c.id))
			AND EXISTS (SELECT 1 FROM run_summaries m WHERE m.run_id = r.id)
		ORDER BY r.started_at DESC, r.id DESC LIMIT 1`, id).Scan(&prev).Error
	if err != nil {
		return nil, fmt.Errorf("store: previous of run %d: %w", id, err)
	}
	if len(prev) == 0 {
		return nil, fmt.Errorf("store: run %d has no previous run with a summary: %w", id, ErrNotFound)
	}
	return s.GetRun(ctx, prev[0])
}

// PlanTrend returns the latest limit (1–MaxRunLimit; 0 means DefaultRunLimit) ended runs of a
// plan, oldest first, with their list columns (no tags). It returns ErrNotFound if there is no
// such plan.
func (s *Store) PlanTrend(ctx context.Context, planID int64, limit int) ([]Run, error) {
	if limit <= 0 {
		limit = DefaultRunLimit
	}
	limit = min(limit, MaxRunLimit)
	db := s.db.WithContext(ctx)
	var n int64
	if err := db.Raw("SELECT count(*) FROM plans WHERE id = ?", planID).Scan(&n).Error; err != nil {
		return nil, fmt.Errorf("store: plan %d trend: %w", planID, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("store: plan %d trend: %w", planID, ErrNotFound)
	}
	var rows []runRow
	err := db.Raw("SELECT "+runListColumns+` FROM runs WHERE plan_id = ? AND status != ?
		ORDER BY started_at DESC, id DESC LIMIT ?`, planID, StatusRunning, limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: plan %d trend: %w", planID, err)
	}
	runs := make([]Run, len(rows))
	for i, r := range rows {
		runs[len(rows)-1-i] = r.run()
	}
	return runs, nil
}
