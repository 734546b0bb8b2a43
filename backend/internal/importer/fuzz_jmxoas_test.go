package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedFixtures adds every fixture of testdata/dir (goldens aside) to the fuzz corpus.
func seedFixtures(f *testing.F, dir string) {
	files, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
	for _, name := range files {
		if strings.HasSuffix(name, ".golden.json") {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// fuzzImport checks what holds for any input: no panic; either an *InputError or a result with
// at least one request whose plan encodes as JSON.
func fuzzImport(t *testing.T, format string, data []byte) {
	r, err := Import(format, data, Options{})
	if err != nil {
		if _, ok := err.(*InputError); !ok {
			t.Fatalf("error %T %v is not an *InputError", err, err)
		}
		return
	}
	if reqs, _ := r.Plan["requests"].([]map[string]any); len(reqs) == 0 {
		t.Fatalf("a result without requests: %v", r.Plan)
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatalf("result does not encode: %v", err)
	}
}

func FuzzImportJMX(f *testing.F) {
	seedFixtures(f, "jmx")
	f.Add([]byte(billionLaughsXML))
	f.Add([]byte(`<jmeterTestPlan><hashTree><TestPlan/><hashTree><ThreadGroup/><hashTree><HTTPSamplerProxy><stringProp name="HTTPSampler.domain">${a${b}}</stringProp></HTTPSamplerProxy></hashTree></hashTree></hashTree></jmeterTestPlan>`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, "jmx", data) })
}

func FuzzImportOpenAPI(f *testing.F) {
	seedFixtures(f, "openapi")
	f.Add([]byte("openapi: 3.1.0\npaths:\n  /a/{x}:\n    get: {parameters: [{name: x, in: path, schema: {$ref: '#/x'}}]}\nx: &a [*a]\n"))
	f.Add([]byte(`{"openapi":"3.0.0","paths":{"/":{"post":{"requestBody":{"content":{"application/json":{"schema":{"allOf":[{"$ref":"#"}]}}}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, "openapi", data) })
}
