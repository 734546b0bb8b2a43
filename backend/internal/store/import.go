package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// AppendSamples stores several seconds of a run and the run's totals in one transaction: an
// imported run's seconds (POST /api/runs/import), which one AppendSample each would write one
// commit at a time. It returns ErrNotFound if the run does not exist; a second stored twice is an
// error and then none is stored.
func (s *Store) AppendSamples(ctx context.Context, runID int64, smps []Sample, p Progress) error {
	err := s.write(ctx, func(tx *gorm.DB) error { return writeSamples(tx, runID, smps, p) })
	if err != nil {
		return fmt.Errorf("store: run %d: append %d samples: %w", runID, len(smps), err)
	}
	return nil
}

// writeSamples updates a run's totals and inserts its seconds in tx: ErrNotFound when the run
// does not exist.
func writeSamples(tx *gorm.DB, runID int64, smps []Sample, p Progress) error {
	if err := execRow(tx, `UPDATE runs SET duration_s = ?, requests = ?, rps = ?, p95_ms = ?, error_rate = ?
		WHERE id = ?`, p.DurationS, p.Requests, p.RPS, p.P95Ms, p.ErrorRate, runID); err != nil {
		return err
	}
	for _, smp := range smps {
		if err := tx.Exec("INSERT INTO run_samples (run_id, second, t_ms, data, hist) VALUES (?, ?, ?, ?, ?)",
			runID, smp.Second, smp.TMs, string(smp.Data), nullBlob(smp.Hist)).Error; err != nil {
			if len(smps) > 1 {
				return fmt.Errorf("second %d: %w", smp.Second, err)
			}
			return err
		}
	}
	return nil
}
