package store

import (
	"context"

	"gorm.io/gorm"
)

// Write runs fn in one IMMEDIATE transaction as the store's single in-process writer (see
// maxOpenConns), for packages that own tables of their own in this database (auth). fn's error,
// or the commit's, is returned as is; ctx bounds the wait for the writer slot.
func (s *Store) Write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.write(ctx, fn)
}

// Read returns the handle for reads bound to ctx (reads never wait for the writer in WAL mode).
func (s *Store) Read(ctx context.Context) *gorm.DB { return s.db.WithContext(ctx) }
