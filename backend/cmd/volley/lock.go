package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// lockDB takes an exclusive advisory lock on "<db>.lock" so that two servers never share one
// database (each would believe the other's running run was left by a crash).
func lockDB(dbPath string) (unlock func(), err error) {
	f, err := os.OpenFile(dbPath+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("database %s: directory %s does not exist", dbPath, filepath.Dir(dbPath))
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return nil, fmt.Errorf("database %s: cannot create or open its lock file %s.lock (%v): the folder %s must be "+
			"writable; make it writable or give another --db path", dbPath, dbPath, err, filepath.Dir(dbPath))
	}
	if err != nil {
		return nil, fmt.Errorf("lock database: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("database %s is in use by another volley serve (lock %s.lock)", dbPath, dbPath)
		}
		return nil, fmt.Errorf("lock database: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
