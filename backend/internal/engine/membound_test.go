package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// streamTarget answers every request with a body of size bytes ("chunked": in 64 KiB chunks,
// else with a Content-Length), written from one reused buffer: the target allocates next to
// nothing whatever the size, so the process's allocations are the generator's.
func streamTarget(t *testing.T, size int64, chunked bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	buf := []byte(strings.Repeat("z", 64<<10))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
					if chunked {
						head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
					}
					if _, err := io.WriteString(c, head); err != nil {
						return
					}
					for left := size; left > 0; {
						n := min(left, int64(len(buf)))
						if chunked {
							if _, err := fmt.Fprintf(c, "%x\r\n", n); err != nil {
								return
							}
						}
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
						if chunked {
							if _, err := io.WriteString(c, "\r\n"); err != nil {
								return
							}
						}
						left -= n
					}
					if chunked {
						if _, err := io.WriteString(c, "0\r\n\r\n"); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// allocated runs the plan and returns the bytes the process allocated meanwhile.
func allocated(t *testing.T, js string) (int64, int64, map[string]int64) {
	t.Helper()
	p := mustPlan(t, js)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sum, _ := run(t, p)
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc), sum.BodyBytesIn, sum.ErrorKinds
}

// Memory per VU is bounded whatever the body's size: 100 MB bodies nobody reads are drained
// through the VU's scratch buffer, and one a check reads stops at http.max_body. The proof is the
// process's allocations (not timing): a run of 100 MB answers allocates at most 1 MiB more than
// the same run of 1-byte answers, and a checked 100 MB body at most 4 × max_body more per request
// (the body buffer grows by doubling up to 2 × max_body before the limit stops it).
func TestMemoryPerVUBoundedWhateverTheBody(t *testing.T) {
	const big = 100 << 20
	const maxBody = 256 << 10
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			plan := func(url, extra string) string {
				return fmt.Sprintf(`{"name":"t","requests":[{"url":%q%s}],"load":{"executor":"per-vu-iterations","vus":2,"iterations":2},"http":{"timeout":"60s","max_body":%d}}`,
					url, extra, maxBody)
			}
			base, _, _ := allocated(t, plan(streamTarget(t, 1, chunked), ""))
			got, bodyBytes, kinds := allocated(t, plan(streamTarget(t, big, chunked), ""))
			if bodyBytes != 4*big || len(kinds) != 0 || got-base > 1<<20 {
				t.Errorf("unread: %d body bytes (want %d), errors %v, allocated %d KiB more than for 1-byte bodies (want ≤ 1024)",
					bodyBytes, 4*big, kinds, (got-base)>>10)
			}
			check := `,"checks":[{"type":"body","op":"contains","value":"needle"}]`
			got, _, kinds = allocated(t, plan(streamTarget(t, big, chunked), check))
			const bound = 4*4*maxBody + 1<<20 // 4 requests
			if kinds["body_too_large"] != 4 || got-base > bound {
				t.Errorf("checked: errors %v (want 4 body_too_large), allocated %d KiB more than for 1-byte bodies (want ≤ %d)",
					kinds, (got-base)>>10, bound>>10)
			}
		})
	}
}
