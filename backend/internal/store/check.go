package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mattn/go-sqlite3"
	"golang.org/x/sys/unix"

	"github.com/volley-load/volley/migrations"
)

// ApplicationID is the SQLite application_id (the 32-bit integer at offset 68 of the file's
// header) of every Volley database: 0x566F6C6C, "Voll" in ASCII. Open sets it on a new database
// and on a Volley database made before it was introduced, and refuses a file with any other
// value: such a file belongs to another application.
const ApplicationID int32 = 0x566F6C6C

// Why Open refuses a database file. Open's errors wrap one of these (test with errors.Is); their
// text says what is wrong and what to do.
var (
	// ErrNotVolley: the file is not a SQLite database, or belongs to another application (another
	// application_id, or tables Volley does not know).
	ErrNotVolley = errors.New("not a Volley database")
	// ErrEmptyFile: an existing file of zero bytes (SQLite would silently make it a database).
	ErrEmptyFile = errors.New("empty file")
	// ErrDamaged: SQLite's integrity_check found damage (or reading the file reported it).
	ErrDamaged = errors.New("database is damaged")
	// ErrReadOnly: the file, its -wal or -shm, or its folder cannot be written.
	ErrReadOnly = errors.New("database is read-only")
	// ErrLocked: another program holds a lock on the database for longer than the busy timeout.
	ErrLocked = errors.New("database is locked")
	// ErrDiskFull: the disk (or the filesystem's quota) is full.
	ErrDiskFull = errors.New("disk is full")
)

// legacyTables are the tables a Volley database may hold: goose's version table and every table
// a migration creates. A file without an application_id — made before ApplicationID existed, or
// rebuilt from a dump (sqlite3 .dump/.recover do not carry the id) — is taken as Volley's only
// when it has goose's version table, plans and runs, and no table outside this list.
var legacyTables = volleyTables()

// createTable finds the table names in the migrations' CREATE TABLE statements.
var createTable = regexp.MustCompile(`(?i)CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["'\x60]?(\w+)`)

func volleyTables() []string {
	names := []string{"goose_db_version"}
	files, _ := fs.Glob(migrations.FS, "*.sql")
	for _, f := range files {
		b, _ := fs.ReadFile(migrations.FS, f)
		up, _, _ := strings.Cut(string(b), "-- +goose Down")
		for _, m := range createTable.FindAllStringSubmatch(up, -1) {
			names = append(names, m[1])
		}
	}
	return names
}

// FaultReason says in a few words what a storage error means to a user ("the disk is full",
// "the database is locked by another program", …), or "" when err is not a recognised storage
// fault.
func FaultReason(err error) string {
	_, reason := classify(err)
	return reason
}

// classify maps a SQLite error to one of Open's sentinel errors and a short reason.
func classify(err error) (error, string) {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return nil, ""
	}
	switch se.Code {
	case sqlite3.ErrFull:
		return ErrDiskFull, "the disk is full"
	case sqlite3.ErrIoErr:
		return nil, "the disk or filesystem reported an I/O error"
	case sqlite3.ErrBusy, sqlite3.ErrLocked:
		return ErrLocked, "the database is locked by another program"
	case sqlite3.ErrReadonly:
		return ErrReadOnly, "the database has become read-only"
	case sqlite3.ErrCorrupt:
		return ErrDamaged, "the database file is damaged"
	case sqlite3.ErrNotADB:
		return ErrNotVolley, "the file is not a SQLite database"
	case sqlite3.ErrCantOpen:
		return nil, "the database file cannot be opened"
	case sqlite3.ErrPerm, sqlite3.ErrAuth:
		return ErrReadOnly, "the database may not be written"
	}
	return nil, ""
}

