package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
)

// ResumableRun is a run over agents a previous process left "running" with what it keeps to be
// taken over by a restarted controller (migrations/00009): ResumableRuns.
type ResumableRun struct {
	ID       int64
	PlanID   int64
	PlanSpec []byte // the run's snapshot of its plan, masked (secret header values replaced)
	Cluster  []byte // the JSON SetRunCluster stored (cluster.Started)
	// LastSecond is the highest second stored in run_samples (0: none): the run goes on from
	// LastSecond + 1.
	LastSecond int
}

// SetRunCluster stores what run runID keeps to be resumed by a restarted controller (data: JSON,
// cluster.Started; nil or empty clears it). ErrNotFound if the run does not exist; JSON that is
// not valid is refused by the column's check.
func (s *Store) SetRunCluster(ctx context.Context, runID int64, data []byte) error {
	var v any
	if len(data) > 0 {
		v = string(data) // TEXT, as json_valid wants (a []byte would be a BLOB)
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		return execRow(tx, "UPDATE runs SET cluster = ? WHERE id = ?", v, runID)
	})
	if err != nil {
		return fmt.Errorf("store: run %d: set cluster: %w", runID, err)
	}
	return nil
}

// ResumableRuns returns the runs still "running" that have a cluster value (SetRunCluster), in
// id order: at start-up, before MarkInterrupted, the runs over agents a restarted controller may
// take over.
func (s *Store) ResumableRuns(ctx context.Context) ([]ResumableRun, error) {
	var rows []struct {
		ID         int64  `gorm:"column:id"`
		PlanID     int64  `gorm:"column:plan_id"`
		PlanSpec   []byte `gorm:"column:plan_spec"`
		Cluster    []byte `gorm:"column:cluster"`
		LastSecond int    `gorm:"column:last_second"`
	}
	err := s.db.WithContext(ctx).Raw(`SELECT r.id, r.plan_id, r.plan_spec, r.cluster,
			coalesce((SELECT max(s.second) FROM run_samples s WHERE s.run_id = r.id), 0) AS last_second
		FROM runs r WHERE r.status = ? AND r.cluster IS NOT NULL ORDER BY r.id`, StatusRunning).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: resumable runs: %w", err)
	}
	out := make([]ResumableRun, len(rows))
	for i, r := range rows {
		out[i] = ResumableRun{ID: r.ID, PlanID: r.PlanID, PlanSpec: r.PlanSpec, Cluster: r.Cluster, LastSecond: r.LastSecond}
	}
	return out, nil
}

// MarkInterrupted is called at start-up, before any run starts: every run still "running" was
// left by a process that died, so it becomes "interrupted" with ended_at set to the end of its
// last stored second (now if it stored none) — except the runs keep names (those a restarted
// controller resumes), which stay "running". Samples and totals are kept. It returns the ids of
// the runs it marked, in id order.
func (s *Store) MarkInterrupted(ctx context.Context, now time.Time, keep ...int64) ([]int64, error) {
	var ids []int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		var all []int64
		if err := tx.Raw("SELECT id FROM runs WHERE status = ? ORDER BY id", StatusRunning).Scan(&all).Error; err != nil {
			return err
		}
		ids = make([]int64, 0, len(all))
		for _, id := range all {
			if slices.Contains(keep, id) {
				continue
			}
			if err := markInterrupted(tx, id, now); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: mark interrupted runs: %w", err)
	}
	return ids, nil
}

// MarkRunInterrupted marks run id "interrupted" as MarkInterrupted does (a resume that could not
// begin). A run that is not "running" is left as it is. ErrNotFound if the run does not exist.
func (s *Store) MarkRunInterrupted(ctx context.Context, id int64, now time.Time) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		var status []string
		if err := tx.Raw("SELECT status FROM runs WHERE id = ?", id).Scan(&status).Error; err != nil {
			return err
		}
		if len(status) == 0 {
			return ErrNotFound
		}
		if status[0] != StatusRunning {
			return nil
		}
		return markInterrupted(tx, id, now)
	})
	if err != nil {
		return fmt.Errorf("store: mark run %d interrupted: %w", id, err)
	}
	return nil
}

// markInterrupted sets run id "interrupted", ended at the end of its last stored second (now if
// it stored none).
func markInterrupted(tx *gorm.DB, id int64, now time.Time) error {
	var last []int64
	err := tx.Raw("SELECT t_ms FROM run_samples WHERE run_id = ? ORDER BY second DESC LIMIT 1", id).Scan(&last).Error
	if err != nil {
		return err
	}
	ended := now.UTC()
	if len(last) > 0 {
		ended = time.UnixMilli(last[0]).UTC()
	}
	res := tx.Exec("UPDATE runs SET status = ?, ended_at = ? WHERE id = ?", StatusInterrupted, ended, id)
	if res.Error == nil && res.RowsAffected == 0 {
		return errors.New("the run vanished")
	}
	return res.Error
}

// EndedRunController is the controller id the agents of run runID were prepared with (its
// cluster column's "controller", SetRunCluster) when the run has ended — any status but
// running; ok is false for a run still running, a run not over agents, and no such run. A
// restarted controller asks it of an agent still running a run it does not drive
// (cluster.Coordinator.SetEndedLookup).
func (s *Store) EndedRunController(ctx context.Context, runID int64) (controller string, ok bool, err error) {
	var rows []struct {
		Status     string  `gorm:"column:status"`
		Controller *string `gorm:"column:controller"`
	}
	err = s.db.WithContext(ctx).Raw(`SELECT status, json_extract(cluster, '$.controller') AS controller
		FROM runs WHERE id = ? AND cluster IS NOT NULL`, runID).Scan(&rows).Error
	if err != nil {
		return "", false, fmt.Errorf("store: run %d: ended run's controller: %w", runID, err)
	}
	if len(rows) == 0 || rows[0].Status == StatusRunning || rows[0].Controller == nil || *rows[0].Controller == "" {
		return "", false, nil
	}
	return *rows[0].Controller, true, nil
}
