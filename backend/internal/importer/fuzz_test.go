package importer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// impFuzz feeds a format's importer arbitrary input, seeded with its fixtures (testdata/FORMAT)
// and seeds: it must not panic, must answer an *InputError or a result, and a result's plan must
// pass plan.Parse (so it has at least one request).
func impFuzz(f *testing.F, format string, seeds ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", format, "*"))
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.json") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
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
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		parsePlan(t, res)
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

func FuzzImportJMX(f *testing.F) {
	impFuzz(f, "jmx", billionLaughsXML,
		`<jmeterTestPlan><hashTree><TestPlan/><hashTree><ThreadGroup/><hashTree><HTTPSamplerProxy><stringProp name="HTTPSampler.domain">${a${b}}</stringProp></HTTPSamplerProxy></hashTree></hashTree></hashTree></jmeterTestPlan>`)
}

func FuzzImportOpenAPI(f *testing.F) {
	impFuzz(f, "openapi", "openapi: 3.1.0\npaths:\n  /a/{x}:\n    get: {parameters: [{name: x, in: path, schema: {$ref: '#/x'}}]}\nx: &a [*a]\n",
		`{"openapi":"3.0.0","paths":{"/":{"post":{"requestBody":{"content":{"application/json":{"schema":{"allOf":[{"$ref":"#"}]}}}}}}}}`)
}
