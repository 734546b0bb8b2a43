package runs

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// runs sits between the HTTP layer and the runner, storage and hub: no web framework, no
// websocket, no database driver; storage and the hub are reached through its small interfaces.
func TestRunsImportsOnlyAllowedPackages(t *testing.T) {
	testutil.CheckImports(t,
		"github.com/HdrHistogram/hdrhistogram-go",
		"github.com/volley-load/volley/backend/internal/compare",
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/volley-load/volley/backend/internal/netpolicy",
		"github.com/volley-load/volley/backend/internal/plan",
		"github.com/volley-load/volley/backend/internal/report",
		"github.com/volley-load/volley/backend/internal/runner",
		"github.com/volley-load/volley/backend/internal/store",
	)
}
