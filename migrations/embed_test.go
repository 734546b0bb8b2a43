package migrations

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"github.com/pressly/goose/v3"
)

func TestFilesAreNumberedGooseMigrations(t *testing.T) {
	names, err := fs.Glob(FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no migrations embedded")
	}
	valid := regexp.MustCompile(`^\d{5}_[a-z0-9_]+\.sql$`)
	for _, name := range names {
		if !valid.MatchString(name) {
			t.Errorf("%s: want NNNNN_snake_name.sql", name)
		}
		b, _ := fs.ReadFile(FS, name)
		up, down := strings.Index(string(b), "-- +goose Up"), strings.Index(string(b), "-- +goose Down")
		if up < 0 || down < up {
			t.Errorf("%s: want a '-- +goose Up' section followed by a '-- +goose Down' one", name)
		}
	}
}

// Every migration goes up, down to nothing and up again on a real SQLite file.
func TestUpDownUp(t *testing.T) {
	db, prov := openProvider(t)
	ctx := t.Context()
	tables := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master
			WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'goose_db_version'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := prov.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	// one table per CREATE TABLE in the files (none of them drops a table on the way up)
	want := 0
	for _, src := range prov.ListSources() {
		b, _ := fs.ReadFile(FS, filepath.Base(src.Path))
		up, _, _ := strings.Cut(string(b), "-- +goose Down")
		want += strings.Count(up, "CREATE TABLE ")
	}
	if n := tables(); n != want || want < 5 {
		t.Errorf("after up: %d tables, want %d", n, want)
	}
	if _, err := prov.DownTo(ctx, 0); err != nil {
		t.Fatalf("down: %v", err)
	}
	if n := tables(); n != 0 {
		t.Errorf("after down: %d tables left", n)
	}
	if _, err := prov.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	srcs := prov.ListSources()
	if v, err := prov.GetDBVersion(ctx); err != nil || v != srcs[len(srcs)-1].Version {
		t.Errorf("version %d, %v; want %d", v, err, srcs[len(srcs)-1].Version)
	}
}

// Runs stored before migration 00006 have an outcome as soon as it is applied (the rule of 00010
// once every migration is: a run stopped before any request is "stopped").
func TestOutcomeOfRunsStoredBefore(t *testing.T) {
	db, prov := openProvider(t)
	ctx := t.Context()
	if _, err := prov.UpTo(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO plans (id, name, spec, created_at, updated_at) VALUES (1, 'p', '{}', 0, 0);
		INSERT INTO runs (plan_id, plan_name, status, started_at, plan_spec, requests, error_rate, thresholds_ok) VALUES
			(1, 'p', 'finished', 1, '{}', 100, 0, 1),
			(1, 'p', 'finished', 2, '{}', 100, 0.2, NULL),
			(1, 'p', 'finished', 3, '{}', 100, 1, NULL),
			(1, 'p', 'stopped', 4, '{}', 100, 0, 0),
			(1, 'p', 'interrupted', 5, '{}', 100, 0, NULL),
			(1, 'p', 'running', 6, '{}', 100, 0, NULL),
			(1, 'p', 'stopped', 7, '{}', 0, 0, NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := prov.Up(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, "SELECT coalesce(outcome, '-') FROM runs ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		got = append(got, o)
	}
	want := "passed finished_with_errors failed finished_with_errors failed - stopped" // 00010: stopped before any request
	if strings.Join(got, " ") != want {
		t.Errorf("outcomes %v, want %s", got, want)
	}
}

// Runs stored before migration 00007 have a NULL server_cpu_max (unknown, not 0); the column
// takes values afterwards.
func TestServerCPUMaxOfRunsStoredBeforeIsNull(t *testing.T) {
	db, prov := openProvider(t)
	ctx := t.Context()
	if _, err := prov.UpTo(ctx, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO plans (id, name, spec, created_at, updated_at) VALUES (1, 'p', '{}', 0, 0);
		INSERT INTO runs (plan_id, plan_name, status, started_at, plan_spec, requests) VALUES
			(1, 'p', 'finished', 1, '{}', 100), (1, 'p', 'running', 2, '{}', 5)`); err != nil {
		t.Fatal(err)
	}
	if _, err := prov.UpTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO runs (plan_id, plan_name, status, started_at, plan_spec, server_cpu_max)
		VALUES (1, 'p', 'finished', 3, '{}', 87.5)`); err != nil {
		t.Fatal(err)
	}
	var nulls, set int
	var v float64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE server_cpu_max IS NULL),
		count(server_cpu_max), coalesce(sum(server_cpu_max), 0) FROM runs`).Scan(&nulls, &set, &v); err != nil {
		t.Fatal(err)
	}
	if nulls != 2 || set != 1 || v != 87.5 {
		t.Errorf("%d NULL and %d set (sum %v), want the 2 older runs NULL and 87.5 on the new one", nulls, set, v)
	}
}

// openProvider opens a new SQLite file and a goose provider of these migrations over it.
func openProvider(t *testing.T) (*sql.DB, *goose.Provider) {
	t.Helper()
	db, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "m.db")+"?_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	prov, err := goose.NewProvider(goose.DialectSQLite3, db, FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return db, prov
}
