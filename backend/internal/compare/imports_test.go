package compare

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// compare is pure computation: no web framework, no database, no I/O packages of Volley's own.
func TestCompareImportsOnlyAllowedPackages(t *testing.T) {
	testutil.CheckImports(t,
		"github.com/volley-load/volley/backend/internal/plan",
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/HdrHistogram/hdrhistogram-go",
	)
}
