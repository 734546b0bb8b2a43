package engine

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	brotli "github.com/molecule-man/go-brrr"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// wireCounter is a listener whose connections count every byte the server writes: the bytes on
// the wire a client reads.
type wireCounter struct {
	net.Listener
	written atomic.Int64
}

func (l *wireCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: &l.written}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// newWireTarget serves h on loopback, counting the bytes it writes.
func newWireTarget(t *testing.T, h http.HandlerFunc) (*httptest.Server, *wireCounter) {
	s := httptest.NewUnstartedServer(h)
	wc := &wireCounter{Listener: s.Listener}
	s.Listener = wc
	s.Start()
	t.Cleanup(s.Close)
	return s, wc
}

func encode(t testing.TB, coding string, b []byte) []byte {
	var out bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&out)
	case "deflate":
		w = zlib.NewWriter(&out)
	case "rawdeflate":
		w, _ = flate.NewWriter(&out, flate.DefaultCompression)
	case "br":
		w, _ = brotli.NewWriter(&out, 5)
	case "zstd":
		w, _ = zstd.NewWriter(&out)
	default:
		t.Fatalf("coding %q", coding)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// A gzip-compressed JSON answer with a JSON check: every check passes, bytes_in equals the bytes
// the server wrote, and the decoded size is reported apart. The server compresses only when the
// request's Accept-Encoding (from http.compression) asks for gzip.
func TestGzipJSONCheckAndWireBytes(t *testing.T) {
	doc := []byte(`{"data":{"status":"active","items":[` + strings.Repeat(`{"id":1,"name":"volley"},`, 200) + `{"id":2}]}}`)
	gz := encode(t, "gzip", doc)
	var plain atomic.Int64
	s, wc := newWireTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip, br" {
			plain.Add(1)
			w.Write(doc)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz)
	})
	const n = 4 * 50
	p := mustPlan(t, fmt.Sprintf(`{"name":"gz","requests":[{"url":%q,"checks":[{"type":"json","path":"data.status","op":"eq","value":"active"},
		{"type":"body","op":"contains","value":"volley"}]}],
		"load":{"executor":"per-vu-iterations","vus":4,"iterations":50},"http":{"compression":["gzip","br"]}}`, s.URL))
	sum, _ := run(t, p)
	if sum.Successes != n || sum.Errors != 0 || plain.Load() != 0 {
		t.Fatalf("successes %d, errors %v, %d uncompressed answers", sum.Successes, sum.ErrorKinds, plain.Load())
	}
	for _, c := range sum.Checks {
		if c.Passes != n || c.Fails != 0 {
			t.Errorf("check %q: %d passes, %d fails", c.Check, c.Passes, c.Fails)
		}
	}
	if sum.BytesIn != wc.written.Load() {
		t.Errorf("bytes_in %d, the server wrote %d", sum.BytesIn, wc.written.Load())
	}
	if sum.BodyBytesIn != n*int64(len(gz)) || sum.BodyBytesDecoded != n*int64(len(doc)) {
		t.Errorf("body bytes %d (want %d on the wire), decoded %d (want %d)", sum.BodyBytesIn, n*len(gz), sum.BodyBytesDecoded, n*len(doc))
	}
}