// recoverHint is the command that salvages what can still be read from a damaged database. Some
// sqlite3 shells (Debian's) are built without .recover; .dump works there, but ends a dump that
// met damage with ROLLBACK, which the sed turns into COMMIT.
func recoverHint(path string) string {
	return fmt.Sprintf(`to salvage what can still be read: sqlite3 %s ".recover" | sqlite3 recovered.db `+
		`(if your sqlite3 has no .recover: sqlite3 %s .dump | sed 's/^ROLLBACK; -- due to errors$/COMMIT;/' | sqlite3 recovered.db), `+
		"then start Volley with --db recovered.db and keep the damaged file until you have checked the result", path, path)
}

// prepare checks the file system before SQLite sees the path: the folder must be writable; a
// missing file is created empty with mode 0600 (so SQLite keeps that mode for it and its -wal
// and -shm); an existing one must be a non-empty regular file that Volley may write. created
// reports whether the file was made here.
func prepare(path, abs, dir string) (created bool, err error) {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return false, fmt.Errorf("store: database %s: the folder %s is not writable (%v): Volley writes the "+
			"database and its -wal and -shm files there; make the folder writable or give another --db path: %w",
			path, dir, err, ErrReadOnly)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return false, fmt.Errorf("store: create database %s: %w", path, err)
		}
		return true, f.Close()
	}
	if err != nil {
		return false, fmt.Errorf("store: database %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("store: database %s is not a regular file", path)
	}
	if fi.Size() == 0 {
		return false, fmt.Errorf("store: database %s is an empty (zero-byte) file, not a Volley database; Volley does "+
			"not write into a file it did not create: delete it (rm %s) to let Volley create a new database there, "+
			"or give another --db path: %w", path, path, ErrEmptyFile)
	}
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		err := unix.Access(p, unix.W_OK)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return false, fmt.Errorf("store: database %s: %s cannot be written (%v): Volley needs to write its database; "+
			"make it writable (chmod u+w, or remount the filesystem read-write) or give another --db path: %w",
			path, p, err, ErrReadOnly)
	}
	return false, nil
}

// sideFiles reports which of the database's -wal and -shm exist.
func sideFiles(abs string) [2]bool {
	var have [2]bool
	for i, p := range []string{abs + "-wal", abs + "-shm"} {
		_, err := os.Lstat(p)
		have[i] = err == nil
	}
	return have
}

// removeNewSideFiles removes the -wal and -shm that reading a refused WAL-mode file created
// (they did not exist before and the -wal is empty): a refused file is left as it was found.
func removeNewSideFiles(abs string, before [2]bool) {
	if before[0] || before[1] {
		return
	}
	if fi, err := os.Stat(abs + "-wal"); err == nil && fi.Size() > 0 {
		return
	}
	_ = os.Remove(abs + "-wal")
	_ = os.Remove(abs + "-shm")
}

// narrowModes removes the group and other permissions of the database, its -wal and -shm (best
// effort: only the owner, or root, may).
func narrowModes(abs string) {
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(p, fi.Mode().Perm()&0o700)
		}
	}
}

