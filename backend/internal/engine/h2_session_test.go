package engine

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// The session features on HTTP/2 exactly as on HTTP/1.1 (cookies_test.go, decode_test.go): over
// h2c, with the VU's own connections and with shared ones, login sets a per-VU session cookie
// that the VU's next request carries (the server answers 403 otherwise), and a gzip JSON answer
// to the http.compression Accept-Encoding passes its JSON and body checks, its decoded size
// reported apart from the wire size.
func TestH2CookieJarAndGzip(t *testing.T) {
	doc := []byte(`{"data":{"status":"active","items":[` + strings.Repeat(`{"id":1,"name":"volley"},`, 200) + `{"id":2}]}}`)
	gz := encode(t, "gzip", doc)
	var good, bad, plain atomic.Int64
	tg := newH2Target(t, false, false, func(w http.ResponseWriter, r *http.Request) {
		vu := r.Header.Get("X-VU")
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s" + vu, Path: "/"})
		case "/me":
			c, err := r.Cookie("sid")
			th, _ := r.Cookie("theme")
			if err != nil || c.Value != "s"+vu || th == nil || th.Value != "dark" || len(r.Header.Values("Cookie")) != 1 {
				bad.Add(1)
				w.WriteHeader(403)
				return
			}
			good.Add(1)
			if r.Header.Get("Accept-Encoding") != "gzip, br" {
				plain.Add(1)
				_, _ = w.Write(doc)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gz)
		}
	})
	for _, shared := range []int{0, 2} {
		t.Run(fmt.Sprintf("h2_connections=%d", shared), func(t *testing.T) {
			good.Store(0)
			bad.Store(0)
			plain.Store(0)
			const vus, iters = 4, 5
			_, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","flow":"sequence","requests":[
			  {"method":"POST","url":"http://app.test/login","headers":{"X-VU":"{{vu}}"}},
			  {"url":"http://app.test/me","headers":{"X-VU":"{{vu}}","Cookie":"theme=dark"},
			   "checks":[{"type":"status","op":"eq","value":200},{"type":"json","path":"data.status","op":"eq","value":"active"},
			             {"type":"body","op":"contains","value":"volley"}]}],
			"load":{"executor":"per-vu-iterations","vus":%d,"iterations":%d},
			"http":{"timeout":"5s","version":"h2c","h2_connections":%d,"compression":["gzip","br"],"hosts":{"app.test":%q}}}`,
				vus, iters, shared, tg.addr))
			n := int64(vus * iters)
			if good.Load() != n || bad.Load() != 0 || plain.Load() != 0 || sum.Successes != 2*n || tg.notH2.Load() != 0 {
				t.Fatalf("authenticated %d (refused %d, uncompressed %d), successes %d of %d, kinds %v", good.Load(), bad.Load(), plain.Load(), sum.Successes, 2*n, sum.ErrorKinds)
			}
			for _, c := range sum.Checks {
				if c.Passes != n || c.Fails != 0 {
					t.Errorf("check %q: %d passes, %d fails", c.Check, c.Passes, c.Fails)
				}
			}
			if sum.Protocols[metrics.ProtoH2] != 2*n {
				t.Errorf("protocols %v", sum.Protocols)
			}
			if sum.BodyBytesIn != n*int64(len(gz)) || sum.BodyBytesDecoded != n*int64(len(doc)) {
				t.Errorf("body bytes %d (want %d on the wire), decoded %d (want %d)", sum.BodyBytesIn, n*int64(len(gz)), sum.BodyBytesDecoded, n*int64(len(doc)))
			}
		})
	}
}

// http.max_header bounds an HTTP/2 response's header list as it bounds an HTTP/1.1 header: one
// 3 KB field, or ten of 300 bytes, pass with the default (64 KiB) and 8192, and are
// header_too_large with 2048.
func TestH2MaxHeader(t *testing.T) {
	tg := newH2Target(t, false, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/one" {
			w.Header().Set("X-Big", strings.Repeat("b", 3000))
			return
		}
		for i := range 10 {
			w.Header().Set(fmt.Sprintf("X-Part-%d", i), strings.Repeat("p", 300))
		}
	})
	for _, c := range []struct {
		field string
		kind  string
	}{{"", ""}, {`,"max_header":2048`, "header_too_large"}, {`,"max_header":8192`, ""}} {
		for _, path := range []string{"one", "many"} {
			_, sum, _ := runEngine(t, fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/%s"}],
			"load":{"executor":"per-vu-iterations","vus":2,"iterations":3},"http":{"timeout":"5s","version":"h2c"%s}}`, tg.addr, path, c.field))
			if c.kind == "" && (sum.Successes != 6 || sum.Errors != 0) || c.kind != "" && sum.ErrorKinds[c.kind] != 6 {
				t.Errorf("/%s, http%s: successes %d, kinds %v; want %q for all 6 %+v", path, c.field, sum.Successes, sum.ErrorKinds, c.kind, sum.Failures)
			}
		}
	}
}
