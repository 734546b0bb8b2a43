package compare

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// compare is pure computation: no web framework, no database, no I/O packages of Volley's own.
func TestCompareImportsOnlyAllowedPackages(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"github.com/volley-load/volley/backend/internal/plan",
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/HdrHistogram/hdrhistogram-go",
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(imp, ".") && !slices.Contains(allowed, imp) {
			t.Errorf("compare imports %s; allowed: stdlib, %v", imp, allowed)
		}
	}
}
