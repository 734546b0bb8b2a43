package engine

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// hopTarget is a loopback server that redirects a request with ?code=…&to=… (to, with the test's
// origins substituted: {A} and {B}), and records every request it receives as "METHOD path",
// its headers (sorted "Name: value") and its body.
type hopTarget struct {
	*testutil.Target
	got seen
}

func newHopTarget(t *testing.T, origins func() (string, string)) *hopTarget {
	h := &hopTarget{}
	h.Target = testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<10))
		var lines []string
		for k, vs := range r.Header {
			for _, v := range vs {
				lines = append(lines, k+": "+v)
			}
		}
		sort.Strings(lines)
		h.got.add(r.Method + " " + r.URL.Path + "\n" + strings.Join(lines, "\n") + "\n" + string(b))
		if to := r.URL.Query().Get("to"); to != "" {
			a, b := origins()
			to = strings.NewReplacer("{A}", a, "{B}", b).Replace(to)
			code := 302
			fmt.Sscan(r.URL.Query().Get("code"), &code)
			w.Header().Set("Location", to)
			w.WriteHeader(code)
		}
	})
	return h
}

// hop builds a redirecting path: the server answers code with Location to.
func hop(path string, code int, to string) string {
	return path + "?code=" + fmt.Sprint(code) + "&to=" + url.QueryEscape(to)
}

// On a redirect to another origin (scheme, host or port), the credentials of the original
// request stay behind — Authorization, Cookie, Proxy-Authorization, WWW-Authenticate, the
// request's secret_headers and headers rendered from {{secret.NAME}} — and once dropped they stay
// dropped, even on a hop back to the first origin. Same-origin hops keep every header. A 303 (and
// 301/302) turns a POST into a GET without its body or Content-Type; a 307/308 keeps both. Each
// case runs the request once, both as a static (pre-serialized) and as a templated request.
func TestRedirectHeadersAcrossOrigins(t *testing.T) {
	var a, b *hopTarget
	origins := func() (string, string) { return a.URL, b.URL }
	a, b = newHopTarget(t, origins), newHopTarget(t, origins)

	const (
		plain   = "User-Agent: volley\nX-Plain: plain\n"
		secrets = "Authorization: Bearer s3cr3t\nCookie: sid=s3cr3t\nProxy-Authorization: Basic s3cr3t\n" +
			"Www-Authenticate: Basic\nX-Api-Key: k3y\nX-Token: t-s3cr3t\n"
	)
	cases := []struct {
		name    string
		method  string
		path    string // on A
		body    string
		headers string // extra plan headers, JSON members
		wantA   []string
		wantB   []string
	}{
		{
			name: "same origin relative", path: hop("/start", 302, "/final"),
			wantA: []string{"GET /start\n" + secrets + plain, "GET /final\n" + secrets + plain},
		},
		{
			name: "same origin absolute", path: hop("/start", 301, "{A}/final"),
			wantA: []string{"GET /start\n" + secrets + plain, "GET /final\n" + secrets + plain},
		},
		{
			name: "cross origin", path: hop("/start", 302, "{B}/final"),
			wantA: []string{"GET /start\n" + secrets + plain},
			wantB: []string{"GET /final\n" + plain},
		},
		{
			name: "cross origin 308", path: hop("/start", 308, "{B}/final"),
			wantA: []string{"GET /start\n" + secrets + plain},
			wantB: []string{"GET /final\n" + plain},
		},
		{
			name: "back to the first origin", path: hop("/start", 302, "{B}"+hop("/bounce", 307, "{A}/final")),
			wantA: []string{"GET /start\n" + secrets + plain, "GET /final\n" + plain},
			wantB: []string{"GET /bounce\n" + plain},
		},
		{
			name: "same origin then cross", path: hop("/start", 302, hop("/again", 302, "{B}/final")),
			wantA: []string{"GET /start\n" + secrets + plain, "GET /again\n" + secrets + plain},
			wantB: []string{"GET /final\n" + plain},
		},
		{
			name: "POST 303 cross origin", method: "POST", body: "payload", path: hop("/start", 303, "{B}/final"),
			headers: `,"Content-Type":"text/plain"`,
			wantA:   []string{"POST /start\n" + secrets + "Content-Length: 7\nContent-Type: text/plain\n" + plain + "payload"},
			wantB:   []string{"GET /final\n" + plain},
		},
		{
			name: "POST 303 same origin", method: "POST", body: "payload", path: hop("/start", 303, "/final"),
			headers: `,"Content-Type":"text/plain"`,
			wantA: []string{"POST /start\n" + secrets + "Content-Length: 7\nContent-Type: text/plain\n" + plain + "payload",
				"GET /final\n" + secrets + plain},
		},
		{
			name: "POST 307 cross origin", method: "POST", body: "payload", path: hop("/start", 307, "{B}/final"),
			headers: `,"Content-Type":"text/plain"`,
			wantA:   []string{"POST /start\n" + secrets + "Content-Length: 7\nContent-Type: text/plain\n" + plain + "payload"},
			wantB:   []string{"POST /final\nContent-Length: 7\nContent-Type: text/plain\n" + plain + "payload"},
		},
		{
			name: "POST 302 then 307", method: "POST", body: "payload", path: hop("/start", 302, hop("/again", 307, "/final")),
			headers: `,"Content-Type":"text/plain"`,
			wantA: []string{"POST /start\n" + secrets + "Content-Length: 7\nContent-Type: text/plain\n" + plain + "payload",
				"GET /again\n" + secrets + plain, "GET /final\n" + secrets + plain},
		},
	}
	for _, c := range cases {
		for _, templated := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/templated=%v", c.name, templated), func(t *testing.T) {
				a.got.reset()
				b.got.reset()
				method := c.method
				if method == "" {
					method = "GET"
				}
				// X-Plain is templated ({{iteration}} renders 0) in the templated variant: the request is
				// rendered per iteration instead of serialized once.
				// It also has X-Mixed, a secret with a per-VU part: a header rendered per iteration
				// from a {{secret.NAME}}.
				xPlain, mixed := "plain", ""
				if templated {
					xPlain, mixed = "p{{iteration}}lain", `,"X-Mixed":"m-{{secret.S}}-{{vu}}"`
				}
				js := fmt.Sprintf(`{"name":"t","requests":[{"method":%q,"url":%q,"body":%q,
					"headers":{"Authorization":"Bearer {{secret.S}}","Cookie":"sid={{secret.S}}",
					"Proxy-Authorization":"Basic {{secret.S}}","WWW-Authenticate":"Basic","x-api-key":"k3y",
					"X-Token":"t-{{secret.S}}","X-Plain":%q%s%s},
					"secret_headers":["X-API-KEY"]}],
					"load":{"executor":"per-vu-iterations","vus":1,"iterations":1},
					"http":{"timeout":"5s","follow_redirects":true}}`,
					method, a.URL+c.path, c.body, xPlain, mixed, c.headers)
				p := mustPlan(t, js)
				p.Secrets = plan.SecretValues{"S": "s3cr3t"}
				if templated {
					xPlain = "p0lain"
				}
				sum, _ := run(t, p)
				if sum.Requests != 1 || sum.Errors != 0 {
					t.Fatalf("requests %d errors %v codes %v", sum.Requests, sum.ErrorKinds, sum.StatusCodes)
				}
				// the wanted requests as the servers record them: header lines sorted
				fix := func(want []string) []string {
					out := make([]string, len(want))
					for i, w := range want {
						w = strings.ReplaceAll(w, "X-Plain: plain", "X-Plain: "+xPlain)
						if templated {
							w = strings.ReplaceAll(w, "X-Token: t-s3cr3t\n", "X-Token: t-s3cr3t\nX-Mixed: m-s3cr3t-1\n")
						}
						lines := strings.Split(w, "\n")
						last := len(lines) - 1 // the body
						sort.Strings(lines[1:last])
						out[i] = strings.Join(lines, "\n")
					}
					return out
				}
				for _, srv := range []struct {
					name string
					got  []string
					want []string
				}{{"A", a.got.all(), fix(c.wantA)}, {"B", b.got.all(), fix(c.wantB)}} {
					if strings.Join(srv.got, "\n---\n") != strings.Join(srv.want, "\n---\n") {
						t.Errorf("server %s received:\n%s\nwant:\n%s", srv.name,
							strings.Join(srv.got, "\n---\n"), strings.Join(srv.want, "\n---\n"))
					}
				}
			})
		}
	}
}

