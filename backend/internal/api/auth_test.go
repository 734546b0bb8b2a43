package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// syncBuf is a log sink tests can read while the server writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type authApp struct {
	t      *testing.T
	url    string
	svc    *auth.Service
	clk    *testutil.Clock
	logs   *syncBuf
	engine *gin.Engine
	// answers collects every response body, to check that no secret is ever echoed back
	answers *syncBuf
}

const (
	annPW = "ann's long password"
	tomPW = "tom's long password"
	vicPW = "vic's long password"
)

// newAuthApp wires the real pieces with authentication on: admin ann, tester tom, viewer vic
// (users is false: none, auth is then off only if allowLocal).
func newAuthApp(t *testing.T, allowLocal, users bool, extra ...func(*gin.Engine)) *authApp {
	t.Helper()
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clk := testutil.NewClock(time.Now().UTC())
	var svc *auth.Service
	var engine *gin.Engine
	a := newStack(t, stackConfig{log: log, handler: func(s *api.Server, st *store.Store) http.Handler {
		svc = auth.New(st, auth.Config{Now: clk.Now, Hash: auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1},
			Limits: auth.Limits{PerAddr: auth.Limit{Burst: 50, Every: time.Minute}, PerUser: auth.Limit{Burst: 3, Every: time.Minute}}})
		if users {
			for _, u := range []struct {
				name string
				role auth.Role
				pw   string
			}{{"ann", auth.Admin, annPW}, {"tom", auth.Tester, tomPW}, {"vic", auth.Viewer, vicPW}} {
				if _, err := svc.AddUser(t.Context(), u.name, u.role, u.pw); err != nil {
					t.Fatal(err)
				}
			}
		}
		as := s.UseAuth(api.AuthConfig{Service: svc, AllowLocal: allowLocal})
		engine = as.Router()
		for _, f := range extra {
			f(engine)
		}
		return as.Guarded(engine)
	}}).app
	return &authApp{t: t, url: a.url, svc: svc, clk: clk, logs: logs, engine: engine, answers: &syncBuf{}}
}

// cred is how a request authenticates: a session cookie, a bearer token, or nothing.
type cred struct{ cookie, bearer string }

func (a *authApp) do(c cred, method, path, body string) (int, map[string]any, *http.Response) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json") // the guard's rule for state changes
	}
	if c.cookie != "" {
		req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: c.cookie})
		req.Header.Set("Origin", a.url)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a.answers.Write(b)
	var m map[string]any
	if len(b) > 0 && b[0] == '{' {
		if err := json.Unmarshal(b, &m); err != nil {
			a.t.Fatalf("%s %s: bad JSON %q", method, path, b)
		}
	}
	return res.StatusCode, m, res
}

func (a *authApp) must(c cred, want int, method, path, body string) map[string]any {
	a.t.Helper()
	st, m, _ := a.do(c, method, path, body)
	if st != want {
		a.t.Fatalf("%s %s: %d, want %d: %v", method, path, st, want, m)
	}
	return m
}

