package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// guardedApp is the real stack (SQLite file, runner, hub, handlers) behind a loopback listener,
// wired as volley serve wires it: one guard for the handler and the websocket upgrader.
type guardedApp struct {
	url, host string // http://127.0.0.1:PORT, 127.0.0.1:PORT
	port      string
	st        *store.Store
}

func newGuardedApp(t *testing.T, cfg api.GuardConfig) *guardedApp {
	t.Helper()
	g, err := api.NewGuard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackConfig{guard: g})
	u, _ := url.Parse(s.url)
	return &guardedApp{url: s.url, host: u.Host, port: u.Port(), st: s.st}
}

// hreq is one request as a browser or a client would send it.
type hreq struct {
	name, method, path string
	host               string // "" = the server's own host:port
	ctype, body        string
	hdr                map[string]string
}

type hres struct {
	status int
	hdr    http.Header
	body   []byte
}

// noKeepAlive: every request on a fresh connection, as distinct clients would.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

func (a *guardedApp) send(t *testing.T, r hreq) hres {
	t.Helper()
	req, err := http.NewRequest(r.method, a.url+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	for k, v := range r.hdr {
		req.Header.Set(k, v)
	}
	res, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return hres{res.StatusCode, res.Header, b}
}

func short(b []byte) string {
	if len(b) > 160 {
		return string(b[:160]) + "…"
	}
	return string(b)
}

func errorCode(b []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return e.Error.Code
}

func corsHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			out = append(out, k)
		}
	}
	return out
}

func multipartBody(field, value string) (string, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	_ = w.WriteField(field, value)
	_ = w.Close()
	return w.FormDataContentType(), buf.String()
}

