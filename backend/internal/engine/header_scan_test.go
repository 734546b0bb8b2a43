//go:build linux

package engine

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// scanServe answers request i (0-based, per connection) with answer(c, i); answer returns false to
// end the connection.
func scanServe(t *testing.T, answer func(c net.Conn, i int) bool) *testutil.TCPServer {
	return testutil.ServeTCP(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if !answer(c, i) {
				return
			}
		}
	})
}

func scanLines(n int, eol string) string { return strings.Repeat("X-Pad: padpadpadpad"+eol, n) }

func scanOK(eol string, lines int) string {
	return "HTTP/1.1 200 OK" + eol + scanLines(lines, eol) + "Content-Length: 5" + eol + eol + "hello"
}

func scanRun(t *testing.T, addr string, iters int, extra string, httpExtra string) *metrics.Summary {
	t.Helper()
	if extra != "" {
		extra = "," + extra
	}
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":"http://%s/"%s}],"load":{"executor":"per-vu-iterations","vus":1,"iterations":%d},"http":{"timeout":"2s"%s}}`, addr, extra, iters, httpExtra)
	sum, _ := run(t, mustPlan(t, js))
	return sum
}

// A reset, a close or a stall in the middle of a header that outgrew the first 4 KiB buffer, on
// a fresh connection and on one whose buffer had grown already, keeps its own error kind: the
// read error headerFits met is the exchange's (scanErr), not the EOF a socket says when read
// again after a reset.
func TestHeaderFailureKindsMidGrownHeader(t *testing.T) {
	partial := "HTTP/1.1 200 OK\r\n" + scanLines(400, "\r\n") // ~8.4 KiB, no end
	for _, c := range []struct {
		name, want string
		end        func(c net.Conn)
	}{
		{"reset", "reset", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0); c.Close() }},
		{"close", "read", func(c net.Conn) { c.Close() }},
		{"stall", "timeout", func(c net.Conn) { time.Sleep(3 * time.Second) }},
	} {
		for _, grown := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/grown=%v", c.name, grown), func(t *testing.T) {
				srv := scanServe(t, func(conn net.Conn, i int) bool {
					if grown && i == 0 {
						_, err := conn.Write([]byte(scanOK("\r\n", 400)))
						return err == nil
					}
					conn.Write([]byte(partial))
					time.Sleep(200 * time.Millisecond)
					c.end(conn)
					return false
				})
				iters := 1
				if grown {
					iters = 2
				}
				sum := scanRun(t, srv.Addr, iters, "", "")
				if sum.ErrorKinds[c.want] != 1 || sum.Errors != 1 {
					t.Errorf("kinds %v, want 1 × %s", sum.ErrorKinds, c.want)
				}
			})
		}
	}
}

// A header over http.max_header must be header_too_large without its fields parsed (headerFits),
// whatever comes before its status line: empty lines (fasthttp skips them) or an interim answer.
func TestTooLargeHeaderNotParsed(t *testing.T) {
	fields := "HTTP/1.1 200 OK\r\n" + strings.Repeat("A: b\r\n", 20_000) + "Content-Length: 0\r\n\r\n"
	for _, c := range []struct{ name, prefix string }{
		{"none", ""},
		{"empty lines", "\r\n\r\n"},
		{"100 Continue", "HTTP/1.1 100 Continue\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			answer := []byte(c.prefix + fields)
			srv := scanServe(t, func(conn net.Conn, i int) bool {
				_, err := conn.Write(answer)
				return err == nil
			})
			e, err := newEngine(mustPlan(t, h1Plan(t, "http://"+srv.Addr+"/", 1, 1, "", "")), Options{})
			if err != nil {
				t.Fatal(err)
			}
			v := newVU(e, 0)
			defer v.finish()
			r := &v.reqs[0]
			kinds := map[string]int{}
			ex := func() {
				v.prepare(r)
				_, err := v.exchange(r.client, r.outgoing())
				kinds[classify(err).String()]++
			}
			for range 3 { // grow the buffer to 64 KiB
				ex()
			}
			const n = 20
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for range n {
				ex()
			}
			runtime.ReadMemStats(&m1)
			per := (m1.TotalAlloc - m0.TotalAlloc) / n
			t.Logf("kinds %v; %d KiB allocated per answer; buffer %d", kinds, per>>10, r.client.br.Size())
			if kinds["header_too_large"] != n+3 {
				t.Errorf("kinds %v, want all header_too_large", kinds)
			}
			if per > 64<<10 {
				t.Errorf("%d KiB allocated per too-large answer: its fields were parsed", per>>10)
			}
		})
	}
}