func (a *authApp) login(user, pw string) cred {
	a.t.Helper()
	st, m, res := a.do(cred{}, "POST", "/api/auth/login", fmt.Sprintf(`{"username":%q,"password":%q}`, user, pw))
	if st != 200 {
		a.t.Fatalf("login %s: %d %v", user, st, m)
	}
	for _, ck := range res.Cookies() {
		if ck.Name == api.SessionCookie {
			return cred{cookie: ck.Value}
		}
	}
	a.t.Fatalf("login %s: no session cookie in %v", user, res.Header)
	return cred{}
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// Every route gin knows — walked from the engine, so routes added later are covered — answers 401
// without a session or token, with a bogus one, or with an expired one; the public ones do not.
func TestEveryRouteNeedsAuth(t *testing.T) {
	a := newAuthApp(t, true, true) // loopback, but users exist: auth is on
	stale := a.login("ann", annPW)
	a.clk.Add(13 * time.Hour)
	public := map[string]bool{"GET /api/health": true, "POST /api/auth/login": true}
	routes := a.engine.Routes()
	checked := 0
	for _, r := range routes {
		path := strings.NewReplacer(":id", "1", ":name", "ann").Replace(r.Path)
		if strings.Contains(path, ":") || strings.Contains(path, "*") {
			t.Fatalf("route %s has a parameter this test does not fill", r.Path)
		}
		if public[r.Method+" "+r.Path] {
			continue
		}
		for _, c := range []cred{{}, {cookie: "vls_" + strings.Repeat("A", 43)}, {bearer: "vlt_" + strings.Repeat("A", 43)},
			{bearer: "garbage"}, stale} {
			st, m, _ := a.do(c, r.Method, path, "{}")
			if st != http.StatusUnauthorized || errCode(m) != "unauthorized" {
				t.Errorf("%s %s with %+v: %d %v, want 401 unauthorized", r.Method, path, c, st, m)
			}
		}
		checked++
	}
	if checked < 25 {
		t.Fatalf("only %d routes checked; is the route walk broken?", checked)
	}
	// an unknown API path and a wrong method are 401 too (nothing is revealed)
	for _, mp := range [][2]string{{"GET", "/api/nope"}, {"PATCH", "/api/plans/1"}, {"GET", "/api"}} {
		if st, _, _ := a.do(cred{}, mp[0], mp[1], ""); st != 401 {
			t.Errorf("%s %s: %d, want 401", mp[0], mp[1], st)
		}
	}
	// the websocket live stream
	ws := "ws" + strings.TrimPrefix(a.url, "http") + "/api/runs/1/live"
	if c, res, err := websocket.DefaultDialer.Dial(ws, nil); err == nil {
		c.Close()
		t.Error("live stream opened without a session")
	} else if res == nil || res.StatusCode != 401 {
		t.Errorf("live stream without a session: %v %v", res, err)
	}
	// public: health and the SPA (the login page is part of it)
	if st, _, _ := a.do(cred{}, "GET", "/api/health", ""); st != 200 {
		t.Errorf("health: %d", st)
	}
	if st, _, _ := a.do(cred{}, "GET", "/", ""); st != 200 {
		t.Errorf("SPA: %d", st)
	}
	// and with a valid session every route is reachable (not 401)
	ok := a.login("ann", annPW)
	for _, r := range routes {
		path := strings.NewReplacer(":id", "999", ":name", "nobody").Replace(r.Path)
		if strings.HasSuffix(path, "/live") || strings.HasSuffix(path, "/logout") {
			continue
		}
		if st, m, _ := a.do(ok, r.Method, path, ""); st == 401 || st == 403 || st >= 500 {
			t.Errorf("admin %s %s: %d %v", r.Method, path, st, m)
		}
	}
}

func TestRoles(t *testing.T) {
	a := newAuthApp(t, false, true)
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	ann, tom, vic := a.login("ann", annPW), a.login("tom", tomPW), a.login("vic", vicPW)
	plan := planJSON(tg.URL+"/x", 1, "30s")

	a.must(tom, 201, "POST", "/api/plans", plan)
	a.must(tom, 200, "PUT", "/api/plans/1", plan)
	// viewer: reads, never writes
	a.must(vic, 200, "GET", "/api/plans", "")
	a.must(vic, 200, "GET", "/api/plans/1", "")
	a.must(vic, 200, "GET", "/api/runs", "")
	for _, mp := range [][3]string{
		{"POST", "/api/plans/1/runs", ""}, {"PUT", "/api/plans/1", plan}, {"POST", "/api/plans", plan},
		{"DELETE", "/api/plans/1", ""}, {"POST", "/api/runs/1/stop", ""}, {"PATCH", "/api/runs/1", `{"notes":"x"}`},
		{"GET", "/api/users", ""}, {"POST", "/api/users", `{"name":"eve","role":"admin","password":"12345678"}`},
		{"GET", "/api/audit", ""},
	} {
		if st, m, _ := a.do(vic, mp[0], mp[1], mp[2]); st != 403 || errCode(m) != "forbidden" {
			t.Errorf("viewer %s %s: %d %v, want 403", mp[0], mp[1], st, m)
		}
	}
	// tester: plans and runs, not users or the audit log
	for _, mp := range [][3]string{
		{"GET", "/api/users", ""}, {"POST", "/api/users", `{"name":"eve","role":"admin","password":"12345678"}`},
		{"PATCH", "/api/users/tom", `{"role":"admin"}`}, {"DELETE", "/api/users/ann", ""}, {"GET", "/api/audit", ""},
	} {
		if st, m, _ := a.do(tom, mp[0], mp[1], mp[2]); st != 403 {
			t.Errorf("tester %s %s: %d %v, want 403", mp[0], mp[1], st, m)
		}
	}
	run := a.must(tom, 201, "POST", "/api/plans/1/runs", "")
	id := int(run["id"].(float64))
	a.must(tom, 200, "PATCH", fmt.Sprintf("/api/runs/%d", id), `{"notes":"by tom"}`)
	a.must(tom, 202, "POST", fmt.Sprintf("/api/runs/%d/stop", id), "")

	// admin: users and the audit log, which names who ran what against which hosts
	a.must(ann, 201, "POST", "/api/users", `{"name":"eve","role":"viewer","password":"eve's password"}`)
	a.must(ann, 200, "PATCH", "/api/users/eve", `{"role":"tester","password":"eve's new password"}`)
	a.must(ann, 204, "DELETE", "/api/users/eve", "")
	if st, m, _ := a.do(ann, "DELETE", "/api/users/ann", ""); st != 409 || errCode(m) != "last_admin" {
		t.Errorf("delete the last admin: %d %v", st, m)
	}
	if st, m, _ := a.do(ann, "POST", "/api/users", `{"name":"x y","role":"boss","password":"1"}`); st != 400 || errCode(m) != "bad_request" {
		t.Errorf("bad user: %d %v", st, m)
	}
	if st, m, _ := a.do(ann, "POST", "/api/users", `{"name":"tom","role":"viewer","password":"12345678"}`); st != 409 {
		t.Errorf("duplicate user: %d %v", st, m)
	}
	users := a.must(ann, 200, "GET", "/api/users", "")
	if users["total"].(float64) != 3 {
		t.Errorf("users: %v", users)
	}
	log := a.must(ann, 200, "GET", "/api/audit?limit=100", "")
	host := strings.TrimPrefix(tg.URL, "http://")
	var seen []string
	for _, it := range log["items"].([]any) {
		e := it.(map[string]any)
		seen = append(seen, e["actor"].(string)+" "+e["action"].(string)+" "+e["target"].(string))
		if a := e["action"]; a == "run.start" || a == "run.stop" {
			d := e["detail"].(map[string]any)
			if hs, _ := d["hosts"].([]any); len(hs) != 1 || hs[0] != host || d["plan_id"].(float64) != 1 {
				t.Errorf("%s detail %v, want hosts [%s]", a, d, host)
			}
		}
	}
	for _, want := range []string{"tom run.start run 1", "tom run.stop run 1", "ann user.create user eve",
		"ann user.update user eve", "ann user.delete user eve", "vic login user vic"} {
		if !strings.Contains(strings.Join(seen, "\n"), want) {
			t.Errorf("audit log lacks %q:\n%s", want, strings.Join(seen, "\n"))
		}
	}
	if st, _, _ := a.do(ann, "GET", "/api/audit?limit=0", ""); st != 400 {
		t.Errorf("audit limit=0: %d", st)
	}
	a.checkNoSecrets(annPW, tomPW, vicPW, "eve's password", "eve's new password")
}

// checkNoSecrets: no password, session or token appears in the server's logs or in any answer
// after the one that created it.
func (a *authApp) checkNoSecrets(secrets ...string) {
	a.t.Helper()
	for _, s := range secrets {
		if strings.Contains(a.logs.String(), s) {
			a.t.Errorf("secret %q in the server log", s)
		}
		if strings.Contains(a.answers.String(), s) {
			a.t.Errorf("secret %q in an API answer", s)
		}
	}
}

func TestTokensAsBearer(t *testing.T) {
	a := newAuthApp(t, false, true)
	ann, vic := a.login("ann", annPW), a.login("vic", vicPW)
	a.must(ann, 201, "POST", "/api/plans", planJSON("http://127.0.0.1:9/", 1, "1s"))

	// a token is shown once; it carries its user's role
	made := a.must(ann, 201, "POST", "/api/tokens", `{"label":"ci","user":"tom"}`)
	tok := made["token"].(string)
	if made["user"] != "tom" || made["role"] != "tester" || !strings.HasPrefix(tok, "vlt_") {
		t.Fatalf("token: %v", made)
	}
	bearer := cred{bearer: tok}
	a.must(bearer, 200, "GET", "/api/plans", "")
	me := a.must(bearer, 200, "GET", "/api/auth/me", "")
	if me["user"] != "tom" || me["role"] != "tester" || me["auth_enabled"] != true || me["via"] != "token" {
		t.Errorf("me: %v", me)
	}
	a.must(bearer, 200, "PUT", "/api/plans/1", planJSON("http://127.0.0.1:9/", 1, "1s")) // no Origin needed
	a.must(bearer, 403, "GET", "/api/users", "")

	// a viewer makes its own token; lists only its own; cannot touch others'
	own := a.must(vic, 201, "POST", "/api/tokens", `{"label":"mine"}`)
	a.must(vic, 403, "POST", "/api/tokens", `{"user":"tom"}`)
	list := a.must(vic, 200, "GET", "/api/tokens", "")
	if list["total"].(float64) != 1 || list["items"].([]any)[0].(map[string]any)["label"] != "mine" {
		t.Errorf("viewer's list: %v", list)
	}
	if _, ok := list["items"].([]any)[0].(map[string]any)["token"]; ok {
		t.Error("the list shows a token's secret")
	}
	a.must(vic, 404, "DELETE", fmt.Sprintf("/api/tokens/%v", made["id"]), "")
	a.must(cred{bearer: own["token"].(string)}, 403, "POST", "/api/plans", planJSON("http://127.0.0.1:9/", 1, "1s"))
	if all := a.must(ann, 200, "GET", "/api/tokens", ""); all["total"].(float64) != 2 {
		t.Errorf("admin's list: %v", all)
	}

	// revoked: stops working at once
	a.must(ann, 204, "DELETE", fmt.Sprintf("/api/tokens/%v", made["id"]), "")
	if st, m, _ := a.do(bearer, "GET", "/api/plans", ""); st != 401 {
		t.Errorf("revoked token: %d %v", st, m)
	}
	a.must(vic, 204, "DELETE", fmt.Sprintf("/api/tokens/%v", own["id"]), "")
	a.must(cred{bearer: own["token"].(string)}, 401, "GET", "/api/plans", "")
	a.must(ann, 400, "POST", "/api/tokens", `{"label":"`+strings.Repeat("x", 101)+`"}`)
	a.must(ann, 400, "POST", "/api/tokens", `{"user":"nobody"}`)
	a.must(ann, 400, "POST", "/api/tokens", `{"lable":"typo"}`)
	a.checkNoSecrets(annPW, vicPW)
	if strings.Contains(a.logs.String(), tok) {
		t.Error("token in the log")
	}
}

func TestSessionCookieLogoutAndExpiry(t *testing.T) {
	a := newAuthApp(t, false, true)
	st, m, res := a.do(cred{}, "POST", "/api/auth/login", fmt.Sprintf(`{"username":"ann","password":%q}`, annPW))
	if st != 200 || m["user"] != "ann" || m["role"] != "admin" || m["auth_enabled"] != true {
		t.Fatalf("login: %d %v", st, m)
	}
	sc := res.Header.Get("Set-Cookie")
	for _, want := range []string{api.SessionCookie + "=vls_", "Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=604800"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %s", sc, want)
		}
	}
	if strings.Contains(sc, "Secure") {
		t.Errorf("Secure cookie on plain HTTP: %q", sc)
	}
	ann := a.login("ann", annPW)
	a.must(ann, 200, "GET", "/api/auth/me", "")

	// a cookie-authenticated state change needs an Origin header
	req, _ := http.NewRequest("POST", a.url+"/api/plans", strings.NewReader(planJSON("http://127.0.0.1:9/", 1, "1s")))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: ann.cookie})
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 403 {
		t.Errorf("cookie POST without Origin: %d, want 403", r2.StatusCode)
	}

	// logout ends the session
	other := a.login("ann", annPW)
	_, _, lres := a.do(ann, "POST", "/api/auth/logout", "")
	if lres.StatusCode != 204 || !strings.Contains(lres.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("logout: %d %q", lres.StatusCode, lres.Header.Get("Set-Cookie"))
	}
	a.must(ann, 401, "GET", "/api/auth/me", "")
	a.must(other, 200, "GET", "/api/auth/me", "") // another session of the same user lives on

	// idle and absolute expiry
	a.clk.Add(11 * time.Hour)
	a.must(other, 200, "GET", "/api/plans", "")
	a.clk.Add(12*time.Hour + time.Second)
	a.must(other, 401, "GET", "/api/plans", "")
	s := a.login("ann", annPW)
	for range 7 * 4 { // in use every 6 h: never idle, ended after 7 days
		a.must(s, 200, "GET", "/api/plans", "")
		a.clk.Add(6 * time.Hour)
	}
	a.must(s, 401, "GET", "/api/plans", "")

	// bad login input: named fields, never a 5xx
	for _, body := range []string{`{}`, `{"username":"ann"}`, `{"username":1,"password":"x"}`, `[`, `{"user":"ann","password":"x"}`, ``} {
		if st, m, _ := a.do(cred{}, "POST", "/api/auth/login", body); st != 400 || errCode(m) != "bad_request" {
			t.Errorf("login %q: %d %v", body, st, m)
		}
	}
	a.checkNoSecrets(annPW)
}

