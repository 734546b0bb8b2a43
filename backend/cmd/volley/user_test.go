package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/store"
)

// runUser runs `volley user ARGS` in-process with stdin; it returns stdout, stderr and the error.
func runUser(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	c := userCmd()
	var out, errb bytes.Buffer
	c.SetArgs(args)
	c.SetIn(strings.NewReader(stdin))
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SilenceErrors, c.SilenceUsage = true, true
	err := c.Execute()
	return out.String(), errb.String(), err
}

func isUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}

func TestUserCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "volley.db")
	const pw = "a long enough password"
	if _, _, err := runUser(t, pw+"\n", "add", "ann", "--role", "admin", "--password-stdin", "--db", db); err != nil {
		t.Fatal(err)
	}
	// bad input: exit 2 (usage errors), nothing created
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{pw, []string{"add", "bob", "--password-stdin", "--db", db}},                          // no role
		{pw, []string{"add", "bob", "--role", "root", "--password-stdin", "--db", db}},        // bad role
		{"short", []string{"add", "bob", "--role", "viewer", "--password-stdin", "--db", db}}, // short password
		{pw, []string{"add", "b b", "--role", "viewer", "--password-stdin", "--db", db}},      // bad name
		{pw, []string{"add", "ANN", "--role", "viewer", "--password-stdin", "--db", db}},      // exists
		{pw, []string{"add", "bob", "--role", "viewer", "--db", db}},                          // stdin not a terminal
		{"", []string{"del", "ann", "--db", db}},                                              // last admin
		{"", []string{"del", "nobody", "--db", db}},
		{"", []string{"passwd", "nobody", "--password-stdin", "--db", db}},
		{"", []string{"token", "nobody", "--db", db}},
		{"", []string{"revoke", "x", "--db", db}},
		{"", []string{"revoke", "99", "--db", db}},
		{"", []string{"list", "--db", filepath.Join(t.TempDir(), "missing.db")}},
		{"", []string{"add", "--db", db}},
	} {
		if _, _, err := runUser(t, c.stdin, c.args...); !isUsage(err) {
			t.Errorf("volley user %s: %v, want a usage error (exit 2)", strings.Join(c.args, " "), err)
		}
	}
	out, _, err := runUser(t, "", "token", "ann", "--label", "ci", "--db", db)
	tok := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(tok, auth.TokenPrefix) {
		t.Fatalf("token: %q %v", out, err)
	}
	out, _, err = runUser(t, "", "list", "--db", db)
	if err != nil || !strings.Contains(out, "ann") || !strings.Contains(out, "admin") || !strings.Contains(out, "ci") || strings.Contains(out, tok) {
		t.Errorf("list: %q %v", out, err)
	}
	if _, _, err := runUser(t, "new password 123\n", "passwd", "ann", "--password-stdin", "--db", db); err != nil {
		t.Fatal(err)
	}

	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	svc := auth.New(st, auth.Config{})
	ctx := t.Context()
	if _, _, err := svc.Login(ctx, "a", "ann", "new password 123"); err != nil {
		t.Errorf("login with the new password: %v", err)
	}
	p, err := svc.TokenPrincipal(ctx, tok)
	if err != nil || p.User != "ann" {
		t.Fatalf("token: %+v %v", p, err)
	}
	log, _, _ := svc.AuditLog(ctx, 50, 0)
	if len(log) != 3 || log[0].Actor != auth.CLIActor {
		t.Errorf("audit: %+v", log)
	}
	st.Close()

	if _, _, err := runUser(t, "", "revoke", "1", "--db", db); err != nil {
		t.Fatal(err)
	}
	st, _ = store.Open(db)
	defer st.Close()
	if _, err := auth.New(st, auth.Config{}).TokenPrincipal(ctx, tok); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("revoked token: %v", err)
	}
	if _, _, err := runUser(t, "", "del", "ann", "--force", "--db", db); err != nil {
		t.Errorf("del --force: %v", err)
	}
}

// A non-loopback bind with no users refuses to start, saying how to add one; with
// --admin-password-file (the container's way) or a user it starts.
func TestServeRefusesNonLoopbackWithoutUsers(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "volley.db")
	err := serve(t.Context(), "0.0.0.0:0", db, "", adminInit{}, defaultServeOpts())
	if !isUsage(err) || !strings.Contains(err.Error(), "volley user add admin --role admin --db "+db) {
		t.Fatalf("serve on 0.0.0.0 with no users: %v", err)
	}
	if err := serve(t.Context(), "0.0.0.0:0", db, "", adminInit{name: "admin", passwordFile: filepath.Join(dir, "missing")}, defaultServeOpts()); err == nil ||
		!strings.Contains(err.Error(), "--admin-password-file") {
		t.Fatalf("missing password file: %v", err)
	}
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("container secret pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serveUntilHealthy(t, "0.0.0.0", db, adminInit{name: "admin", passwordFile: pwFile})
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := auth.New(st, auth.Config{})
	if _, _, err := svc.Login(t.Context(), "a", "admin", "container secret pw"); err != nil {
		t.Errorf("the admin made from the file cannot log in: %v", err)
	}
	// loopback with no users still starts (the local user is the admin)
	serveUntilHealthy(t, "127.0.0.1", filepath.Join(dir, "other.db"), adminInit{})
}

// serveUntilHealthy runs serve on host:a free port until /api/health answers on loopback, then
// stops it; serve must then return nil.
func serveUntilHealthy(t *testing.T, host, db string, admin adminInit) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, fmt.Sprintf("%s:%d", host, port), db, "", admin, defaultServeOpts()) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("serve on %s returned before it was healthy: %v", host, err)
		default:
		}
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/health", port))
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve on %s not healthy after 30s", host)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve on %s: %v", host, err)
	}
}

// A loopback bind published by a proxy (--public-url on another host) is as open as a public
// bind: with no users it refuses to start; a loopback public URL (a development server) starts.
func TestServeRefusesARemotePublicURLWithoutUsers(t *testing.T) {
	db := filepath.Join(t.TempDir(), "volley.db")
	opts := defaultServeOpts()
	opts.publicURLs = []string{"http://localhost:5173", "https://volley.example.com"}
	err := serve(t.Context(), "127.0.0.1:0", db, "", adminInit{}, opts)
	if !isUsage(err) || !strings.Contains(err.Error(), "--public-url https://volley.example.com") ||
		!strings.Contains(err.Error(), "volley user add admin --role admin --db "+db) {
		t.Fatalf("serve with a remote public URL and no users: %v", err)
	}
	for _, u := range []string{"http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]:9000", "http://app.localhost"} {
		if got := remotePublicURL([]string{u}); got != "" {
			t.Errorf("remotePublicURL(%s) = %q, want none", u, got)
		}
	}
	for _, u := range []string{"http://192.0.2.10:8080", "https://volley.example.com", "http://127.0.0.1.example.com"} {
		if got := remotePublicURL([]string{u}); got != u {
			t.Errorf("remotePublicURL(%s) = %q, want it", u, got)
		}
	}
}
