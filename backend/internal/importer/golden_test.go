package importer

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/volley-load/volley/backend/internal/engine" // registers the executors plan.Parse checks
	"github.com/volley-load/volley/backend/internal/plan"
)

// -update rewrites the golden files (testdata/FORMAT/*.golden.json):
// `go test ./backend/internal/importer -run Golden -update`, then review the diff.
var impUpdate = flag.Bool("update", false, "rewrite the importers' golden files (testdata/FORMAT/*.golden.json)")

// impGoldenCases are the fixtures of a format: the files of testdata/dir but the golden ones,
// those ending in one of suffixes when any are given.
func impGoldenCases(t *testing.T, dir string, suffixes ...string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join("testdata", dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var in []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".golden.json") && (len(suffixes) == 0 || slices.ContainsFunc(suffixes, func(s string) bool { return strings.HasSuffix(f, s) })) {
			in = append(in, f)
		}
	}
	if len(in) < 5 {
		t.Fatalf("testdata/%s holds %d fixtures; at least 5 are wanted", dir, len(in))
	}
	return in
}

// impCheckGolden imports every fixture of a format (testdata/FORMAT, the files ending in one of
// suffixes when any are given), compares the result with its golden file (rewritten with
// -update) and proves the plan passes plan.Parse.
func impCheckGolden(t *testing.T, format string, o Options, suffixes ...string) {
	for _, f := range impGoldenCases(t, format, suffixes...) {
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
			if res.Format != format {
				t.Errorf("Format = %q", res.Format)
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(f, filepath.Ext(f)) + ".golden.json"
			if *impUpdate {
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
			parsePlan(t, res)
		})
	}
}

func TestGoldenJMX(t *testing.T) { impCheckGolden(t, "jmx", Options{}, ".jmx") }

func TestGoldenOpenAPI(t *testing.T) {
	impCheckGolden(t, "openapi", Options{}, ".json", ".yaml", ".yml")
}

// parsePlan proves an imported plan is one `volley run` and the API accept.
func parsePlan(t testing.TB, r Result) *plan.Plan {
	t.Helper()
	js := impPlanJSON(t, r.Plan)
	p, err := plan.Parse(js)
	if err != nil {
		t.Fatalf("the imported plan does not validate: %v\n%s", err, js)
	}
	return p
}

func impPlanJSON(t testing.TB, p map[string]any) []byte {
	t.Helper()
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