func (a *guardedApp) counts(t *testing.T) (plans, runs int) {
	t.Helper()
	ps, err := a.st.ListPlans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rs, total, err := a.st.ListRuns(context.Background(), store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	_ = rs
	return len(ps), int(total)
}

// TestCrossOriginSuite fires what a hostile page (or a DNS-rebound one) can send at a real server
// holding a plan and a finished run: none may be accepted, and afterwards the database holds the
// same plan, unchanged, and no new run; the load target saw no request.
func TestCrossOriginSuite(t *testing.T) {
	a := newGuardedApp(t, api.GuardConfig{})
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })

	// Setup, CLI-style (no Origin): plan 1 and a finished run 1.
	plan := planJSON(tg.URL, 1, "1s")
	if r := a.send(t, hreq{name: "setup plan", method: "POST", path: "/api/plans", ctype: "application/json", body: plan}); r.status != 201 {
		t.Fatalf("setup: create plan: %d %s", r.status, r.body)
	}
	r := a.send(t, hreq{name: "setup run", method: "POST", path: "/api/plans/1/runs", ctype: "application/json"})
	if r.status != 201 {
		t.Fatalf("setup: start run: %d %s", r.status, r.body)
	}
	waitRunEnd(t, a, 1)
	plansBefore, runsBefore := a.counts(t)
	planBefore := a.send(t, hreq{name: "plan before", method: "GET", path: "/api/plans/1"}).body
	targetBefore := tg.Requests()

	evil := "http://evil.example"
	rebound := "evil.example:" + a.port // DNS rebinding: the attacker's name, resolving to 127.0.0.1
	otherPort := "127.0.0.1:1"
	if a.port == "1" {
		otherPort = "127.0.0.1:2"
	}
	mpType, mpBody := multipartBody("plan", plan)
	form := "plan=" + url.QueryEscape(plan)
	o := func(origin string) map[string]string { return map[string]string{"Origin": origin} }
	of := func(origin, site string) map[string]string {
		return map[string]string{"Origin": origin, "Sec-Fetch-Site": site}
	}
	preflight := func(method string) map[string]string {
		return map[string]string{"Origin": evil, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": "content-type"}
	}
	cases := []struct {
		hreq
		want int // the status expected; any 2xx/3xx or CORS header is a failure whatever this says
	}{
		// Simple requests: no preflight, any page can send them.
		{hreq{"simple text/plain create", "POST", "/api/plans", "", "text/plain", plan, of(evil, "cross-site")}, 403},
		{hreq{"simple urlencoded create", "POST", "/api/plans", "", "application/x-www-form-urlencoded", form, of(evil, "cross-site")}, 403},
		{hreq{"simple multipart create", "POST", "/api/plans", "", mpType, mpBody, of(evil, "cross-site")}, 403},
		{hreq{"simple text/plain start", "POST", "/api/plans/1/runs", "", "text/plain", "", of(evil, "cross-site")}, 403},
		{hreq{"simple urlencoded start", "POST", "/api/plans/1/runs", "", "application/x-www-form-urlencoded", "", of(evil, "cross-site")}, 403},
		{hreq{"simple multipart start", "POST", "/api/plans/1/runs", "", mpType, mpBody, of(evil, "cross-site")}, 403},
		{hreq{"simple text/plain, Origin only", "POST", "/api/plans/1/runs", "", "text/plain", "", o(evil)}, 403},
		{hreq{"simple urlencoded, Sec-Fetch-Site only", "POST", "/api/plans", "", "application/x-www-form-urlencoded", form, map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403},
		{hreq{"text/plain without Origin (old browser form)", "POST", "/api/plans/1/runs", "", "text/plain", "", nil}, 415},
		{hreq{"multipart without Origin", "POST", "/api/plans", "", mpType, mpBody, nil}, 415},
		{hreq{"no Content-Type without Origin", "POST", "/api/plans/1/runs", "", "", "", nil}, 415},
		{hreq{"json-like media type", "POST", "/api/plans", "", "text/plain; application/json", plan, nil}, 415},
		// Preflighted methods and types, as if the browser let them through.
		{hreq{"json create from evil", "POST", "/api/plans", "", "application/json", plan, of(evil, "cross-site")}, 403},
		{hreq{"json start from evil", "POST", "/api/plans/1/runs", "", "application/json", "", o(evil)}, 403},
		{hreq{"PUT from evil", "PUT", "/api/plans/1", "", "application/json", strings.Replace(plan, "api test", "pwned", 1), o(evil)}, 403},
		{hreq{"DELETE plan from evil", "DELETE", "/api/plans/1", "", "application/json", "", o(evil)}, 403},
		{hreq{"DELETE run from evil", "DELETE", "/api/runs/1", "", "application/json", "", o(evil)}, 403},
		{hreq{"PATCH run from evil", "PATCH", "/api/runs/1", "", "application/json", `{"notes":"pwned"}`, o(evil)}, 403},
		{hreq{"stop from evil", "POST", "/api/runs/1/stop", "", "application/json", "", o(evil)}, 403},
		{hreq{"live control from evil", "POST", "/api/runs/1/control", "", "application/json", `{"vus":5000}`, o(evil)}, 403},
		{hreq{"live control text/plain without Origin", "POST", "/api/runs/1/control", "", "text/plain", `{"vus":5000}`, nil}, 415},
		{hreq{"rebound live control", "POST", "/api/runs/1/control", rebound, "application/json", `{"vus":5000}`, of("http://"+rebound, "same-origin")}, 421},
		{hreq{"custom method from evil", "FOO", "/api/plans", "", "application/json", plan, o(evil)}, 403},
		{hreq{"preflight POST", "OPTIONS", "/api/plans", "", "", "", preflight("POST")}, 405},
		{hreq{"preflight start", "OPTIONS", "/api/plans/1/runs", "", "", "", preflight("POST")}, 405},
		{hreq{"preflight DELETE", "OPTIONS", "/api/plans/1", "", "", "", preflight("DELETE")}, 405},
		// Origins that look close to ours.
		{hreq{"Origin null (sandboxed iframe, file:)", "POST", "/api/plans", "", "application/json", plan, o("null")}, 403},
		{hreq{"Origin null text/plain", "POST", "/api/plans/1/runs", "", "text/plain", "", o("null")}, 403},
		{hreq{"same host, other port", "POST", "/api/plans/1/runs", "", "application/json", "", of("http://"+otherPort, "same-site")}, 403},
		{hreq{"same host:port, https", "POST", "/api/plans/1/runs", "", "application/json", "", o("https://" + a.host)}, 403},
		{hreq{"look-alike name", "POST", "/api/plans/1/runs", "", "application/json", "", o("http://localhost.evil.example:" + a.port)}, 403},
		{hreq{"our Origin with a path", "POST", "/api/plans/1/runs", "", "application/json", "", o("http://" + a.host + "/x")}, 403},
		{hreq{"same-site fetch", "POST", "/api/plans/1/runs", "", "application/json", "", map[string]string{"Sec-Fetch-Site": "same-site"}}, 403},
		// Forged Host and DNS rebinding: reads too.
		{hreq{"forged Host read", "GET", "/api/plans", "evil.example", "", "", nil}, 421},
		{hreq{"forged Host create", "POST", "/api/plans", "evil.example", "application/json", plan, nil}, 421},
		{hreq{"rebound start", "POST", "/api/plans/1/runs", rebound, "application/json", "", of("http://"+rebound, "same-origin")}, 421},
		{hreq{"rebound delete", "DELETE", "/api/plans/1", rebound, "application/json", "", of("http://"+rebound, "same-origin")}, 421},
		{hreq{"rebound read runs", "GET", "/api/runs", rebound, "", "", nil}, 421},
		{hreq{"rebound read plan", "GET", "/api/plans/1", rebound, "", "", nil}, 421},
		{hreq{"rebound export", "GET", "/api/runs/1/report?format=json", rebound, "", "", nil}, 421},
		{hreq{"rebound SPA", "GET", "/", rebound, "", "", nil}, 421},
		{hreq{"rebound preflight", "OPTIONS", "/api/plans", rebound, "", "", preflight("POST")}, 421},
		{hreq{"loopback IP, other port", "GET", "/api/plans", otherPort, "", "", nil}, 421},
		{hreq{"localhost without port (80)", "GET", "/api/plans", "localhost", "", "", nil}, 421},
		{hreq{"trailing-dot name", "GET", "/api/plans", "localhost.:" + a.port, "", "", nil}, 421},
		{hreq{"unknown trailing slash route", "GET", "/api/plans/", rebound, "", "", nil}, 421},
	}
	accepted := 0
	for _, c := range cases {
		r := a.send(t, c.hreq)
		if r.status < 400 || len(corsHeaders(r.hdr)) > 0 {
			accepted++
			t.Errorf("%s: accepted: %d %v %s", c.name, r.status, corsHeaders(r.hdr), short(r.body))
			continue
		}
		if r.status != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, r.status, c.want, short(r.body))
		}
		if !bytes.HasPrefix(r.body, []byte(`{"error":{"code":"`)) {
			t.Errorf("%s: not the API's error shape: %s", c.name, short(r.body))
		}
	}

	// Websocket upgrades of the live stream of run 1.
	wsCases := []struct {
		name string
		host string
		hdr  http.Header
		want int
	}{
		{"ws foreign Origin", "", http.Header{"Origin": {evil}}, 403},
		{"ws foreign Origin, cross-site", "", http.Header{"Origin": {evil}, "Sec-Fetch-Site": {"cross-site"}}, 403},
		{"ws Origin null", "", http.Header{"Origin": {"null"}}, 403},
		{"ws other port Origin", "", http.Header{"Origin": {"http://" + otherPort}}, 403},
		{"ws rebound Host+Origin", rebound, http.Header{"Origin": {"http://" + rebound}}, 421},
		{"ws rebound Host, no Origin", rebound, nil, 421},
	}
	for _, c := range wsCases {
		status := wsDial(t, a, c.host, c.hdr)
		if status == http.StatusSwitchingProtocols {
			accepted++
			t.Errorf("%s: upgraded", c.name)
		} else if status != c.want {
			t.Errorf("%s: status %d, want %d", c.name, status, c.want)
		}
	}
	total := len(cases) + len(wsCases)
	t.Logf("cross-origin suite: %d requests, %d accepted", total, accepted)
	if total < 30 {
		t.Errorf("only %d requests in the suite", total)
	}

	plansAfter, runsAfter := a.counts(t)
	if plansAfter != plansBefore || runsAfter != runsBefore {
		t.Errorf("database changed: plans %d → %d, runs %d → %d", plansBefore, plansAfter, runsBefore, runsAfter)
	}
	if after := a.send(t, hreq{name: "plan after", method: "GET", path: "/api/plans/1"}).body; !bytes.Equal(after, planBefore) {
		t.Errorf("plan 1 changed:\n%s\n%s", short(planBefore), short(after))
	}
	if n := tg.Requests(); n != targetBefore {
		t.Errorf("the target saw %d requests after the setup run: a run was started", n-targetBefore)
	}
}

