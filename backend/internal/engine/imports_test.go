package engine

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// The engine is a library that a CLI, the server, a test or a remote agent drive alike: it must
// not depend on the web server, storage, websockets or the API.
func TestEngineImportsOnlyAllowedPackages(t *testing.T) {
	testutil.CheckImports(t,
		"github.com/volley-load/volley/backend/internal/plan",
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/volley-load/volley/backend/internal/netpolicy", // the target policy, checked at every dial
		"github.com/volley-load/volley/backend/internal/procstat",
		"github.com/volley-load/volley/backend/internal/monitor", // the run's monitors, read by the collector
		"github.com/valyala/fasthttp",
		"github.com/HdrHistogram/hdrhistogram-go",
		"github.com/tidwall/gjson", // JSON paths for checks and extraction
		"golang.org/x/sys/unix",    // timerfd for precise open-model wakeups
	)
}