func TestLoginRateLimitAPI(t *testing.T) {
	a := newAuthApp(t, false, true)
	for i := range 3 {
		if st, m, _ := a.do(cred{}, "POST", "/api/auth/login", `{"username":"vic","password":"guess number `+fmt.Sprint(i)+`"}`); st != 401 || errCode(m) != "bad_credentials" {
			t.Fatalf("failure %d: %d %v", i, st, m)
		}
	}
	st, m, res := a.do(cred{}, "POST", "/api/auth/login", fmt.Sprintf(`{"username":"vic","password":%q}`, vicPW))
	if st != 429 || errCode(m) != "too_many_attempts" {
		t.Fatalf("after 3 failures: %d %v", st, m)
	}
	ra := res.Header.Get("Retry-After")
	var secs int
	if _, err := fmt.Sscan(ra, &secs); err != nil || secs < 1 || secs > 60 {
		t.Fatalf("Retry-After %q", ra)
	}
	a.clk.Add(time.Duration(secs) * time.Second)
	a.login("vic", vicPW)
	// failed logins are audited by the name tried, never with the password
	log := a.must(a.login("ann", annPW), 200, "GET", "/api/audit", "")
	if n := strings.Count(fmt.Sprint(log), "login_failed"); n != 3 {
		t.Errorf("%d login_failed entries, want 3", n)
	}
	a.checkNoSecrets("guess number 0", "guess number 2", vicPW)
}