// wsDial tries the live stream of run 1 and returns the handshake status (101 when upgraded).
func wsDial(t *testing.T, a *guardedApp, host string, hdr http.Header) int {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	if host != "" {
		hdr = hdr.Clone()
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Set("Host", host) // gorilla sends this as the request's Host
	}
	c, res, err := d.Dial("ws"+strings.TrimPrefix(a.url, "http")+"/api/runs/1/live", hdr)
	if err == nil {
		c.Close()
		return res.StatusCode
	}
	if res == nil {
		t.Fatalf("websocket dial: %v", err)
	}
	return res.StatusCode
}

func waitRunEnd(t *testing.T, a *guardedApp, id int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r := a.send(t, hreq{name: "run", method: "GET", path: fmt.Sprintf("/api/runs/%d", id)})
		var run struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(r.body, &run)
		if run.Status != "" && run.Status != "running" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("run %d did not end", id)
}

// TestSameOriginAndCLIClientsWork: what the UI (same origin) and the CLI (no Origin) send is
// accepted, under every name of the server, and the live stream upgrades from the same origin.
func TestSameOriginAndCLIClientsWork(t *testing.T) {
	a := newGuardedApp(t, api.GuardConfig{})
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })
	self := "http://" + a.host
	browser := func(origin string) map[string]string {
		return map[string]string{"Origin": origin, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
	}
	steps := []struct {
		hreq
		want int
	}{
		{hreq{"UI create", "POST", "/api/plans", "", "application/json", planJSON(tg.URL, 1, "1s"), browser(self)}, 201},
		{hreq{"UI update, charset", "PUT", "/api/plans/1", "", "application/json; charset=utf-8", planJSON(tg.URL, 1, "1s"), browser(self)}, 200},
		{hreq{"UI start", "POST", "/api/plans/1/runs", "", "application/json", "", browser(self)}, 201},
		{hreq{"UI read", "GET", "/api/runs/1", "", "", "", browser(self)}, 200},
		{hreq{"cross-site link to a page (GET navigation)", "GET", "/", "", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}}, 200},
		{hreq{"CLI read", "GET", "/api/plans", "", "", "", nil}, 200},
		{hreq{"CLI create", "POST", "/api/plans", "", "application/json", planJSON(tg.URL, 1, "1s"), nil}, 201},
		{hreq{"typed in the address bar", "POST", "/api/plans", "", "application/json", planJSON(tg.URL, 1, "1s"), map[string]string{"Sec-Fetch-Site": "none"}}, 201},
		{hreq{"localhost name, same origin", "POST", "/api/plans", "localhost:" + a.port, "application/json", planJSON(tg.URL, 1, "1s"), browser("http://localhost:" + a.port)}, 201},
		{hreq{"LOCALHOST uppercase", "GET", "/api/plans", "LOCALHOST:" + a.port, "", "", nil}, 200},
		{hreq{"[::1] name, same origin", "GET", "/api/plans", "[::1]:" + a.port, "", "", nil}, 200},
		{hreq{"CLI delete", "DELETE", "/api/plans/2", "", "application/json", "", nil}, 204},
	}
	for _, s := range steps {
		r := a.send(t, s.hreq)
		if r.status != s.want {
			t.Errorf("%s: status %d, want %d (%s)", s.name, r.status, s.want, r.body)
		}
		if cors := corsHeaders(r.hdr); len(cors) > 0 {
			t.Errorf("%s: CORS headers %v", s.name, cors)
		}
	}
	// The live stream from the same origin, while run 1 runs: samples then the summary.
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	c, res, err := d.Dial("ws"+strings.TrimPrefix(a.url, "http")+"/api/runs/1/live", http.Header{"Origin": {self}})
	if err != nil {
		t.Fatalf("same-origin websocket: %v (%v)", err, res)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var last string
	n := 0
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			break
		}
		var m struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &m)
		last = m.Type
		n++
	}
	if last != "summary" {
		t.Errorf("same-origin live stream: %d messages, last %q, want the summary", n, last)
	}
	// CLI-style websocket (no Origin) on the finished run.
	c2, _, err := d.Dial("ws"+strings.TrimPrefix(a.url, "http")+"/api/runs/1/live", nil)
	if err != nil {
		t.Fatalf("websocket without Origin: %v", err)
	}
	c2.Close()
}

