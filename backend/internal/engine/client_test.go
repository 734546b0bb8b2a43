package engine

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// The VU's own client (client.go) sends User-Agent "volley" unless the plan sets one.
func TestUserAgentDefaultAndOverride(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.UserAgent()]++
		mu.Unlock()
	})
	// A fixed number of iterations, not a rate: the counts do not depend on a busy machine.
	run(t, mustPlan(t, iterationsPlan(tg.URL, 10, "")))
	run(t, mustPlan(t, `{"name":"t","requests":[{"url":"`+tg.URL+`","headers":{"User-Agent":"mine/1"}}],
		"load":{"executor":"shared-iterations","vus":2,"iterations":10}}`))
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen["volley"] != 10 || seen["mine/1"] != 10 {
		t.Errorf("user agents seen: %v", seen)
	}
}

// Bodies delimited by the connection's end (no Content-Length, no chunking) and chunked bodies
// are read to their end; the first closes the connection, the second keeps it.
func TestBodyFramings(t *testing.T) {
	t.Run("until close", func(t *testing.T) {
		srv := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
			return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + strings.Repeat("x", 3000)), Close: true}
		})
		sum, _ := run(t, mustPlan(t, iterationsPlan("http://"+srv.Addr+"/", 20, "")))
		if sum.Requests != 20 || sum.Successes != 20 || sum.BodyBytesIn != 20*3000 {
			t.Errorf("requests %d successes %d body bytes %d kinds %v", sum.Requests, sum.Successes, sum.BodyBytesIn, sum.ErrorKinds)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		body := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + "5\r\nhello\r\n" + "6\r\n world\r\n" + "0\r\n\r\n"
		srv := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer { return testutil.RawAnswer{Bytes: []byte(body)} })
		sum, _ := run(t, mustPlan(t, closedPlan("http://"+srv.Addr+"/", 2, "1s", "1s", "")))
		if sum.Requests == 0 || sum.Successes != sum.Requests || sum.BodyBytesIn != 11*sum.Requests {
			t.Errorf("requests %d successes %d body bytes %d kinds %v", sum.Requests, sum.Successes, sum.BodyBytesIn, sum.ErrorKinds)
		}
		if c := srv.Conns(); c != 2 {
			t.Errorf("raw server accepted %d connections, want 2 (one per VU, kept alive)", c)
		}
	})
}

// A templated URL is rendered into the VU's reused request every iteration and must go out in
// origin form (GET /t/1 HTTP/1.1), never as the absolute URL.
func TestTemplatedURLsGoOutInOriginForm(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI)
		mu.Unlock()
	})
	run(t, mustPlan(t, `{"name":"t","requests":[{"url":"`+tg.URL+`/t/{{iteration}}?q={{vu}}"},
		{"method":"POST","url":"`+tg.URL+`/u/{{iteration}}","body":"x"}],"flow":"sequence",
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":3}}`))
	mu.Lock()
	defer mu.Unlock()
	want := []string{"GET /t/0?q=1", "POST /u/0", "GET /t/1?q=1", "POST /u/1", "GET /t/2?q=1", "POST /u/2"}
	if strings.Join(seen, ", ") != strings.Join(want, ", ") {
		t.Errorf("request lines:\n got %v\nwant %v", seen, want)
	}
}

// A request without templated parts is serialized once and every VU writes those bytes; the
// target must see exactly the request the plan describes, keep-alive or not.
func TestPreSerializedRequestReachesTheTarget(t *testing.T) {
	for _, keepAlive := range []bool{true, false} {
		var mu sync.Mutex
		var got []string
		tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, fmt.Sprintf("%s %s host=%s ua=%s x=%s ct=%s len=%d body=%s close=%v",
				r.Method, r.URL.RequestURI(), r.Host, r.UserAgent(), r.Header.Get("X-Test"),
				r.Header.Get("Content-Type"), r.ContentLength, b, r.Close))
			mu.Unlock()
		})
		p := mustPlan(t, fmt.Sprintf(`{"name":"t","requests":[{"method":"POST","url":"%s/p?q=1",
			"headers":{"Host":"api.example","X-Test":"yes","Content-Type":"application/json"},"body":"{\"a\":1}"}],
			"load":{"executor":"shared-iterations","vus":4,"iterations":20},
			"http":{"keep_alive":%v}}`, tg.URL, keepAlive))
		e, err := newEngine(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if e.reqs[0].wire == nil {
			t.Fatal("a request without templates was not pre-serialized")
		}
		sum, _ := run(t, p)
		want := fmt.Sprintf(`POST /p?q=1 host=api.example ua=volley x=yes ct=application/json len=7 body={"a":1} close=%v`, !keepAlive)
		mu.Lock()
		if sum.Requests != 20 || sum.Successes != 20 || len(got) != 20 {
			t.Errorf("keep_alive %v: requests %d successes %d seen %d", keepAlive, sum.Requests, sum.Successes, len(got))
		}
		for _, g := range got {
			if g != want {
				t.Errorf("keep_alive %v: target saw\n  %s\nwant\n  %s", keepAlive, g, want)
				break
			}
		}
		mu.Unlock()
		if conns := tg.Conns(); keepAlive && conns > 4 || !keepAlive && conns != 20 {
			t.Errorf("keep_alive %v: %d connections for 20 requests", keepAlive, conns)
		}
	}
}

// httpConn gets its read buffer from bufio.Reader.Reset on a zero Reader: that must be
// readBufferSize, the largest response header a VU accepts.
func TestReadBufferSize(t *testing.T) {
	var h httpConn
	h.br.Reset(strings.NewReader(""))
	if h.br.Size() != readBufferSize {
		t.Fatalf("read buffer %d B, want %d", h.br.Size(), readBufferSize)
	}
}
