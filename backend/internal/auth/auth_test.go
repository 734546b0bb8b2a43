package auth_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// cheap keeps argon2id fast under -race; the default cost is exercised by TestDefaultCost.
var cheap = auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1}

func newService(t *testing.T) (*auth.Service, *store.Store, *testutil.Clock, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "volley.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	svc := auth.New(st, auth.Config{Now: clk.Now, Hash: cheap,
		Limits: auth.Limits{PerAddr: auth.Limit{Burst: 10, Every: time.Minute}, PerUser: auth.Limit{Burst: 3, Every: 2 * time.Minute}}})
	return svc, st, clk, path
}

const pw = "correct horse battery"

func TestPasswordsAndTokensAreNeverStoredInClear(t *testing.T) {
	svc, st, _, path := newService(t)
	ctx := t.Context()
	if has, err := svc.HasUsers(ctx); err != nil || has {
		t.Fatalf("HasUsers on an empty database: %v, %v", has, err)
	}
	if _, err := svc.AddUser(ctx, "ann", auth.Admin, pw); err != nil {
		t.Fatal(err)
	}
	if has, _ := svc.HasUsers(ctx); !has {
		t.Fatal("HasUsers false after AddUser")
	}
	sess, _, err := svc.Login(ctx, "10.0.0.1", "ann", pw)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := svc.CreateToken(ctx, "ann", "ci")
	if err != nil {
		t.Fatal(err)
	}
	var hash string
	st.DB().Raw("SELECT password_hash FROM users WHERE name = 'ann'").Scan(&hash)
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=64,t=1,p=1$") || strings.Contains(hash, pw) {
		t.Errorf("stored password %q", hash)
	}
	// WAL: the rows may still be in volley.db-wal; read both.
	var all []byte
	for _, f := range []string{path, path + "-wal"} {
		b, _ := os.ReadFile(f)
		all = append(all, b...)
	}
	for what, secret := range map[string]string{"password": pw, "session": sess, "token": tok} {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("the %s is in the database file in clear", what)
		}
	}
	if len(all) < 4096 {
		t.Fatalf("read only %d bytes of database", len(all))
	}
}

func TestDefaultCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "volley.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := auth.New(st, auth.Config{})
	if _, err := svc.AddUser(t.Context(), "ann", auth.Tester, pw); err != nil {
		t.Fatal(err)
	}
	var hash string
	st.DB().Raw("SELECT password_hash FROM users").Scan(&hash)
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("hash %q, want argon2id with m=19456,t=2,p=1", hash)
	}
	if _, _, err := svc.Login(t.Context(), "a", "ann", pw); err != nil {
		t.Errorf("login: %v", err)
	}
}

func TestUserValidation(t *testing.T) {
	svc, _, _, _ := newService(t)
	ctx := t.Context()
	cases := []struct {
		name, role, pw, field string
	}{
		{"", "admin", pw, "name"},
		{"a b", "admin", pw, "name"},
		{strings.Repeat("x", 65), "admin", pw, "name"},
		{"local", "admin", pw, "name"},
		{"ann", "root", pw, "role"},
		{"ann", "admin", "short", "password"},
		{"ann", "admin", strings.Repeat("p", 257), "password"},
	}
	for _, c := range cases {
		_, err := svc.AddUser(ctx, c.name, auth.Role(c.role), c.pw)
		var ie *auth.InputError
		if !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("AddUser(%q, %q, %d bytes): %v, want an InputError on %s", c.name, c.role, len(c.pw), err, c.field)
		}
	}
	if _, err := svc.AddUser(ctx, "Ann", auth.Admin, pw); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddUser(ctx, "ann", auth.Viewer, pw); !errors.Is(err, auth.ErrExists) {
		t.Errorf("duplicate name (other case): %v, want ErrExists", err)
	}
	// the last admin stays
	viewer := auth.Viewer
	if _, err := svc.UpdateUser(ctx, "ann", &viewer, nil); !errors.Is(err, auth.ErrLastAdmin) {
		t.Errorf("demote the last admin: %v", err)
	}
	if err := svc.DeleteUser(ctx, "ann", false); !errors.Is(err, auth.ErrLastAdmin) {
		t.Errorf("delete the last admin: %v", err)
	}
	if err := svc.DeleteUser(ctx, "nobody", false); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete a missing user: %v", err)
	}
	if err := svc.DeleteUser(ctx, "ann", true); err != nil {
		t.Errorf("forced delete: %v", err)
	}
}

