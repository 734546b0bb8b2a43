package testutil

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// CheckImports fails the test when the package in the current directory imports a non-standard
// package outside allowed: it keeps layering rules (the engine knows nothing of the server, the
// comparison is pure computation) testable.
func CheckImports(t *testing.T, allowed ...string) {
	t.Helper()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(strings.Split(imp, "/")[0], ".") && !slices.Contains(allowed, imp) {
			t.Errorf("%s imports %s; allowed: the standard library and %v", pkg.Name, imp, allowed)
		}
	}
}
