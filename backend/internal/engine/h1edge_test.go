package engine

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// h1Plan is a plan of one request to url, per-vu-iterations (vus × iters), with request fields
// req (JSON members, may be empty) and http options httpOpts (likewise).
func h1Plan(t *testing.T, url string, vus, iters int, req, httpOpts string) string {
	t.Helper()
	if req != "" {
		req = "," + req
	}
	if httpOpts != "" {
		httpOpts = "," + httpOpts
	}
	return fmt.Sprintf(`{"name":"t","requests":[{"url":%q%s}],"load":{"executor":"per-vu-iterations","vus":%d,"iterations":%d},"http":{"timeout":"5s"%s}}`,
		url, req, vus, iters, httpOpts)
}

// wantCounts checks that Volley counted what the server received: every request the server
// read is one of Volley's requests, and the error kinds are exactly want.
func wantCounts(t *testing.T, sum *metrics.Summary, served int64, want map[string]int64) {
	t.Helper()
	if sum.Requests != served {
		t.Errorf("volley counted %d requests, the server read %d", sum.Requests, served)
	}
	var errs int64
	for k, n := range want {
		errs += n
		if sum.ErrorKinds[k] != n {
			t.Errorf("%s: %d, want %d (kinds %v)", k, sum.ErrorKinds[k], n, sum.ErrorKinds)
		}
	}
	if sum.Errors != errs {
		t.Errorf("%d errors (kinds %v), want %d", sum.Errors, sum.ErrorKinds, errs)
	}
}

// Response headers up to http.max_header are read, whatever the 4 KiB the read buffer starts with
// (a big Set-Cookie, a long Content-Security-Policy, a trailer); beyond it header_too_large, with
// the limit in the message. The body after a grown header arrives intact (a check reads it), and
// the next answers on the same connection too.
func TestResponseHeaderLimit(t *testing.T) {
	cases := []struct {
		name      string
		header    string // the large header field (name: value), or a trailer with chunked
		chunked   bool
		maxHeader int // 0: the default
		tooLarge  bool
	}{
		{name: "8KiB Set-Cookie", header: "Set-Cookie: sid=" + strings.Repeat("c", 8<<10) + "; Path=/"},
		{name: "60KiB CSP", header: "Content-Security-Policy: default-src 'self' " + strings.Repeat("https://a.example.test ", 60<<10/23)},
		{name: "70KiB over the default", header: "X-Big: " + strings.Repeat("x", 70<<10), tooLarge: true},
		{name: "many fields", header: strings.Repeat("X-F: 1\r\n", 5000) + "X-End: 1"},
		{name: "2KiB under max_header 4096", header: "X-Big: " + strings.Repeat("x", 2<<10), maxHeader: 4096},
		{name: "1.5KiB over max_header 1024", header: "X-Big: " + strings.Repeat("x", 1536), maxHeader: 1024, tooLarge: true},
		{name: "10KiB trailer", header: "X-Trail: " + strings.Repeat("t", 10<<10), chunked: true},
		{name: "90KiB trailer", header: "X-Trail: " + strings.Repeat("t", 90<<10), chunked: true, tooLarge: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var answer []byte
			if c.chunked {
				answer = fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Trail\r\n\r\n5\r\nhello\r\n0\r\n%s\r\n\r\n", c.header)
			} else {
				answer = fmt.Appendf(nil, "HTTP/1.1 200 OK\r\n%s\r\nContent-Length: 5\r\n\r\nhello", c.header)
			}
			tg := testutil.NewRawServer(t, func(*http.Request) testutil.RawAnswer { return testutil.RawAnswer{Bytes: answer} })
			opts := ""
			if c.maxHeader > 0 {
				opts = fmt.Sprintf(`"max_header":%d`, c.maxHeader)
			}
			p := mustPlan(t, h1Plan(t, "http://"+tg.Addr+"/", 2, 5, `"checks":[{"type":"body","op":"contains","value":"hello"}]`, opts))
			sum, _ := run(t, p)
			want := map[string]int64{}
			if c.tooLarge {
				want["header_too_large"] = 10
				limit := c.maxHeader
				if limit == 0 {
					limit = 64 << 10
				}
				if len(sum.Failures) != 1 || sum.Failures[0].Message != headerTooLargeMessage(limit) ||
					!strings.Contains(sum.Failures[0].Message, fmt.Sprint(limit)) {
					t.Errorf("failures %+v, want one group saying the limit %d", sum.Failures, limit)
				}
			} else if sum.Successes != 10 {
				t.Errorf("%d successes (checks passed), want 10", sum.Successes)
			}
			wantCounts(t, sum, tg.Requests(), want)
			if !c.tooLarge && tg.Conns() != 2 {
				t.Errorf("%d connections, want 2 (one per VU, kept alive)", tg.Conns())
			}
		})
	}
}

