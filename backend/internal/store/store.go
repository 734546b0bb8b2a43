// Package store owns Volley's SQLite database through gorm: plans, runs, their per-second samples
// and their end-of-run summaries and merged histograms.
//
// The schema is owned by migrations/ and applied with goose when the store opens; gorm's
// AutoMigrate is never used, so the SQL files are the one description of the schema.
//
// The store imports only the standard library, gorm, the SQLite driver (and mattn/go-sqlite3 for
// its error codes), goose, golang.org/x/sys/unix and migrations. It
// does not know the shape of a plan, a sample or a summary: they come in and go out as the JSON
// bytes the API serves, and histograms as opaque encoded bytes.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/volley-load/volley/migrations"
)

// ErrNotFound is returned (wrapped) when the plan or run asked for does not exist.
var ErrNotFound = errors.New("not found")

// Run statuses.
const (
	StatusRunning     = "running"
	StatusFinished    = "finished"
	StatusStopped     = "stopped"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// maxOpenConns bounds the pool. In WAL mode readers never block the writer nor each other, so a
// few connections let the API list and read while a run appends its samples. SQLite still allows
// one writer at a time; rather than letting writers collide inside SQLite (and sleep in its busy
// handler), writes are serialised in-process by Store.wsem and use BEGIN IMMEDIATE, so a write
// transaction never has to upgrade a read lock and never fails with "database is locked". The
// busy timeout stays as a guard against other processes (the sqlite3 shell, a backup) and
// checkpoints.
const maxOpenConns = 4

// Store is Volley's database. It is safe for concurrent use.
type Store struct {
	db   *gorm.DB
	wsem chan struct{} // one-slot semaphore: the single in-process writer

	rmu     sync.Mutex
	reserve string // the reserve file's path, "" when there is none (reserve.go)
}

// Open opens (creating it if needed) the SQLite database file at path and applies every pending
// migration. The file's directory must exist and be writable.
//
// Before anything is written, Open refuses (with an error that says why and what to do, wrapping
// ErrNotVolley, ErrEmptyFile, ErrDamaged, ErrReadOnly or ErrLocked): a zero-byte file; a file that
// is not a SQLite database or belongs to another application (see ApplicationID); a file that
// PRAGMA integrity_check finds damaged; a file, -wal, -shm or folder it may not write; a database
// another program keeps locked. A new file is created with mode 0600 (SQLite gives its -wal and
// -shm the same mode); an existing one loses its group and other permissions.
//
// Every connection runs with journal_mode=WAL, foreign_keys=ON, busy_timeout=5000 and
// synchronous=NORMAL. Durability trade-off: in WAL mode with synchronous=NORMAL a commit is written
// to the WAL (so it survives the process crashing or being killed, which is what Volley's promise "a
// crash loses at most the current second" is about) but is fsynced only at checkpoints, so an OS
// crash or power cut may lose the last few commits. synchronous=FULL would fsync each
// AppendSample, one disk flush per second per run for protection against power loss we do not
// promise.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// Options adjust OpenWith.
type Options struct {
	// SkipIntegrityCheck leaves out PRAGMA integrity_check (every other check stays), for
	// short-lived readers such as `volley compare` on a database `volley serve` checks when it
	// starts: the check reads the whole file (0.5–2 s per 100 MB, more from a cold disk).
	SkipIntegrityCheck bool
	// SlowLog is where statements slower than 500 ms are logged; nil is os.Stderr. Tests give
	// their own test log: on a busy machine a slow statement is expected, not news for stderr.
	SlowLog io.Writer
}

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	if path == ":memory:" || len(path) >= 5 && path[:5] == "file:" {
		return nil, fmt.Errorf("store: %q: give a file path (in-memory and URI databases are not supported)", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: database path %q: %w", path, err)
	}
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("store: database %s: directory %s does not exist", path, dir)
		}
		return nil, fmt.Errorf("store: database %s: %w", path, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("store: database %s: %s is not a directory", path, dir)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("store: database %s is a directory", path)
	}
	ctx := context.Background()
	created, err := prepare(path, abs, dir)
	if err != nil {
		return nil, err
	}
	needsID := created
	if !created {
		side := sideFiles(abs)
		if needsID, err = inspect(ctx, path, abs, !o.SkipIntegrityCheck); err != nil {
			removeNewSideFiles(abs, side)
			return nil, err
		}
		narrowModes(abs) // only once the file is known to be Volley's
	}
	slowLog := o.SlowLog
	if slowLog == nil {
		slowLog = os.Stderr
	}
	s, err := open(ctx, path, abs, needsID, slowLog)
	if err != nil && created {
		// Nothing of the user's is in a file made by this call: leave no half-made database.
		for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
			_ = os.Remove(p)
		}
	}
	return s, err
}

