package engine

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// Login → authenticated request per VU, at 200 VUs: every VU logs in (the server issues a new,
// random session per login, bound to the VU number the request carries) and then asks for its
// page; the server answers 200 only when the page request carries exactly the session of that
// same VU's latest login, plus the plan's own cookie (merged), else 403. Every request succeeds,
// and the server's counts equal Volley's.
func TestLoginSessionPerVU(t *testing.T) {
	const vus, iters = 200, 3
	var mu sync.Mutex
	owner := map[string]string{}  // session → VU
	latest := map[string]string{} // VU → its latest session
	var logins, good, bad atomic.Int64
	var badWhy atomic.Value
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		vu := r.Header.Get("X-VU")
		switch r.URL.Path {
		case "/login":
			logins.Add(1)
			var b [16]byte
			_, _ = rand.Read(b[:])
			sid := hex.EncodeToString(b[:])
			mu.Lock()
			owner[sid], latest[vu] = vu, sid
			mu.Unlock()
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: sid, Path: "/", HttpOnly: true})
		case "/me":
			cs := r.Cookies()
			var sid, theme string
			n := 0
			for _, c := range cs {
				switch c.Name {
				case "sid":
					sid = c.Value
					n++
				case "theme":
					theme = c.Value
				}
			}
			mu.Lock()
			ok := n == 1 && owner[sid] == vu && latest[vu] == sid && theme == "dark"
			mu.Unlock()
			if !ok {
				bad.Add(1)
				badWhy.Store(fmt.Sprintf("VU %s sent %q", vu, r.Header.Values("Cookie")))
				w.WriteHeader(403)
				return
			}
			good.Add(1)
		}
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"login","flow":"sequence","requests":[
		{"method":"POST","url":%q,"headers":{"X-VU":"{{vu}}"}},
		{"url":%q,"headers":{"X-VU":"{{vu}}","Cookie":"theme=dark"},"checks":[{"type":"status","op":"eq","value":200}]}],
		"load":{"executor":"per-vu-iterations","vus":%d,"iterations":%d},"http":{"timeout":"10s"}}`,
		tg.URL+"/login", tg.URL+"/me", vus, iters))
	sum, _ := run(t, p)
	if w := badWhy.Load(); w != nil {
		t.Errorf("the server refused a session: %v", w)
	}
	if want := int64(2 * vus * iters); sum.Requests != want || sum.Successes != want || tg.Requests() != want {
		t.Errorf("requests %d, successes %d, server saw %d; want %d each (errors %v)", sum.Requests, sum.Successes, tg.Requests(), want, sum.ErrorKinds)
	}
	if logins.Load() != vus*iters || good.Load() != vus*iters || bad.Load() != 0 {
		t.Errorf("server: %d logins, %d good and %d bad follow-ups", logins.Load(), good.Load(), bad.Load())
	}
}

// The jar's behaviours, RFC 6265 §5 one per row: what a VU sends back after a response set
// cookies. Each row stores setCookies as the answer to a request to from, then asks what a
// request to to carries.
func TestCookieJarRules(t *testing.T) {
	const now = 1_700_000_000
	past := time.Unix(now-3600, 0).UTC().Format(http.TimeFormat)
	future := time.Unix(now+3600, 0).UTC().Format(http.TimeFormat)
	cases := []struct {
		name       string
		from       string // scheme://host/path the cookies came with
		setCookies []string
		to         string
		plan       string // the plan's own Cookie header
		want       string
	}{
		{"host-only to same host", "http://a.test/", []string{"k=v"}, "http://a.test/x", "", "k=v"},
		{"host-only not to subdomain", "http://a.test/", []string{"k=v"}, "http://b.a.test/", "", ""},
		{"domain to subdomain", "http://a.test/", []string{"k=v; Domain=a.test"}, "http://b.a.test/", "", "k=v"},
		{"leading dot ignored", "http://a.test/", []string{"k=v; Domain=.A.TEST"}, "http://b.a.test/", "", "k=v"},
		{"foreign domain rejected", "http://a.test/", []string{"k=v; Domain=b.test"}, "http://b.test/", "", ""},
		{"parent domain from subdomain", "http://x.a.test/", []string{"k=v; Domain=a.test"}, "http://a.test/", "", "k=v"},
		{"no suffix match on IP", "http://127.0.0.1/", []string{"k=v; Domain=0.0.1"}, "http://127.0.0.1/", "", ""},
		{"port ignored", "http://a.test:8080/", []string{"k=v"}, "http://a.test:9090/", "", "k=v"},
		{"default path", "http://a.test/app/login", []string{"k=v"}, "http://a.test/app/x", "", "k=v"},
		{"default path excludes parent", "http://a.test/app/login", []string{"k=v"}, "http://a.test/other", "", ""},
		{"default path of one segment is /", "http://a.test/login", []string{"k=v"}, "http://a.test/other", "", "k=v"},
		{"path prefix needs a boundary", "http://a.test/", []string{"k=v; Path=/app"}, "http://a.test/application", "", ""},
		{"path prefix at a slash", "http://a.test/", []string{"k=v; Path=/app"}, "http://a.test/app/x", "", "k=v"},
		{"bad path is default path", "http://a.test/d/x", []string{"k=v; Path=rel"}, "http://a.test/e", "", ""},
		{"longer path first", "http://a.test/", []string{"a=1; Path=/", "b=2; Path=/x"}, "http://a.test/x/y", "", "b=2; a=1"},
		{"older first at equal paths", "http://a.test/", []string{"z=1", "a=2"}, "http://a.test/", "", "z=1; a=2"},
		{"replaced keeps its place", "http://a.test/", []string{"a=1", "b=2", "a=3"}, "http://a.test/", "", "a=3; b=2"},
		{"same name other path both kept", "http://a.test/", []string{"a=1; Path=/", "a=2; Path=/p"}, "http://a.test/p", "", "a=2; a=1"},
		{"max-age 0 deletes", "http://a.test/", []string{"a=1", "a=; Max-Age=0"}, "http://a.test/", "", ""},
		{"negative max-age deletes", "http://a.test/", []string{"a=1", "a=x; Max-Age=-1"}, "http://a.test/", "", ""},
		{"past expires deletes", "http://a.test/", []string{"a=1", "a=x; Expires=" + past}, "http://a.test/", "", ""},
		{"future expires kept", "http://a.test/", []string{"a=1; Expires=" + future}, "http://a.test/", "", "a=1"},
		{"max-age wins over expires", "http://a.test/", []string{"a=1; Max-Age=60; Expires=" + past}, "http://a.test/", "", "a=1"},
		{"unparsable expires ignored", "http://a.test/", []string{"a=1; Expires=soon"}, "http://a.test/", "", "a=1"},
		{"two-digit year date", "http://a.test/", []string{"a=1; Expires=Sun, 06-Nov-94 08:49:37 GMT"}, "http://a.test/", "", ""},
		{"secure not over http", "https://a.test/", []string{"s=1; Secure", "p=2"}, "http://a.test/", "", "p=2"},
		{"secure over https", "http://a.test/", []string{"s=1; Secure"}, "https://a.test/", "", "s=1"},
		{"httponly and samesite ignored", "http://a.test/", []string{"a=1; HttpOnly; SameSite=Strict"}, "http://a.test/", "", "a=1"},
		{"no equals sign ignored", "http://a.test/", []string{"junk", "a=1"}, "http://a.test/", "", "a=1"},
		{"empty name ignored", "http://a.test/", []string{"=v", "a=1"}, "http://a.test/", "", "a=1"},
		{"empty value kept", "http://a.test/", []string{"a="}, "http://a.test/", "", "a="},
		{"too large ignored", "http://a.test/", []string{"a=" + strings.Repeat("x", maxCookieBytes)}, "http://a.test/", "", ""},
		{"plan's value wins", "http://a.test/", []string{"a=jar", "b=jar"}, "http://a.test/", "a=plan", "a=plan; b=jar"},
		{"plan's cookies alone", "http://a.test/", nil, "http://a.test/", "x=1; y=2", "x=1; y=2"},
		{"IPv6 host", "http://[::1]:80/", []string{"a=1"}, "http://[::1]:81/", "", "a=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var j cookieJar
			fs, fh, fp := splitURL(c.from)
			_ = fs
			for _, sc := range c.setCookies {
				j.store([]byte(sc), canonicalHost([]byte(fh)), []byte(fp), now)
			}
			ts, th, tp := splitURL(c.to)
			got := j.appendHeader(nil, []byte(c.plan), ts == "https", canonicalHost([]byte(th)), []byte(tp), now)
			if string(got) != c.want {
				t.Errorf("Cookie %q, want %q", got, c.want)
			}
		})
	}
}

func splitURL(u string) (scheme, host, path string) {
	scheme, rest, _ := strings.Cut(u, "://")
	i := strings.IndexByte(rest, '/')
	return scheme, rest[:i], rest[i:]
}

// A cookie expires while the jar holds it: sent before its Max-Age, not after.
func TestCookieJarExpiry(t *testing.T) {
	var j cookieJar
	j.store([]byte("a=1; Max-Age=10"), []byte("a.test"), []byte("/"), 100)
	if got := j.appendHeader(nil, nil, false, []byte("a.test"), []byte("/"), 109); string(got) != "a=1" {
		t.Errorf("before expiry %q", got)
	}
	if got := j.appendHeader(nil, nil, false, []byte("a.test"), []byte("/"), 110); string(got) != "" {
		t.Errorf("at expiry %q", got)
	}
}

// Bounds as browsers keep them: 50 cookies per domain (the oldest evicted), 3000 per VU.
func TestCookieJarBounds(t *testing.T) {
	var j cookieJar
	for i := range maxDomainCookies + 5 {
		j.store([]byte("c"+strconv.Itoa(i)+"=x"), []byte("a.test"), []byte("/"), 1)
	}
	got := string(j.appendHeader(nil, nil, false, []byte("a.test"), []byte("/"), 1))
	if n := strings.Count(got, "=x"); n != maxDomainCookies || strings.Contains(got, "c4=") || !strings.Contains(got, "c5=x") {
		t.Errorf("%d cookies kept (%q), want the newest %d", n, got[:40], maxDomainCookies)
	}
	j.clear()
	for d := range maxJarCookies/maxDomainCookies + 2 {
		for i := range maxDomainCookies {
			j.store([]byte("c"+strconv.Itoa(i)+"=x"), []byte("d"+strconv.Itoa(d)+".test"), []byte("/"), 1)
		}
	}
	if len(j.list) != maxJarCookies {
		t.Errorf("jar holds %d cookies, want %d", len(j.list), maxJarCookies)
	}
	if got := j.appendHeader(nil, nil, false, []byte("d0.test"), []byte("/"), 1); len(got) != 0 {
		t.Errorf("the oldest domain's cookies were not evicted: %q", got[:20])
	}
}

// The jar costs nothing unused and allocates nothing once warm: a response without Set-Cookie,
// a VU without a jar, a body without Content-Encoding; and a VU with a jar setting its Cookie
// header on a request again and again.
func TestSessionHooksAllocateNothing(t *testing.T) {
	p := &plan.Plan{Name: "a", Requests: []plan.Request{{URL: "http://127.0.0.1:1/app/x", Headers: map[string]string{"Cookie": "p=1"}}},
		Load: plan.Load{Executor: plan.PerVUIterations, VUs: 1, Iterations: 1}}
	p.Defaults()
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := newVU(e, 0)
	r := &v.reqs[0]
	v.resp.SetStatusCode(200)
	v.resp.SetBodyString(`{"a":1}`)
	unused := func() {
		v.sendCookies(r)
		v.keepCookies(r)
		v.bodyState = bodyUnread
		if k, _, _ := v.decodeBody(); k != metrics.KindNone {
			t.Fatal(k)
		}
	}
	if n := testing.AllocsPerRun(100, unused); n != 0 || v.jar != nil || r.req != nil {
		t.Errorf("unused: %.1f allocations per request (jar %v, own request %v)", n, v.jar != nil, r.req != nil)
	}
	v.resp.Header.Set("Set-Cookie", "sid=abc; Path=/")
	v.keepCookies(r)
	v.resp.Header.Del("Set-Cookie")
	v.sendCookies(r)
	if got := string(r.req.Header.Peek("Cookie")); got != "p=1; sid=abc" {
		t.Fatalf("Cookie %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { v.sendCookies(r); v.keepCookies(r) }); n != 0 {
		t.Errorf("with a jar: %.1f allocations per request", n)
	}
}

// http.cookies "off" keeps no cookie, "iteration" forgets them at each iteration, "vu" (the
// default) keeps them across iterations. The server sets a cookie only on the first request it
// sees without one, and counts the requests that came with it.
func TestCookieModes(t *testing.T) {
	for _, c := range []struct {
		mode     string
		withWant int64 // of 3 iterations × 2 requests
	}{{"off", 0}, {"iteration", 3}, {"vu", 5}, {"", 5}} {
		t.Run("mode="+c.mode, func(t *testing.T) {
			var with atomic.Int64
			tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
				if _, err := r.Cookie("k"); err == nil {
					with.Add(1)
					return
				}
				w.Header().Set("Set-Cookie", "k=1")
			})
			p := mustPlan(t, fmt.Sprintf(`{"name":"m","flow":"sequence","requests":[{"url":%q},{"url":%q}],
				"load":{"executor":"per-vu-iterations","vus":1,"iterations":3},"http":{"cookies":%q}}`, tg.URL+"/a", tg.URL+"/b", c.mode))
			sum, _ := run(t, p)
			if sum.Successes != 6 || with.Load() != c.withWant {
				t.Errorf("%d successes, %d requests with the cookie; want 6 and %d", sum.Successes, with.Load(), c.withWant)
			}
		})
	}
}

// A login answered by a redirect sets its cookie on the 302; the redirect's target already gets
// it (as a browser's), and {"from":"cookie"} extraction reads it for the next request.
func TestCookieOnRedirectAndExtraction(t *testing.T) {
	var got atomic.Value
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			w.Header().Set("Set-Cookie", "sid=s-"+r.Header.Get("X-VU")+"; Path=/")
			w.Header().Set("Location", "/home")
			w.WriteHeader(302)
		case "/home":
			if c, err := r.Cookie("sid"); err != nil || c.Value != "s-"+r.Header.Get("X-VU") {
				w.WriteHeader(401)
			}
		case "/echo":
			got.Store(r.URL.RawQuery)
		}
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"r","flow":"sequence","requests":[
		{"method":"POST","url":%q,"headers":{"X-VU":"{{vu}}"},"extract":[{"var":"sid","from":"cookie","name":"sid"}]},
		{"url":%q}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":1},"http":{"follow_redirects":true}}`,
		tg.URL+"/login", tg.URL+"/echo?sid={{sid}}"))
	sum, _ := run(t, p)
	if sum.Successes != 2 || sum.Errors != 0 {
		t.Errorf("successes %d, errors %v", sum.Successes, sum.ErrorKinds)
	}
	if g, _ := got.Load().(string); g != "sid=s-1" {
		t.Errorf("extracted %q, want sid=s-1", g)
	}
}
