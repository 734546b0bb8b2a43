package engine

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// The engine is a library that a CLI, the server, a test or a remote agent drive alike: it must
// not depend on the web server, storage, the live stream's websockets or the API. It does speak
// WebSocket to targets (ws.go, issue 13): gorilla/websocket's client only.
func TestEngineImportsOnlyAllowedPackages(t *testing.T) {
	testutil.CheckImports(t,
		"github.com/volley-load/volley/backend/internal/plan",
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/volley-load/volley/backend/internal/netpolicy", // the target policy, checked at every dial
		"github.com/volley-load/volley/backend/internal/procstat",
		"github.com/volley-load/volley/backend/internal/segment", // its share of a run split among agents (pure)
		"github.com/volley-load/volley/backend/internal/monitor", // the run's monitors, read by the collector
		"github.com/valyala/fasthttp",
		"github.com/HdrHistogram/hdrhistogram-go",
		"github.com/tidwall/gjson", // JSON paths for checks and extraction
		"golang.org/x/sys/unix",    // timerfd for precise open-model wakeups
		"golang.org/x/net/http2",   // the HTTP/2 client (h2.go): fasthttp has none
		// content decoding of compressed bodies (decode.go): the libraries fasthttp itself uses
		"github.com/klauspost/compress/gzip",
		"github.com/klauspost/compress/zlib",
		"github.com/klauspost/compress/flate",
		"github.com/klauspost/compress/zstd",
		"github.com/molecule-man/go-brrr",
		"github.com/gorilla/websocket", // WebSocket steps: the client side of a session (ws.go)
	)
}
