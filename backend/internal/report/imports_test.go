package report

import (
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// report works from a Summary and Samples alone (`volley run --report` has no database): no
// storage, no web framework.
func TestReportImportsOnlyAllowedPackages(t *testing.T) {
	testutil.CheckImports(t,
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/volley-load/volley/backend/internal/compare", // LTTB for long runs' charts
		"github.com/volley-load/volley/backend/internal/plan",    // a run's load settings (stdlib only)
	)
}