// open opens the pool on a file prepare and inspect have accepted, sets the application_id when
// needsID, proves the file writable and applies the migrations.
func open(ctx context.Context, path, abs string, needsID bool, slowLog io.Writer) (*Store, error) {
	// A file: URI so that any character in the path is escaped; mattn/go-sqlite3 reads the
	// underscore parameters and applies them to every new connection, SQLite ignores them.
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	q.Set("_busy_timeout", "5000")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()

	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{
		SkipDefaultTransaction: true, // every write below chooses its own transaction
		NowFunc:                func() time.Time { return time.Now().UTC() },
		Logger:                 dbLogger(slowLog, 500*time.Millisecond),
	})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	sqlDB.SetMaxOpenConns(maxOpenConns)
	sqlDB.SetMaxIdleConns(maxOpenConns)
	sqlDB.SetConnMaxLifetime(0)
	sqlDB.SetConnMaxIdleTime(0)
	s := &Store{db: db, wsem: make(chan struct{}, 1)}

	var mode string
	if err := db.WithContext(ctx).Raw("PRAGMA journal_mode").Scan(&mode).Error; err != nil {
		_ = sqlDB.Close()
		return nil, openFault(path, "open", err)
	}
	if mode != "wal" {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("store: open %s: journal_mode is %q, want wal (does the filesystem support it?)", path, mode)
	}

	// goose's Provider rather than its package-level functions (SetBaseFS, SetDialect): those are
	// global state, which two stores opened at once (parallel tests) would race on. It uses the
	// same goose_db_version table. It is given gorm's *sql.DB and never closed (that would close
	// the pool).
	prov, err := goose.NewProvider(goose.DialectSQLite3, sqlDB, migrations.FS,
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	s.wsem <- struct{}{}
	err = s.claim(ctx, needsID)
	if err != nil {
		err = openFault(path, "open", err)
	} else if _, err = prov.Up(ctx); err != nil {
		err = openFault(path, "migrate", err)
	}
	<-s.wsem
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	if makeReserve(abs) {
		s.reserve = reservePath(abs)
	}
	return s, nil
}

// errProbe rolls back claim's probe transaction.
var errProbe = errors.New("write probe")

// claim marks the database as Volley's (when needsID) or else proves it writable with a write
// that is rolled back: SQLite opens a file it may not write read-only without a word, and every
// later write would fail. Both take the write lock, so a lock held by another program shows
// here (after the busy timeout) rather than in the first run.
func (s *Store) claim(ctx context.Context, needsID bool) error {
	if needsID {
		return s.db.WithContext(ctx).Exec(fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)).Error
	}
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("CREATE TABLE volley_write_probe (x)").Error; err != nil {
			return err
		}
		return errProbe
	})
	if errors.Is(err, errProbe) {
		return nil
	}
	return err
}

// Close closes the database.
func (s *Store) Close() error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// DB returns the underlying gorm handle, for tests.
func (s *Store) DB() *gorm.DB { return s.db }

// write runs fn in one IMMEDIATE transaction while holding the in-process writer slot, so writers
// queue here (honouring ctx) instead of in SQLite's busy handler.
func (s *Store) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	select {
	case s.wsem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.wsem }()
	return s.db.WithContext(ctx).Transaction(fn)
}

// nullBlob turns an empty byte slice into SQL NULL (the driver binds a nil []byte as NULL but an
// empty one as a zero-length blob).
func nullBlob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// orNil normalises a scanned blob: NULL and zero-length both read back as nil.
func orNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// dbLogger is gorm's logger for the store: statements slower than slow are logged to w, with "?"
// in place of their values (ParameterizedQueries), so plans, secrets and notes never reach a log.
func dbLogger(w io.Writer, slow time.Duration) logger.Interface {
	return slowOnly{logger.New(log.New(w, "store: ", log.LstdFlags), logger.Config{
		SlowThreshold:        slow,
		LogLevel:             logger.Warn,
		ParameterizedQueries: true,
	})}
}

// slowOnly logs slow statements but not failed ones: every error is returned to the caller, who
// decides whether it is worth a log line (a duplicate or a missing row usually is not).
type slowOnly struct{ logger.Interface }

func (l slowOnly) LogMode(level logger.LogLevel) logger.Interface {
	return slowOnly{l.Interface.LogMode(level)}
}

func (l slowOnly) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), _ error) {
	l.Interface.Trace(ctx, begin, fc, nil)
}

// ParamsFilter passes gorm's question (which values may a logged statement show) on to the
// wrapped logger; without it gorm would not see the wrapped logger's ParameterizedQueries.
func (l slowOnly) ParamsFilter(ctx context.Context, sql string, params ...any) (string, []any) {
	if f, ok := l.Interface.(gorm.ParamsFilter); ok {
		return f.ParamsFilter(ctx, sql, params...)
	}
	return sql, params
}

func utc(t time.Time) time.Time { return t.UTC() }