// Every coding, as servers send them, one row each: what a body check sees and the outcome.
func TestContentCodings(t *testing.T) {
	body := []byte(strings.Repeat("hello volley ", 100))
	bomb := encode(t, "gzip", make([]byte, 4<<20))
	gz := encode(t, "gzip", body)
	cases := []struct {
		name     string
		encoding string
		wire     []byte
		want     metrics.ErrorKind
	}{
		{"gzip", "gzip", gz, metrics.KindNone},
		{"x-gzip", "x-gzip", gz, metrics.KindNone},
		{"deflate zlib", "deflate", encode(t, "deflate", body), metrics.KindNone},
		{"deflate raw", "deflate", encode(t, "rawdeflate", body), metrics.KindNone},
		{"br", "br", encode(t, "br", body), metrics.KindNone},
		{"zstd", "zstd", encode(t, "zstd", body), metrics.KindNone},
		{"stacked gzip then br", "gzip, br", encode(t, "br", gz), metrics.KindNone},
		{"identity", "identity", body, metrics.KindNone},
		{"uppercase", "GZIP", gz, metrics.KindNone},
		{"corrupt gzip", "gzip", append(append([]byte{}, gz[:10]...), bytes.Repeat([]byte{0xff}, 40)...), metrics.DecodeError},
		{"truncated gzip", "gzip", gz[:len(gz)-6], metrics.DecodeError},
		{"not gzip at all", "gzip", body, metrics.DecodeError},
		{"corrupt br", "br", []byte("definitely not brotli"), metrics.DecodeError},
		{"corrupt zstd", "zstd", []byte("not zstd"), metrics.DecodeError},
		{"unknown coding", "compress", body, metrics.DecodeError},
		{"bomb over max_body", "gzip", bomb, metrics.BodyTooLarge},
		{"empty body is not corrupt", "gzip", nil, metrics.CheckFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, wc := newWireTarget(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", c.encoding)
				w.Write(c.wire)
			})
			p := mustPlan(t, fmt.Sprintf(`{"name":"c","requests":[{"url":%q,"headers":{"Accept-Encoding":"*"},
				"checks":[{"type":"body","op":"contains","value":"hello volley hello"}]}],
				"load":{"executor":"per-vu-iterations","vus":1,"iterations":3},"http":{"max_body":1048576}}`, s.URL))
			sum, _ := run(t, p)
			if c.want == metrics.KindNone {
				if sum.Successes != 3 {
					t.Errorf("successes %d, errors %v", sum.Successes, sum.ErrorKinds)
				}
				if c.encoding != "identity" && sum.BodyBytesDecoded != 3*int64(len(body)) {
					t.Errorf("decoded %d bytes, want %d", sum.BodyBytesDecoded, 3*len(body))
				}
			} else if sum.ErrorKinds[c.want.String()] != 3 {
				t.Errorf("error kinds %v, want 3 %s", sum.ErrorKinds, c.want)
			}
			if sum.BytesIn != wc.written.Load() {
				t.Errorf("bytes_in %d, the server wrote %d", sum.BytesIn, wc.written.Load())
			}
			if c.want == metrics.DecodeError && (len(sum.Failures) != 1 || !strings.Contains(sum.Failures[0].Message, "body")) {
				t.Errorf("failures %+v, want one group with a fixed message", sum.Failures)
			}
		})
	}
}

// A compressed body nothing reads is never decoded, and a plan without compression sends no
// Accept-Encoding.
func TestUnreadBodyNotDecoded(t *testing.T) {
	var ae atomic.Value
	s, _ := newWireTarget(t, func(w http.ResponseWriter, r *http.Request) {
		ae.Store(r.Header.Values("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		w.Write([]byte("corrupt, but nobody reads it"))
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"c","requests":[{"url":%q,"checks":[{"type":"header","name":"Content-Encoding","op":"eq","value":"gzip"}]}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":2}}`, s.URL))
	sum, _ := run(t, p)
	if sum.Successes != 2 || sum.BodyBytesDecoded != 0 {
		t.Errorf("successes %d (errors %v), decoded %d", sum.Successes, sum.ErrorKinds, sum.BodyBytesDecoded)
	}
	if got, _ := ae.Load().([]string); len(got) != 0 {
		t.Errorf("Accept-Encoding %q sent without http.compression", got)
	}
}

// Decoding again and again allocates nothing once the VU's decoder and buffers are made.
func TestDecodeAllocatesNothingWarm(t *testing.T) {
	p := &plan.Plan{Name: "a", Requests: []plan.Request{{URL: "http://127.0.0.1:1/"}},
		Load: plan.Load{Executor: plan.PerVUIterations, VUs: 1, Iterations: 1}}
	p.Defaults()
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := newVU(e, 0)
	body := []byte(strings.Repeat(`{"k":"v"}`, 500))
	for _, coding := range []string{"gzip", "deflate", "br", "zstd"} {
		v.resp.Header.SetContentEncoding(coding)
		v.resp.SetBody(encode(t, coding, body))
		f := func() {
			v.bodyState = bodyUnread
			if k, err, n := v.decodeBody(); k != metrics.KindNone || n != int64(len(body)) {
				t.Fatalf("%s: %v %v %d", coding, k, err, n)
			}
		}
		f()
		if n := testing.AllocsPerRun(50, f); n != 0 {
			t.Errorf("%s: %.1f allocations per decode", coding, n)
		}
	}
	v.dec.close()
}

// A plan's own Accept-Encoding header wins over http.compression, and is sent once.
func TestPlanAcceptEncodingWins(t *testing.T) {
	var ae atomic.Value
	s, _ := newWireTarget(t, func(w http.ResponseWriter, r *http.Request) { ae.Store(r.Header.Values("Accept-Encoding")) })
	p := mustPlan(t, fmt.Sprintf(`{"name":"c","requests":[{"url":%q,"headers":{"accept-encoding":"br"}}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":1},"http":{"compression":["gzip","zstd"]}}`, s.URL))
	if sum, _ := run(t, p); sum.Successes != 1 {
		t.Fatalf("errors %v", sum.ErrorKinds)
	}
	if got, _ := ae.Load().([]string); len(got) != 1 || got[0] != "br" {
		t.Errorf("Accept-Encoding %q, want the plan's own [br]", got)
	}
}
