package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"database/sql"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// volleyDB makes a closed Volley database holding one plan with one run of n stored seconds and
// returns its path and the plan's id.
func volleyDB(t *testing.T, dir string, n int) (string, int64) {
	t.Helper()
	path := filepath.Join(dir, "volley.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, s, "kept")
	r := mustRun(t, s, p, time.Now())
	t0 := time.Now()
	for i := 1; i <= n; i++ {
		smp := sample(i, t0)
		smp.Hist = bytes.Repeat([]byte{byte(i)}, 1500)
		if err := s.AppendSample(t.Context(), r.ID, smp, progress(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, p.ID
}

// reopenKeeps opens path and checks that the plan and its run's seconds are all there.
func reopenKeeps(t *testing.T, path string, planID int64, seconds int) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if _, err := s.GetPlan(t.Context(), planID); err != nil {
		t.Errorf("plan lost: %v", err)
	}
	if n := count(t, s, "SELECT count(*) FROM run_samples"); n != int64(seconds) {
		t.Errorf("%d stored seconds, want %d", n, seconds)
	}
}

// wantRefusal checks Open's error: the sentinel and every fragment of the message.
func wantRefusal(t *testing.T, err error, sentinel error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Open succeeded, want %v", sentinel)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %q does not wrap %v", err, sentinel)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q lacks %q", err, f)
		}
	}
}

func noSideFiles(t *testing.T, path string) {
	t.Helper()
	for _, p := range []string{path + "-wal", path + "-shm", path + "-journal", path + ".reserve"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created for a refused file", filepath.Base(p))
		}
	}
}

func TestOpenRefusesZeroByteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "volley.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	wantRefusal(t, err, ErrEmptyFile, "zero-byte", "rm "+path)
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file was changed: %v %v", fi, err)
	}
	noSideFiles(t, path)
}

// foreignDB writes a SQLite file as another application would.
func foreignDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestOpenRefusesForeignFiles(t *testing.T) {
	cases := []struct {
		name      string
		make      func(t *testing.T, path string)
		fragments []string
	}{
		{"another application_id", func(t *testing.T, path string) {
			foreignDB(t, path, "PRAGMA application_id = 1598903374", // "Fossil"'s neighbour: any other value
				"CREATE TABLE plans (id INTEGER PRIMARY KEY, x TEXT)", "INSERT INTO plans (x) VALUES ('theirs')")
		}, []string{"another application", "application_id 1598903374", "0x566F6C6C", "--db"}},
		{"foreign tables", func(t *testing.T, path string) {
			foreignDB(t, path, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)",
				"INSERT INTO customers (name) VALUES ('ada')")
		}, []string{"another application", "customers", "--db"}},
		{"Volley's tables and a foreign one", func(t *testing.T, path string) {
			legacy, _ := volleyDB(t, t.TempDir(), 1)
			b, err := os.ReadFile(legacy)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			foreignDB(t, path, "PRAGMA application_id = 0", "CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
		}, []string{"another application", "invoices"}},
		{"not SQLite", func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not a database\n"), 400), 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"not a SQLite database", "--db"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "other.db")
			c.make(t, path)
			fi0, _ := os.Stat(path)
			before := fileHash(t, path)
			_, err := Open(path)
			wantRefusal(t, err, ErrNotVolley, c.fragments...)
			if fileHash(t, path) != before {
				t.Error("the foreign file's bytes changed")
			}
			if fi, _ := os.Stat(path); fi.Mode() != fi0.Mode() {
				t.Errorf("the foreign file's mode changed: %v -> %v", fi0.Mode(), fi.Mode())
			}
			noSideFiles(t, path)
		})
	}
}