// TestPublicURL: behind a proxy, the public name is accepted as Host and its exact origin as
// Origin, also when the proxy rewrites Host to the bound address; http on the same name is not
// the same origin.
func TestPublicURL(t *testing.T) {
	a := newGuardedApp(t, api.GuardConfig{PublicURLs: []string{"https://Volley.Example.com", "http://volley.internal:8443"}})
	pub := "https://volley.example.com"
	cases := []struct {
		hreq
		want int
	}{
		{hreq{"proxied Host", "GET", "/api/plans", "volley.example.com", "", "", nil}, 200},
		{hreq{"proxied Host with the default port", "GET", "/api/plans", "volley.example.com:443", "", "", nil}, 200},
		{hreq{"second public URL", "GET", "/api/plans", "volley.internal:8443", "", "", nil}, 200},
		{hreq{"second public URL, wrong port", "GET", "/api/plans", "volley.internal", "", "", nil}, 421},
		{hreq{"public name, other port", "GET", "/api/plans", "volley.example.com:8080", "", "", nil}, 421},
		{hreq{"state change through the proxy", "POST", "/api/plans", "volley.example.com", "application/json", planJSON("http://127.0.0.1:9/", 1, "1s"), map[string]string{"Origin": pub, "Sec-Fetch-Site": "same-origin"}}, 201},
		{hreq{"proxy rewrote Host", "DELETE", "/api/plans/1", "", "application/json", "", map[string]string{"Origin": pub + ":443"}}, 204},
		{hreq{"http on the public name", "POST", "/api/plans", "volley.example.com", "application/json", planJSON("http://127.0.0.1:9/", 1, "1s"), map[string]string{"Origin": "http://volley.example.com"}}, 403},
		{hreq{"public subdomain", "POST", "/api/plans", "volley.example.com", "application/json", "{}", map[string]string{"Origin": "https://x.volley.example.com"}}, 403},
	}
	for _, c := range cases {
		if r := a.send(t, c.hreq); r.status != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, r.status, c.want, short(r.body))
		}
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	_, res, _ := d.Dial("ws"+strings.TrimPrefix(a.url, "http")+"/api/runs/1/live", http.Header{"Origin": {pub}})
	if res == nil || res.StatusCode != http.StatusNotFound { // past the guard and the upgrader's check: no run 1
		t.Errorf("websocket from the public origin: %v, want 404 (no such run)", res)
	}

	for _, bad := range []string{"ftp://x", "https://", "https://x/path", "https://u@x", "https://x?q", "volley.example.com", "https://x:99999"} {
		if _, err := api.NewGuard(api.GuardConfig{PublicURLs: []string{bad}}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("public URL %q: err %v, want one naming it", bad, err)
		}
	}
}