// inspect reads an existing file through a read-only connection, before anything writes to it,
// and decides whether it is Volley's: its application_id is ApplicationID, or it is 0 and the file
// is empty of tables or holds exactly a pre-ApplicationID Volley schema (then needsID is true).
// It then runs PRAGMA integrity_check (unless told not to). Measured on a 119 MB Volley-schema
// database, warm cache, on a busy 2-core machine: through Volley's SQLite (3.54.1) quick_check
// 0.41–0.73 s and integrity_check 0.53–0.84 s (6 rounds each); with the sqlite3 3.40 shell 1.1–2.0 s
// and 1.7–2.1 s; cold cache ~14 s both (disk-bound). For ~15 % more, integrity_check also proves
// every index agrees with its table (a wrong index makes history filters and sorting lie), which
// quick_check leaves out.
func inspect(ctx context.Context, path, abs string, integrityCheck bool) (needsID bool, err error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "5000")
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return false, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	fail := func(what string, err error) error {
		sentinel, reason := classify(err)
		switch sentinel {
		case ErrNotVolley:
			return fmt.Errorf("store: %s is not a SQLite database (%v); Volley does not write into files that are "+
				"not its own: give another --db path: %w", path, err, ErrNotVolley)
		case ErrDamaged:
			return fmt.Errorf("store: %s is damaged (%v); Volley will not write into it; %s: %w",
				path, err, recoverHint(path), ErrDamaged)
		case ErrLocked:
			return fmt.Errorf("store: %s: %s (%v); close the other program (another volley, the sqlite3 shell, "+
				"a backup) and start again: %w", path, reason, err, ErrLocked)
		case nil:
			return fmt.Errorf("store: %s: %s: %w", path, what, err)
		}
		return fmt.Errorf("store: %s: %s (%v): %w", path, reason, err, sentinel)
	}

	var appID int32
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return false, fail("read application_id", err)
	}
	if appID != 0 && appID != ApplicationID {
		return false, fmt.Errorf("store: %s belongs to another application (SQLite application_id %d, 0x%08X; "+
			"Volley's is 0x%08X); Volley does not write into other applications' databases: give another --db path: %w",
			path, appID, uint32(appID), uint32(ApplicationID), ErrNotVolley)
	}
	var tables []string
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return false, fail("list tables", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return false, fail("list tables", err)
		}
		tables = append(tables, name)
	}
	if err := rows.Close(); err != nil {
		return false, fail("list tables", err)
	}
	if err := rows.Err(); err != nil {
		return false, fail("list tables", err)
	}
	if appID == 0 && len(tables) > 0 {
		var foreign []string
		for _, t := range tables {
			if !slices.Contains(legacyTables, t) {
				foreign = append(foreign, t)
			}
		}
		ours := slices.Contains(tables, "goose_db_version") && slices.Contains(tables, "plans") && slices.Contains(tables, "runs")
		if len(foreign) > 0 || !ours {
			what := "it lacks Volley's tables"
			if len(foreign) > 0 {
				if len(foreign) > 5 {
					foreign = append(foreign[:5], "…")
				}
				what = "it holds tables Volley does not know (" + strings.Join(foreign, ", ") + ")"
			}
			return false, fmt.Errorf("store: %s is a SQLite database of another application: %s; Volley does not "+
				"write into other applications' databases: give another --db path: %w", path, what, ErrNotVolley)
		}
	}

	if !integrityCheck {
		return appID == 0, nil
	}
	rows, err = db.QueryContext(ctx, "PRAGMA integrity_check(5)")
	if err != nil {
		return false, fail("integrity_check", err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return false, fail("integrity_check", err)
		}
		problems = append(problems, line)
	}
	if err := rows.Close(); err != nil {
		return false, fail("integrity_check", err)
	}
	if err := rows.Err(); err != nil {
		return false, fail("integrity_check", err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		return false, fmt.Errorf("store: %s is damaged (integrity_check: %s); Volley will not write into it; %s: %w",
			path, strings.Join(problems, "; "), recoverHint(path), ErrDamaged)
	}
	return appID == 0, nil
}

// openFault turns an error from the first writes of Open (application_id, the write probe, the
// migrations) into a message that says what to do.
func openFault(path, what string, err error) error {
	sentinel, reason := classify(err)
	switch sentinel {
	case ErrLocked:
		return fmt.Errorf("store: %s: %s (%v); close the other program (another volley, the sqlite3 shell, "+
			"a backup) and start again: %w", path, reason, err, ErrLocked)
	case ErrReadOnly:
		return fmt.Errorf("store: %s cannot be written (%v); make the file and its folder writable or give another "+
			"--db path: %w", path, err, ErrReadOnly)
	case ErrDiskFull:
		return fmt.Errorf("store: %s: the disk is full (%v); free some space and start again: %w", path, err, ErrDiskFull)
	case ErrDamaged:
		return fmt.Errorf("store: %s is damaged (%v); %s: %w", path, err, recoverHint(path), ErrDamaged)
	case nil:
		return fmt.Errorf("store: %s %s: %w", what, path, err)
	}
	return fmt.Errorf("store: %s: %s (%v): %w", path, reason, err, sentinel)
}
