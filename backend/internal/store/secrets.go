package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// SecretInfo is what may be shown of a stored secret: its name and times, never its value.
type SecretInfo struct {
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

type secretRow struct {
	Name      string    `gorm:"column:name"`
	CreatedAt time.Time `gorm:"column:created_at"`
	UpdatedAt time.Time `gorm:"column:updated_at"`
}

// ListSecrets returns every secret's name and times, by name. Values are not read.
func (s *Store) ListSecrets(ctx context.Context) ([]SecretInfo, error) {
	var rows []secretRow
	if err := s.db.WithContext(ctx).Raw("SELECT name, created_at, updated_at FROM secrets ORDER BY name").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: list secrets: %w", err)
	}
	out := make([]SecretInfo, len(rows))
	for i, r := range rows {
		out[i] = SecretInfo{Name: r.Name, CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt)}
	}
	return out, nil
}

// PutSecret sets a secret's value, creating it (created true) or replacing it. The caller
// validates name and value; errors never carry the value.
func (s *Store) PutSecret(ctx context.Context, name, value string) (info *SecretInfo, created bool, err error) {
	now := s.db.NowFunc()
	err = s.write(ctx, func(tx *gorm.DB) error {
		var rows []secretRow
		if err := tx.Raw("SELECT name, created_at, updated_at FROM secrets WHERE name = ?", name).Scan(&rows).Error; err != nil {
			return err
		}
		info = &SecretInfo{Name: name, CreatedAt: now, UpdatedAt: now}
		if len(rows) == 0 {
			created = true
			return tx.Exec("INSERT INTO secrets (name, value, created_at, updated_at) VALUES (?, ?, ?, ?)", name, value, now, now).Error
		}
		info.CreatedAt = utc(rows[0].CreatedAt)
		return tx.Exec("UPDATE secrets SET value = ?, updated_at = ? WHERE name = ?", value, now, name).Error
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: put secret %q: %w", name, err)
	}
	return info, created, nil
}

// DeleteSecret deletes a secret, or returns ErrNotFound.
func (s *Store) DeleteSecret(ctx context.Context, name string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return execRow(tx, "DELETE FROM secrets WHERE name = ?", name)
	})
	if err != nil {
		return fmt.Errorf("store: delete secret %q: %w", name, err)
	}
	return nil
}

// SecretValues returns the values of the named secrets that exist (a missing name is simply
// absent from the map: the caller names what is missing). It is the only read of values.
func (s *Store) SecretValues(ctx context.Context, names []string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	if len(names) == 0 {
		return out, nil
	}
	var rows []struct {
		Name  string `gorm:"column:name"`
		Value string `gorm:"column:value"`
	}
	if err := s.db.WithContext(ctx).Raw("SELECT name, value FROM secrets WHERE name IN ?", names).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("store: read secrets: %w", err)
	}
	for _, r := range rows {
		out[r.Name] = r.Value
	}
	return out, nil
}
