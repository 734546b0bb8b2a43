package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Plan is a stored test plan.
type Plan struct {
	ID        int64
	Name      string
	Spec      []byte // the plan JSON, stored verbatim
	CreatedAt time.Time
	UpdatedAt time.Time
}

// planRow is the scan target. Writes bind JSON as a string: the columns are TEXT, and a []byte
// would be stored as a BLOB, which the json_valid checks reject.
type planRow struct {
	ID        int64     `gorm:"column:id"`
	Name      string    `gorm:"column:name"`
	Spec      []byte    `gorm:"column:spec"`
	CreatedAt time.Time `gorm:"column:created_at"`
	UpdatedAt time.Time `gorm:"column:updated_at"`
}

func (r planRow) plan() Plan {
	return Plan{ID: r.ID, Name: r.Name, Spec: r.Spec, CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt)}
}

const planColumns = "id, name, spec, created_at, updated_at"

// CreatePlan stores a new plan. spec must be valid JSON.
func (s *Store) CreatePlan(ctx context.Context, name string, spec []byte) (*Plan, error) {
	now := s.db.NowFunc()
	var id int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Raw("INSERT INTO plans (name, spec, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id",
			name, string(spec), now, now).Scan(&id).Error
	})
	if err != nil {
		return nil, fmt.Errorf("store: create plan: %w", err)
	}
	return &Plan{ID: id, Name: name, Spec: clone(spec), CreatedAt: now, UpdatedAt: now}, nil
}

// UpdatePlan replaces a plan's name and spec. It returns ErrNotFound if there is no such plan.
func (s *Store) UpdatePlan(ctx context.Context, id int64, name string, spec []byte) (*Plan, error) {
	var p *Plan
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := execRow(tx, "UPDATE plans SET name = ?, spec = ?, updated_at = ? WHERE id = ?",
			name, string(spec), s.db.NowFunc(), id); err != nil {
			return err
		}
		var err error
		p, err = getPlan(tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: update plan %d: %w", id, err)
	}
	return p, nil
}

// GetPlan returns one plan, or ErrNotFound.
func (s *Store) GetPlan(ctx context.Context, id int64) (*Plan, error) {
	p, err := getPlan(s.db.WithContext(ctx), id)
	if err != nil {
		return nil, fmt.Errorf("store: get plan %d: %w", id, err)
	}
	return p, nil
}

func getPlan(db *gorm.DB, id int64) (*Plan, error) {
	var rows []planRow
	if err := db.Raw("SELECT "+planColumns+" FROM plans WHERE id = ?", id).Scan(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, ErrNotFound
	}
	p := rows[0].plan()
	return &p, nil
}

// ListPlans returns every plan, the most recently updated first.
func (s *Store) ListPlans(ctx context.Context) ([]Plan, error) {
	var rows []planRow
	err := s.db.WithContext(ctx).
		Raw("SELECT " + planColumns + " FROM plans ORDER BY updated_at DESC, id DESC").
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("store: list plans: %w", err)
	}
	plans := make([]Plan, len(rows))
	for i, r := range rows {
		plans[i] = r.plan()
	}
	return plans, nil
}

// DeletePlan deletes a plan and, through the foreign keys, its runs with their samples and
// summaries. It returns ErrNotFound if there is no such plan.
func (s *Store) DeletePlan(ctx context.Context, id int64) error {
	return s.deleteRow(ctx, "plans", "plan", id)
}

// deleteRow deletes row id of table (a constant of this package), or returns ErrNotFound; what
// names the row in the error.
func (s *Store) deleteRow(ctx context.Context, table, what string, id int64) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return execRow(tx, "DELETE FROM "+table+" WHERE id = ?", id)
	})
	if err != nil {
		return fmt.Errorf("store: delete %s %d: %w", what, id, err)
	}
	return nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// execRow runs a statement meant for one row (an UPDATE or DELETE by key): ErrNotFound when it
// touched none.
func execRow(tx *gorm.DB, sql string, args ...any) error {
	res := tx.Exec(sql, args...)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}