func TestOpenRefusesDamagedFile(t *testing.T) {
	path, planID := volleyDB(t, t.TempDir(), 300)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	const pageSize = 4096
	pages := fi.Size() / pageSize
	if pages < 20 {
		t.Fatalf("only %d pages: the damage would not land in the samples", pages)
	}
	// Garbage over a page in the middle of the file: a b-tree page of the stored seconds.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5, 0x5A, 0xFF, 0x00}, pageSize/4), (pages/2)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := fileHash(t, path)

	_, err = Open(path)
	recoverCmd := `sqlite3 ` + path + ` ".recover" | sqlite3 recovered.db`
	dumpCmd := `sqlite3 ` + path + ` .dump | sed 's/^ROLLBACK; -- due to errors$/COMMIT;/' | sqlite3 recovered.db`
	wantRefusal(t, err, ErrDamaged, "is damaged", recoverCmd, dumpCmd, "--db recovered.db")
	if fileHash(t, path) != before {
		t.Error("the damaged file was written to")
	}

	// The recovery the message gives works, and Volley opens what it salvaged.
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 shell not installed: the recovery command is not tried")
	}
	dir := filepath.Dir(path)
	// Debian's sqlite3 lacks .recover (no sqlite_dbpage): then the message's .dump form.
	if out, _ := exec.Command("sqlite3", path, "SELECT count(*) FROM sqlite_dbpage").CombinedOutput(); strings.Contains(string(out), "no such table") {
		recoverCmd = dumpCmd
	}
	t.Logf("recovering with: %s", recoverCmd)
	cmd := exec.Command("sh", "-c", recoverCmd)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("recover: %v\n%s", err, out)
	}
	s, err := Open(filepath.Join(dir, "recovered.db"))
	if err != nil {
		t.Fatalf("open the recovered database: %v", err)
	}
	defer s.Close()
	if _, err := s.GetPlan(t.Context(), planID); err != nil {
		t.Errorf("plan not recovered: %v", err)
	}
	n := count(t, s, "SELECT count(*) FROM run_samples")
	t.Logf("recovered %d of 300 seconds after one page was overwritten", n)
	if n == 0 || n >= 300 {
		t.Errorf("recovered %d seconds, want some but not all (one page was lost)", n)
	}
}

func TestOpenRefusesReadOnlyFile(t *testing.T) {
	path, planID := volleyDB(t, t.TempDir(), 3)
	t.Run("refused", func(t *testing.T) {
		testutil.ReadOnly(t, path)
		before := fileHash(t, path)
		_, err := Open(path)
		wantRefusal(t, err, ErrReadOnly, path, "cannot be written", "writable")
		if fileHash(t, path) != before {
			t.Error("the read-only file changed")
		}
	})
	reopenKeeps(t, path, planID, 3)
}

func TestOpenRefusesReadOnlyFolder(t *testing.T) {
	dir := t.TempDir()
	path, planID := volleyDB(t, dir, 3)
	t.Run("refused", func(t *testing.T) {
		testutil.ReadOnly(t, dir)
		_, err := Open(path)
		wantRefusal(t, err, ErrReadOnly, "folder "+dir+" is not writable", "--db")
		_, err = Open(filepath.Join(dir, "new.db"))
		wantRefusal(t, err, ErrReadOnly, "is not writable")
	})
	if _, err := os.Stat(filepath.Join(dir, "new.db")); err == nil {
		t.Error("new.db was created in the read-only folder")
	}
	reopenKeeps(t, path, planID, 3)
}

// TestOpenRefusesLockedDatabase: the sqlite3 shell, another process, holds the write lock for
// longer than the busy timeout.
func TestOpenRefusesLockedDatabase(t *testing.T) {
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 shell not installed")
	}
	path, planID := volleyDB(t, t.TempDir(), 3)
	cmd := exec.Command(sqlite3, path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	io.WriteString(stdin, "BEGIN IMMEDIATE;\nUPDATE plans SET name = name;\n.print locked\n")
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("sqlite3 shell: %q %v", line, err)
	}
	start := time.Now()
	_, err = Open(path)
	wantRefusal(t, err, ErrLocked, "locked by another program", "close the other program")
	t.Logf("refused after %s", time.Since(start).Round(time.Millisecond))

	io.WriteString(stdin, "ROLLBACK;\n.quit\n")
	stdin.Close()
	_ = cmd.Wait()
	reopenKeeps(t, path, planID, 3)
}

func TestOpenUpgradesLegacyVolleyDatabase(t *testing.T) {
	path, planID := volleyDB(t, t.TempDir(), 3)
	// A database made before ApplicationID: the same schema, application_id 0.
	foreignDB(t, path, "PRAGMA application_id = 0")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("a pre-application_id Volley database is refused: %v", err)
	}
	if id := count(t, s, "PRAGMA application_id"); id != int64(ApplicationID) {
		t.Errorf("application_id %d after open, want %d", id, ApplicationID)
	}
	s.Close()
	reopenKeeps(t, path, planID, 3)

	// An empty SQLite file (no tables) is taken as new.
	empty := filepath.Join(t.TempDir(), "empty.db")
	foreignDB(t, empty, "PRAGMA user_version = 1")
	s, err = Open(empty)
	if err != nil {
		t.Fatalf("empty SQLite database: %v", err)
	}
	defer s.Close()
	if id := count(t, s, "PRAGMA application_id"); id != int64(ApplicationID) {
		t.Errorf("application_id %d, want %d", id, ApplicationID)
	}
}

func TestDatabaseFileModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "volley.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mustPlan(t, s, "p") // the -wal and -shm exist while open
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".reserve"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	s.Close()

	// A database made world-readable by an older Volley is narrowed.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("existing database left with mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestDiskFullFinishRunUsesReserve fills a small tmpfs: seconds can no longer be stored, but the
// run's end still is (the reserve file is given back for it), and nothing stored earlier is lost.
func TestDiskFullFinishRunUsesReserve(t *testing.T) {
	dir := testutil.MountTmpfs(t, 8<<20)
	path := filepath.Join(dir, "volley.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Reserved() {
		t.Fatal("no reserve file")
	}
	p := mustPlan(t, s, "p")
	earlier := mustRun(t, s, p, time.Now())
	t0 := time.Now()
	for i := 1; i <= 5; i++ {
		if err := s.AppendSample(t.Context(), earlier.ID, sample(i, t0), progress(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishRun(t.Context(), earlier.ID, StatusFinished, time.Now(), progress(5), []byte(`{"requests":500}`), []byte{1, 2}, ""); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, s, p, time.Now())
	if err := s.AppendSample(t.Context(), r.ID, sample(1, t0), progress(1)); err != nil {
		t.Fatal(err)
	}
	testutil.FillDisk(t, dir, "filler")

	err = s.AppendSample(t.Context(), r.ID, sample(2, t0), progress(2))
	if !errors.Is(err, ErrDiskFull) && FaultReason(err) != "the disk is full" {
		t.Fatalf("append on a full disk: %v (reason %q), want the disk is full", err, FaultReason(err))
	}
	summary := []byte(`{"requests":100,"note":"` + strings.Repeat("x", 20000) + `"}`)
	if err := s.FinishRun(t.Context(), r.ID, StatusFailed, time.Now(), progress(1), summary, bytes.Repeat([]byte{7}, 8000), "the disk is full"); err != nil {
		t.Fatalf("finish on a full disk: %v", err)
	}
	if s.Reserved() {
		t.Error("the reserve is still held after being used")
	}
	got, err := s.GetRun(t.Context(), r.ID)
	if err != nil || got.Status != StatusFailed || got.Error != "the disk is full" || !bytes.Equal(got.Summary, summary) {
		t.Fatalf("run after finish on a full disk: %+v %v", got, err)
	}
	smps, _ := s.Samples(t.Context(), earlier.ID)
	if len(smps) != 5 {
		t.Errorf("earlier run: %d seconds, want 5", len(smps))
	}
	if smps, _ := s.Samples(t.Context(), r.ID); len(smps) != 1 {
		t.Errorf("failed run: %d seconds, want the 1 stored before the disk filled", len(smps))
	}
}

// SkipIntegrityCheck leaves out only the damage check: a foreign file is still refused.
func TestOpenWithSkipIntegrityCheck(t *testing.T) {
	path, planID := volleyDB(t, t.TempDir(), 300)
	fi, _ := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Damage a page of stored seconds, not the schema: the file still opens without the check.
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 4096), (fi.Size()/4096/2)*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err := OpenWith(path, Options{SkipIntegrityCheck: true})
	if err != nil {
		t.Fatalf("without integrity_check: %v", err)
	}
	if _, err := s.GetPlan(t.Context(), planID); err != nil {
		t.Error(err)
	}
	s.Close()
	if _, err := Open(path); !errors.Is(err, ErrDamaged) {
		t.Errorf("with integrity_check: %v, want ErrDamaged", err)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	foreignDB(t, other, "CREATE TABLE users (id INTEGER PRIMARY KEY)")
	if _, err := OpenWith(other, Options{SkipIntegrityCheck: true}); !errors.Is(err, ErrNotVolley) {
		t.Errorf("foreign file without integrity_check: %v, want ErrNotVolley", err)
	}
}