// A read buffer grows only for a header that needs it, once per connection, and never past
// http.max_header; a VU that sees only small headers keeps its 4 KiB.
func TestReadBufferGrowsOnlyWhenNeeded(t *testing.T) {
	big := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nX-Big: %s\r\nContent-Length: 2\r\n\r\nok", strings.Repeat("x", 20<<10))
	small := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	tg := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
		if r.URL.Path == "/big" {
			return testutil.RawAnswer{Bytes: big}
		}
		return testutil.RawAnswer{Bytes: small}
	})
	for _, c := range []struct {
		path string
		size int
	}{{"/small", readBufferSize}, {"/big", 32 << 10}} {
		e, err := newEngine(mustPlan(t, h1Plan(t, "http://"+tg.Addr+c.path, 1, 1, "", "")), Options{})
		if err != nil {
			t.Fatal(err)
		}
		v := newVU(e, 0)
		for range 3 {
			v.do(&v.reqs[0], e.now(), e.now())
		}
		h := v.reqs[0].client
		if h.br.Size() != c.size {
			t.Errorf("%s: read buffer %d B, want %d", c.path, h.br.Size(), c.size)
		}
		v.finish()
	}
}

// Framing a conformant client rejects is an error, never a miscount (RFC 9112 §6.3, as net/http):
// conflicting Content-Lengths, bad chunk sizes, a body shorter than declared, a transfer coding
// other than chunked. A Content-Length beside Transfer-Encoding: chunked is read as chunked (RFC
// 9112 §6.3: Transfer-Encoding overrides), as net/http does. Interim 1xx responses (100 Continue,
// 103 Early Hints) are skipped: the final answer is counted once.
func TestFramingConformance(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		close  bool   // the server closes after answering
		kind   string // "" success
	}{
		{name: "conflicting Content-Length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", kind: "malformed_response"},
		{name: "Content-Length list that differs", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello!", kind: "malformed_response"},
		{name: "negative Content-Length", answer: "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello", kind: "malformed_response"},
		{name: "bad chunk size", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", kind: "malformed_response"},
		{name: "chunk longer than its size", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", kind: "malformed_response"},
		{name: "chunked cut off", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", close: true, kind: "read"},
		{name: "body shorter than declared", answer: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", close: true, kind: "read"},
		// stricter than net/http and browsers, which accept equal duplicates (fasthttp's parser
		// refuses any second Content-Length); an error, not a miscount
		{name: "Content-Length twice, equal", answer: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", kind: "malformed_response"},
		{name: "Content-Length and chunked", answer: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
		{name: "chunked and Content-Length", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
		{name: "unsupported transfer coding", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", kind: "malformed_response"},
		{name: "Transfer-Encoding twice", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", kind: "malformed_response"},
		{name: "100 Continue then 200", answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"},
		{name: "103 Early Hints then 200", answer: "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"},
		{name: "two interims", answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"},
	}
	for _, c := range cases {
		for _, keep := range []bool{false, true} {
			name := c.name + "/discarded"
			req := ""
			if keep {
				name, req = c.name+"/checked", `"checks":[{"type":"body","op":"contains","value":"hello"}]`
			}
			t.Run(name, func(t *testing.T) {
				tg := testutil.NewRawServer(t, func(*http.Request) testutil.RawAnswer {
					return testutil.RawAnswer{Bytes: []byte(c.answer), Close: c.close}
				})
				sum, _ := run(t, mustPlan(t, h1Plan(t, "http://"+tg.Addr+"/", 2, 5, req, "")))
				want := map[string]int64{}
				if c.kind != "" {
					want[c.kind] = 10
				} else if sum.StatusCodes["200"] != 10 || len(sum.StatusCodes) != 1 {
					t.Errorf("statuses %v, want 10 × 200 (interim answers are not responses)", sum.StatusCodes)
				}
				wantCounts(t, sum, tg.Requests(), want)
			})
		}
	}
}
