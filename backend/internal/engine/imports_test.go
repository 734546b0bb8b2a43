package engine

import (
	"go/build"
	"strings"
	"testing"
)

// The engine is a library that a CLI, the server, a test or a remote agent drive alike: it must
// not depend on the web server, storage, websockets or the API.
func TestEngineImportsOnlyAllowedPackages(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"github.com/volley-load/volley/backend/internal/plan",
		"github.com/volley-load/volley/backend/internal/metrics",
		"github.com/volley-load/volley/backend/internal/procstat",
		"github.com/valyala/fasthttp",
		"github.com/HdrHistogram/hdrhistogram-go",
		"github.com/tidwall/gjson", // JSON paths for checks and extraction
	}
	for _, imp := range pkg.Imports {
		if !strings.Contains(imp, ".") { // standard library
			continue
		}
		ok := false
		for _, a := range allowed {
			if imp == a {
				ok = true
			}
		}
		if !ok {
			t.Errorf("engine imports %s; allowed: stdlib, %v", imp, allowed)
		}
	}
}