func (s *seen) reset() {
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
}

func TestSameOrigin(t *testing.T) {
	for _, c := range []struct {
		scheme, host, scheme2, host2 string
		same                         bool
	}{
		{"http", "127.0.0.1:8080", "http", "127.0.0.1:8080", true},
		{"http", "127.0.0.1:8080", "http", "127.0.0.1:8081", false},
		{"http", "127.0.0.1:8080", "https", "127.0.0.1:8080", false},
		{"http", "example.com", "http", "example.com:80", true},
		{"https", "example.com:443", "https", "example.com", true},
		{"https", "example.com", "http", "example.com:443", false},
		{"http", "example.com", "https", "example.com", false},
		{"http", "Example.COM", "HTTP", "example.com", true},
		{"http", "example.com", "http", "api.example.com", false},
		{"http", "api.example.com", "http", "example.com", false},
		{"http", "[::1]:80", "http", "[::1]", true},
		{"http", "[::1]:8080", "http", "[::1]:8081", false},
		{"http", "[::80]", "http", "[::]", false},
	} {
		got := sameOrigin(appendOrigin(nil, []byte(c.scheme), []byte(c.host)), []byte(c.scheme2), []byte(c.host2))
		if got != c.same {
			t.Errorf("%s://%s vs %s://%s: same %v, want %v", c.scheme, c.host, c.scheme2, c.host2, got, c.same)
		}
	}
}
