package report

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// report works from a Summary and Samples alone (`volley run --report` has no database): no
// storage, no web framework.
func TestReportImportsOnlyAllowedPackages(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/volley-load/volley/backend/internal/compare", // LTTB for long runs' charts
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(imp, ".") && !slices.Contains(allowed, imp) {
			t.Errorf("report imports %s; allowed: stdlib, %v", imp, allowed)
		}
	}
}
