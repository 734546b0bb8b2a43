package importer

import (
	"net/http"
	"strings"
	"testing"
)

func TestCurlGolden(t *testing.T) { impCheckGolden(t, "curl", Options{}) }

// TestCurlRunsAgainstLoopback runs Chromium's "Copy as cURL (cmd)" form of a PUT and checks the
// request the target receives: method, path, query, headers (cookie and auth included), body.
func TestCurlRunsAgainstLoopback(t *testing.T) {
	res := impFixture(t, "curl", "testdata/curl/chromium_cmd_put.txt", Options{})
	delete(res.Plan["http"].(map[string]any), "insecure_skip_verify")
	got := impRun(t, res.Plan)
	if len(got) != 1 {
		t.Fatalf("the target received %d requests, want 1", len(got))
	}
	r := got[0]
	if r.Method != "PUT" || r.Path != "/api/cart" || r.Query != "src=web&v=2" {
		t.Errorf("got %s %s?%s, want PUT /api/cart?src=web&v=2", r.Method, r.Path, r.Query)
	}
	if r.Body != `{"item":42,"qty":3,"note":"50% off"}` {
		t.Errorf("body %q", r.Body)
	}
	for k, v := range map[string]string{"Accept": "application/json", "Content-Type": "application/json", "Cookie": "session=abc123"} {
		if r.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, r.Header.Get(k), v)
		}
	}
	res = impFixture(t, "curl", "testdata/curl/auth_form_redirects.txt", Options{})
	got = impRun(t, res.Plan)
	if len(got) != 1 || got[0].Method != "POST" || got[0].Body != "name=Alice&city=Paris" {
		t.Fatalf("got %+v", got)
	}
	if u, p, ok := (&http.Request{Header: got[0].Header}).BasicAuth(); !ok || u != "alice" || p != "s3cret" {
		t.Errorf("basic auth %q %q %v", u, p, ok)
	}
}

// TestCurlLargeBody: a body near the plan's 1 MiB bound, in each quoting form, comes through
// whole (go-shellwords is quadratic in a word's length: long quoted strings bypass it).
func TestCurlLargeBody(t *testing.T) {
	body := strings.Repeat(`{"k":"v"},`, 90_000)
	for name, cmd := range map[string]string{
		"single": `curl http://a.test/ --data-raw '` + body + `'`,
		"ansi-c": `curl http://a.test/ --data-raw $'` + strings.ReplaceAll(body, `"`, `\"`) + `\n'`,
		"double": `curl http://a.test/ -d "` + strings.ReplaceAll(body, `"`, `\"`) + `"`,
		"cmd":    `curl ^"http://a.test/^" --data-raw ^"` + strings.ReplaceAll(body, `"`, `^\^"`) + `^"`,
	} {
		res, err := Import("curl", []byte(cmd), Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := res.Plan["requests"].([]any)[0].(map[string]any)["body"]
		want := body
		if name == "ansi-c" {
			want += "\n"
		}
		if got != want {
			t.Errorf("%s: the body differs (%d bytes, want %d)", name, len(got.(string)), len(want))
		}
	}
}

// TestCurlQuoting: the words of the quoting forms browsers and shells write.
func TestCurlQuoting(t *testing.T) {
	for _, c := range []struct{ name, cmd, url, body string }{
		{"ansi-c escapes", `curl http://a.test/ --data-raw $'a\'b\n\x41\u00e9\t!'`, "http://a.test/", "a'b\nAé\t!"},
		{"double quotes keep other backslashes", `curl http://a.test/ --data-raw "a\"b\\c\d \$x"`, "http://a.test/", `a"b\c\d $x`},
		{"single quotes are literal", `curl http://a.test/ --data-raw 'a\nb"c'`, "http://a.test/", `a\nb"c`},
		{"continuation lines", "curl \\\n  'http://a.test/p' \\\r\n  --data-raw 'x'", "http://a.test/p", "x"},
		{"cmd: carets, escaped quotes, a new line in a value", "curl ^\"http://a.test/q?a=1^&b=2^\" ^\n  --data-raw ^\"^{^\\^\"k^\\^\":^\\^\"l1^\n\nl2^\\^\"^}^\"", "http://a.test/q?a=1&b=2", `{"k":"l1` + "\n" + `l2"}`},
		{"cmd: %^ before a letter", `curl ^"http://a.test/^" --data-raw ^"100^%^25 off^"`, "http://a.test/", "100%25 off"},
		{"cmd: plain quotes and doubled quotes", `curl "http://a.test/" --data-raw "say ""hi"" \"there\"" ^` + "\n" + ` -X PUT`, "http://a.test/", `say "hi" "there"`},
	} {
		res, err := Import("curl", []byte(c.cmd), Options{})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		r := res.Plan["requests"].([]any)[0].(map[string]any)
		if r["url"] != c.url || r["body"] != c.body {
			t.Errorf("%s: url %q body %q, want %q %q", c.name, r["url"], r["body"], c.url, c.body)
		}
	}
}

// TestCurlProxyHTTP2Form: -x/--proxy becomes http.proxy (curl's default http:// scheme added),
// --http2 and --http2-prior-knowledge http.version "2" and "h2c" (a proxy with them is left
// out: HTTP/2 does not go through one), -F a skipped part with its reason.
func TestCurlProxyHTTP2Form(t *testing.T) {
	h, sk := importHTTP(t, "curl", `curl -x proxy.test:3128 http://a.test/`)
	if h.Proxy != "http://proxy.test:3128" || len(sk) != 0 {
		t.Errorf("-x: proxy %q, skipped %+v", h.Proxy, sk)
	}
	for flag, want := range map[string]string{"--http2": "2", "--http2-prior-knowledge": "h2c"} {
		h, sk = importHTTP(t, "curl", `curl `+flag+` --proxy http://p.test:1 http://a.test/`)
		if h.Version != want || h.Proxy != "" || len(sk) != 1 || !strings.Contains(sk[0].Reason, "HTTP/2 connections do not go through a proxy") {
			t.Errorf("%s: version %q proxy %q skipped %+v", flag, h.Version, h.Proxy, sk)
		}
	}
	_, sk = importHTTP(t, "curl", `curl -F file=@a.bin http://a.test/`)
	if len(sk) != 1 || !strings.Contains(sk[0].Reason, "multipart form bodies are not supported") {
		t.Errorf("-F: skipped %+v", sk)
	}
}
