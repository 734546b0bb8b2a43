package importer

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/volley-load/volley/backend/internal/engine" // registers the executors plan.Parse checks
	"github.com/volley-load/volley/backend/internal/plan"
)

// -update rewrites the golden files (testdata/FORMAT/*.golden.json). The flag is defined here
// unless another test file of the package (the jmx and openapi importers') defines it already.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the importer's golden files (testdata/FORMAT/*.golden.json)")
	}
}

// impUpdate reports whether -update was given.
func impUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// impGoldenCases are the fixtures of a format: every file of testdata/dir but the golden ones.
func impGoldenCases(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join("testdata", dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var in []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".golden.json") {
			in = append(in, f)
		}
	}
	if len(in) < 5 {
		t.Fatalf("testdata/%s holds %d fixtures; at least 5 are wanted", dir, len(in))
	}
	return in
}

// impCheckGolden imports every fixture of a format, compares the result with its golden file
// (rewritten with -update) and proves the plan passes plan.Parse.
func impCheckGolden(t *testing.T, format string, o Options) {
	for _, f := range impGoldenCases(t, format) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := Detect(data); got != format {
				t.Errorf("Detect = %q, want %q", got, format)
			}
			res, err := Import(format, data, o)
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			js := impPlanJSON(t, res.Plan)
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(f, filepath.Ext(f)) + ".golden.json"
			if impUpdate() {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("the import differs from %s (go test -update rewrites it):\n%s", golden, out.String())
			}
			if _, err := plan.Parse(js); err != nil {
				t.Errorf("the imported plan does not validate: %v\n%s", err, js)
			}
		})
	}
}

func impPlanJSON(t testing.TB, p map[string]any) []byte {
	t.Helper()
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
