package engine

import (
	"fmt"
	"net"
	"net/http"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"github.com/volley-load/volley/backend/internal/plan"
)

// BenchmarkEngineRequestH2 is BenchmarkEngineRequest over h2c (prior knowledge), with a
// connection per VU and with 1 connection shared by all VUs. The target is net/http's HTTP/2
// server in the same process, so allocs/req and cpu-µs/req include the server's share (its
// allocations are about as many as the client's); bench/h2.sh measures the client alone against
// nginx.
func BenchmarkEngineRequestH2(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 615)
	srv := &http.Server{Handler: h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(body)
	}), &http2.Server{})}
	go srv.Serve(ln)
	b.Cleanup(func() { _ = srv.Close() })
	url := "http://" + ln.Addr().String() + "/"
	for _, shared := range []int{0, 1} {
		for _, vus := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("h2_connections=%d/vus=%d", shared, vus), func(b *testing.B) {
				h := plan.HTTP{Version: plan.H2C, H2Connections: shared}
				if sum := benchRun(b, url, vus, h); sum.Errors != 0 || sum.Protocols["h2"] != sum.Requests {
					b.Fatalf("errors %v, protocols %v", sum.ErrorKinds, sum.Protocols)
				}
			})
		}
	}
}