// TestGuardUnspecifiedBind: bound to 0.0.0.0 / ::, the address a connection arrived on (an
// interface address) is accepted with its port, next to the loopback names; other addresses are
// not. No traffic: the local address is set as net/http sets it.
func TestGuardUnspecifiedBind(t *testing.T) {
	g, _ := api.NewGuard(api.GuardConfig{})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	h := g.Wrap(ok)
	for _, c := range []struct {
		local, host, origin string
		want                int
	}{
		{"192.0.2.10:8080", "192.0.2.10:8080", "", 204},
		{"192.0.2.10:8080", "192.0.2.10:8080", "http://192.0.2.10:8080", 204},
		{"192.0.2.10:8080", "localhost:8080", "", 204},
		{"192.0.2.10:8080", "192.0.2.11:8080", "", 421},
		{"192.0.2.10:8080", "192.0.2.10:8081", "", 421},
		{"192.0.2.10:8080", "192.0.2.10:8080", "http://192.0.2.11:8080", 403},
		{"[::ffff:192.0.2.10]:8080", "192.0.2.10:8080", "", 204},
		{"[2001:db8::5]:8080", "[2001:db8::5]:8080", "http://[2001:db8::5]:8080", 204},
		{"[2001:db8::5]:8080", "[2001:db8::6]:8080", "", 421},
		{"[2001:db8::5]:80", "[2001:db8::5]", "", 204},
		{"[2001:db8::5]:8080", "volley.lan:8080", "", 421},
	} {
		req := httptest.NewRequest("POST", "/api/plans", strings.NewReader("{}"))
		req.Host = c.host
		req.Header.Set("Content-Type", "application/json")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		local, _ := net.ResolveTCPAddr("tcp", c.local)
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("local %s, Host %s, Origin %q: %d, want %d (%s)", c.local, c.host, c.origin, w.Code, c.want, w.Body)
		}
	}
}