func TestSessionsExpireAndEnd(t *testing.T) {
	svc, _, clk, _ := newService(t)
	ctx := t.Context()
	if _, err := svc.AddUser(ctx, "ann", auth.Tester, pw); err != nil {
		t.Fatal(err)
	}
	login := func() string {
		t.Helper()
		s, u, err := svc.Login(ctx, "10.0.0.1", "ann", pw)
		if err != nil || u.Role != auth.Tester {
			t.Fatalf("login: %v %+v", err, u)
		}
		return s
	}
	valid := func(s string) bool {
		p, err := svc.Session(ctx, s)
		if err != nil && !errors.Is(err, auth.ErrUnauthenticated) {
			t.Fatal(err)
		}
		if err == nil && (p.User != "ann" || p.Role != auth.Tester || p.Via != auth.ViaSession) {
			t.Fatalf("principal %+v", p)
		}
		return err == nil
	}

	// idle: 12 h without use ends it; use keeps it alive
	s := login()
	clk.Add(11 * time.Hour)
	if !valid(s) {
		t.Fatal("session ended after 11 h idle")
	}
	clk.Add(11 * time.Hour) // 11 h since last use
	if !valid(s) {
		t.Fatal("session used 11 h ago ended")
	}
	clk.Add(12 * time.Hour)
	if valid(s) {
		t.Fatal("session idle for 12 h still valid")
	}

	// absolute: 7 days however active
	s = login()
	for range 7 * 24 / 6 {
		if !valid(s) {
			t.Fatalf("active session ended early at %v", clk.Now())
		}
		clk.Add(6 * time.Hour)
	}
	if valid(s) {
		t.Fatal("session older than 7 days still valid")
	}

	// logout
	s = login()
	if err := svc.Logout(ctx, s); err != nil || valid(s) {
		t.Fatalf("after logout: %v, valid %v", err, valid(s))
	}

	// a new password ends every session
	s = login()
	npw := "another long password"
	if _, err := svc.UpdateUser(ctx, "ann", nil, &npw); err != nil {
		t.Fatal(err)
	}
	if valid(s) {
		t.Fatal("session survived a password change")
	}
	if _, _, err := svc.Login(ctx, "10.0.0.1", "ann", pw); !errors.Is(err, auth.ErrBadCredentials) {
		t.Fatalf("old password: %v", err)
	}

	// garbage never matches
	for _, g := range []string{"", "x", auth.SessionPrefix, s + "x", strings.Repeat("a", 47)} {
		if valid(g) {
			t.Errorf("%q accepted", g)
		}
	}
}

func TestTokensCarryRoleAndRevoke(t *testing.T) {
	svc, _, _, _ := newService(t)
	ctx := t.Context()
	if _, err := svc.AddUser(ctx, "ci", auth.Viewer, pw); err != nil {
		t.Fatal(err)
	}
	sec, tok, err := svc.CreateToken(ctx, "ci", "nightly")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sec, auth.TokenPrefix) || len(sec) != len(auth.TokenPrefix)+43 {
		t.Errorf("token %q", sec)
	}
	p, err := svc.TokenPrincipal(ctx, sec)
	if err != nil || p.User != "ci" || p.Role != auth.Viewer || p.TokenID != tok.ID {
		t.Fatalf("principal %+v, %v", p, err)
	}
	// the token follows its owner's role
	tester := auth.Tester
	if _, err := svc.UpdateUser(ctx, "ci", &tester, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := svc.TokenPrincipal(ctx, sec); p == nil || p.Role != auth.Tester {
		t.Errorf("after promotion: %+v", p)
	}
	ts, err := svc.ListTokens(ctx, tok.UserID)
	if err != nil || len(ts) != 1 || ts[0].Label != "nightly" || ts[0].LastUsedAt == nil {
		t.Errorf("list: %+v, %v", ts, err)
	}
	if err := svc.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TokenPrincipal(ctx, sec); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("revoked token: %v", err)
	}
	if err := svc.RevokeToken(ctx, tok.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoke twice: %v", err)
	}
	// deleting the user deletes its tokens
	sec2, _, _ := svc.CreateToken(ctx, "ci", "")
	if err := svc.DeleteUser(ctx, "ci", true); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.TokenPrincipal(ctx, sec2); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("token of a deleted user: %v", err)
	}
	if _, _, err := svc.CreateToken(ctx, "ci", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("token for a missing user: %v", err)
	}
}

