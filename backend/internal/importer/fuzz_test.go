package importer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/plan"
)

// impFuzz feeds a format's importer arbitrary input, seeded with its fixtures: it must not
// panic, must answer an *InputError or a result, and a result's plan must pass plan.Parse.
func impFuzz(f *testing.F, format string, seeds ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", format, "*"))
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.json") {
			continue
		}
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import(format, data, Options{KeepAssets: len(data)%2 == 0})
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("an error that is not an *InputError: %v", err)
			}
			return
		}
		js, err := json.Marshal(res.Plan)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plan.Parse(js); err != nil {
			t.Fatalf("the imported plan does not validate: %v\n%s", err, js)
		}
	})
}

func FuzzImportCurl(f *testing.F) {
	impFuzz(f, "curl", `curl $'\x41\u00e9' -H 'a: b'`, `curl ^"http://a.test/^" ^`+"\n"+`-d ^"x^"`, `curl -d`, `curl "`)
}

func FuzzImportHar(f *testing.F) {
	impFuzz(f, "har", `{"log":{"entries":[{"request":{"method":"GET","url":"http://a.test/"}}]}}`, `{"log":{"entries":[[[[`)
}

func FuzzImportPostman(f *testing.F) {
	impFuzz(f, "postman", `{"info":{"_postman_id":"x"},"item":[{"request":"http://a.test/{{v}}"}]}`, `{"item":[{"item":[{"item":[]}]}]}`)
}
