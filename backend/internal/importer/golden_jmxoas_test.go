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

// The golden files beside each fixture (NAME.golden.json) hold the imported plan and the skipped
// list; `go test ./backend/internal/importer -run Golden -update` rewrites them. The flag is
// registered here only if no other test file of the package registered it first.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the importers' golden files")
	}
}

func updating() bool { return flag.Lookup("update").Value.String() == "true" }

// marshalResult is the golden form of a result: indented JSON, "<" and "&" kept as written.
func marshalResult(t *testing.T, r Result) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"plan": r.Plan, "skipped": r.Skipped}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// parsePlan proves an imported plan is one `volley run` and the API accept.
func parsePlan(t *testing.T, r Result) *plan.Plan {
	t.Helper()
	js, err := json.Marshal(r.Plan)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse(js)
	if err != nil {
		t.Fatalf("imported plan does not validate: %v\n%s", err, js)
	}
	return p
}

// goldenFormat imports every fixture of testdata/dir with the suffixes given and compares the
// result with its golden file.
func goldenFormat(t *testing.T, format, dir string, suffixes ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") || !hasSuffix(f, suffixes) {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := Detect(data); got != format {
				t.Errorf("Detect = %q, want %q", got, format)
			}
			r, err := Import(format, data, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != format {
				t.Errorf("Format = %q", r.Format)
			}
			parsePlan(t, r)
			got := marshalResult(t, r)
			golden := strings.TrimSuffix(f, filepath.Ext(f)) + ".golden.json"
			if updating() {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("import of %s differs from %s (run with -update and review the diff):\n%s", f, golden, got)
			}
		})
	}
	if n < 5 {
		t.Errorf("%d fixtures in testdata/%s; at least 5 expected", n, dir)
	}
}

func hasSuffix(f string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(f, s) {
			return true
		}
	}
	return false
}

func TestGoldenJMX(t *testing.T) { goldenFormat(t, "jmx", "jmx", ".jmx") }

func TestGoldenOpenAPI(t *testing.T) {
	goldenFormat(t, "openapi", "openapi", ".json", ".yaml", ".yml")
}