func TestLoginRateLimit(t *testing.T) {
	svc, _, clk, _ := newService(t)
	ctx := t.Context()
	if _, err := svc.AddUser(ctx, "ann", auth.Admin, pw); err != nil {
		t.Fatal(err)
	}
	// per user name: 3 failures (from different addresses), then even the right password waits
	for i := range 3 {
		if _, _, err := svc.Login(ctx, "10.0.0."+string(rune('1'+i)), "ann", "wrong password"); !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	_, _, err := svc.Login(ctx, "10.0.0.9", "ANN", pw)
	var le *auth.LimitedError
	if !errors.As(err, &le) || le.RetryAfter <= 0 || le.RetryAfter > 2*time.Minute {
		t.Fatalf("4th login: %v, want LimitedError within 2m", err)
	}
	clk.Add(le.RetryAfter)
	if _, _, err := svc.Login(ctx, "10.0.0.9", "ann", pw); err != nil {
		t.Fatalf("after %v: %v", le.RetryAfter, err)
	}
	// per address: 10 failures over many names, then that address waits, others do not
	for i := range 10 {
		_, _, err := svc.Login(ctx, "10.9.9.9", "nobody"+string(rune('a'+i)), "x")
		if !errors.Is(err, auth.ErrBadCredentials) {
			t.Fatalf("address failure %d: %v", i, err)
		}
	}
	if _, _, err := svc.Login(ctx, "10.9.9.9", "ann", pw); !errors.As(err, &le) {
		t.Fatalf("11th from one address: %v", err)
	}
	if _, _, err := svc.Login(ctx, "10.9.9.8", "ann", pw); err != nil {
		t.Fatalf("another address: %v", err)
	}
	clk.Add(time.Minute)
	if _, _, err := svc.Login(ctx, "10.9.9.9", "ann", pw); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
}

func TestAuditLogPages(t *testing.T) {
	svc, _, _, _ := newService(t)
	ctx := t.Context()
	for i := range 5 {
		if err := svc.Audit(ctx, auth.Entry{Actor: "ann", Action: auth.ActRunStart, Target: "run " + string(rune('1'+i)),
			Detail: map[string]any{"hosts": []string{"127.0.0.1:8090"}}, Addr: "127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	es, total, err := svc.AuditLog(ctx, 2, 1)
	if err != nil || total != 5 || len(es) != 2 || es[0].Target != "run 4" || es[1].Target != "run 3" {
		t.Fatalf("page: %+v total %d %v", es, total, err)
	}
	if h, _ := es[0].Detail["hosts"].([]any); len(h) != 1 || h[0] != "127.0.0.1:8090" {
		t.Errorf("detail %+v", es[0].Detail)
	}
}

func TestPolicy(t *testing.T) {
	p := auth.Policy{{Method: "POST", Route: "/api/auth/logout", Role: auth.Viewer}, {Route: "/api/users/*", Role: auth.Admin}}
	for _, c := range []struct {
		method, route string
		want          auth.Role
	}{
		{"GET", "/api/plans", auth.Viewer}, {"HEAD", "/api/plans", auth.Viewer}, {"POST", "/api/plans", auth.Tester},
		{"DELETE", "/api/runs/:id", auth.Tester}, {"POST", "/api/auth/logout", auth.Viewer},
		{"GET", "/api/users", auth.Admin}, {"PATCH", "/api/users/:name", auth.Admin}, {"GET", "/api/usersx", auth.Viewer},
	} {
		if got := p.RoleFor(c.method, c.route); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.route, got, c.want)
		}
	}
	if !auth.Admin.Allows(auth.Tester) || auth.Viewer.Allows(auth.Tester) || auth.Role("").Allows(auth.Viewer) {
		t.Error("Allows")
	}
}

// Concurrent attempts cannot slip past the limit: each takes its token before the password check.
func TestLoginRateLimitHoldsUnderConcurrency(t *testing.T) {
	svc, _, _, _ := newService(t)
	ctx := t.Context()
	if _, err := svc.AddUser(ctx, "ann", auth.Admin, pw); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	checked, limited := 0, 0
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := svc.Login(ctx, "10.1.1."+string(rune('a'+i)), "ann", "wrong password")
			var le *auth.LimitedError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, auth.ErrBadCredentials):
				checked++
			case errors.As(err, &le):
				limited++
			default:
				t.Errorf("login: %v", err)
			}
		}()
	}
	wg.Wait()
	if checked != 3 || limited != 17 {
		t.Errorf("%d passwords checked, %d refused; want 3 (the per-name burst) and 17", checked, limited)
	}
}
