package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// closingServer is a loopback HTTP/1.1 server that manages its keep-alive connections as real
// servers do: after every k-th answer on a connection it closes it, saying so (Connection: close,
// or an HTTP/1.0 answer) or not (nginx's keepalive_requests without the header, a proxy that
// drops connections); with idle > 0 it closes a connection idle that long without a word (an
// idle timeout). It counts the requests it read and every (method, path, body) it received.
type closingServer struct {
	addr     string
	requests atomic.Int64
	mu       sync.Mutex
	seen     map[string]int
	// raced counts idle closes that met a request already on its way (it arrived within 50 ms
	// of the idle timeout): the one window keepalive.go leaves, where a request fails unread.
	raced atomic.Int64
}

func newClosingServer(t *testing.T, k int, say string, idle time.Duration) *closingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &closingServer{addr: ln.Addr().String(), seen: map[string]int{}}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(c, _ any) bool { _ = c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { conns.Delete(c); _ = c.Close() }()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					if idle > 0 {
						_ = c.SetReadDeadline(time.Now().Add(idle))
					}
					r, err := http.ReadRequest(br)
					if err != nil {
						if idle > 0 {
							_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
							if _, err := br.Peek(1); err == nil {
								s.raced.Add(1)
							}
						}
						return
					}
					body, err := io.ReadAll(r.Body)
					if err != nil {
						return
					}
					s.requests.Add(1)
					s.mu.Lock()
					s.seen[r.Method+" "+r.URL.Path+" "+string(body)]++
					s.mu.Unlock()
					last := k > 0 && n%k == 0
					answer := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
					switch {
					case last && say == "close":
						answer = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
					case last && say == "http/1.0":
						answer = "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"
					}
					if r.Method == "HEAD" {
						answer = answer[:len(answer)-2]
					}
					if last && say == "" {
						// the answer and the FIN leave together, as from a server that closes
						// at once (else the VU could read the answer and write its next
						// request before the FIN left: the window keepalive.go leaves)
						cork(c)
					}
					if _, err := io.WriteString(c, answer); err != nil || last {
						return
					}
				}
			}()
		}
	}()
	return s
}

// duplicates is how many requests the server received more than once.
func (s *closingServer) duplicates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := 0
	for _, n := range s.seen {
		d += n - 1
	}
	return d
}

// Connections a server closes (after k requests, with or without saying so, or when idle) are
// managed as RFC 9112 §9 and net/http do (keepalive.go): no request is written on a connection the
// server has closed, so none is lost or sent twice, whatever its method. The server's count
// equals Volley's, without an error, and no request reaches the server twice.
func TestKeepAliveServerCloses(t *testing.T) {
	cases := []struct {
		name  string
		k     int
		say   string
		idle  time.Duration
		think string
	}{
		{name: "silent close after every 3rd", k: 3},
		{name: "silent close after every answer", k: 1},
		{name: "Connection: close every 3rd", k: 3, say: "close"},
		{name: "HTTP/1.0 answer every 2nd", k: 2, say: "http/1.0"},
		// the server's idle close comes 240 ms before the VU's next request; a close that a
		// request met all the same (a timer fired that late) is counted by the server (raced)
		{name: "idle timeout", idle: 10 * time.Millisecond, think: "250ms"},
	}
	reqs := []struct {
		name, fields string
		distinct     bool // every request differs (the server can tell a duplicate)
	}{
		{"GET", ``, false},
		{"GET templated", `"url":"/{{vu}}/{{iteration}}"`, true},
		{"HEAD", `"method":"HEAD"`, false},
		{"POST", `"method":"POST","body":"{{vu}}-{{iteration}}"`, true},
		{"PATCH", `"method":"PATCH","body":"{{vu}}-{{iteration}}"`, true},
	}
	for _, c := range cases {
		for _, r := range reqs {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				s := newClosingServer(t, c.k, c.say, c.idle)
				url := "http://" + s.addr
				fields := r.fields
				if len(fields) > 6 && fields[:6] == `"url":` {
					url += fields[7 : len(fields)-1]
					fields = ""
				} else {
					url += "/"
				}
				if c.think != "" {
					if fields != "" {
						fields += ","
					}
					fields += fmt.Sprintf(`"think_time":%q`, c.think)
				}
				iters := 30
				if c.idle > 0 {
					iters = 3
				}
				sum, _ := run(t, mustPlan(t, h1Plan(t, url, 4, iters, fields, "")))
				served := s.requests.Load()
				if sum.Requests != int64(4*iters) || sum.Successes != served || sum.Errors != s.raced.Load() {
					t.Errorf("volley: %d requests, %d successes, errors %v; the server read %d, %d closes raced a request (want %d requests, successes = the server's, errors = raced)",
						sum.Requests, sum.Successes, sum.ErrorKinds, served, s.raced.Load(), 4*iters)
				}
				if d := s.duplicates(); r.distinct && d != 0 {
					t.Errorf("the server received %d requests twice", d)
				}
			})
		}
	}
}

// A request the target may have processed is never sent twice, whatever its method: one the server
// read and then dropped without a word, and one whose answer had begun, fail once (one VU, two
// requests: the server reads exactly two).
func TestNoRetryWhenTheTargetMayHaveProcessed(t *testing.T) {
	cases := []struct {
		name, fields string
		second       testutil.RawAnswer // the answer to the second request on the connection
		kind         string
	}{
		{"POST read, then closed", `"method":"POST","body":"x"`, testutil.RawAnswer{Close: true}, "read"},
		{"POST read, then reset", `"method":"POST","body":"x"`, testutil.RawAnswer{Reset: true}, "reset"},
		{"GET read, then closed", ``, testutil.RawAnswer{Close: true}, "read"},
		{"GET read, then reset", ``, testutil.RawAnswer{Reset: true}, "reset"},
		{"GET answer begun, then closed", ``, testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nContent-Le"), Close: true}, "read"},
		{"GET body cut off", ``, testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nok"), Close: true}, "read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int64
			tg := testutil.NewRawServer(t, func(r *http.Request) testutil.RawAnswer {
				_, _ = io.Copy(io.Discard, r.Body)
				if n.Add(1) == 2 {
					return c.second
				}
				return testutil.RawAnswer{Bytes: []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")}
			})
			sum, _ := run(t, mustPlan(t, h1Plan(t, "http://"+tg.Addr+"/", 1, 2, c.fields, "")))
			if tg.Requests() != 2 || sum.Requests != 2 || sum.Errors != 1 || sum.ErrorKinds[c.kind] != 1 {
				t.Errorf("server read %d, volley %d requests, errors %v; want 2, 2 and one %s",
					tg.Requests(), sum.Requests, sum.ErrorKinds, c.kind)
			}
		})
	}
}