// On loopback with no users the local user is the admin (as before auth existed); a server that
// may not allow that lets nobody in; the first user turns auth on at once.
func TestLocalAdminUntilTheFirstUser(t *testing.T) {
	closed := newAuthApp(t, false, false)
	closed.must(cred{}, 401, "GET", "/api/plans", "")
	closed.must(cred{}, 401, "GET", "/api/auth/me", "")

	a := newAuthApp(t, true, false)
	me := a.must(cred{}, 200, "GET", "/api/auth/me", "")
	if me["user"] != "local" || me["role"] != "admin" || me["auth_enabled"] != false {
		t.Errorf("me: %v", me)
	}
	a.must(cred{}, 201, "POST", "/api/plans", planJSON("http://127.0.0.1:9/", 1, "1s"))
	a.must(cred{}, 400, "POST", "/api/tokens", `{"label":"x"}`) // a token needs a user
	a.must(cred{}, 201, "POST", "/api/users", `{"name":"ann","role":"admin","password":"ann's long password"}`)
	a.must(cred{}, 401, "GET", "/api/plans", "")
	a.must(a.login("ann", annPW), 200, "GET", "/api/plans", "")
	log := a.must(a.login("ann", annPW), 200, "GET", "/api/audit", "")
	if !strings.Contains(fmt.Sprint(log), "actor:local") {
		t.Errorf("the local admin's user.create is not in the audit log: %v", log)
	}
}

// A route added later by another part is covered by the walk above and takes its role in one
// line: Require raises it above the default.
func TestRequireRaisesARouteRole(t *testing.T) {
	a := newAuthApp(t, false, true, func(e *gin.Engine) {
		e.GET("/api/admin-only", api.Require(auth.Admin), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	})
	a.must(cred{}, 401, "GET", "/api/admin-only", "")
	a.must(a.login("vic", vicPW), 403, "GET", "/api/admin-only", "")
	a.must(a.login("tom", tomPW), 403, "GET", "/api/admin-only", "")
	a.must(a.login("ann", annPW), 204, "GET", "/api/admin-only", "")
}
