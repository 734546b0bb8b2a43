package importer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// allocated runs f and returns the bytes it allocated (runtime.MemStats.TotalAlloc: everything
// allocated, freed or not, so a bound on it bounds the peak too).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// refused imports data and expects an *InputError whose message contains want, with at most
// maxAlloc bytes allocated on the way.
func refused(t *testing.T, format string, data []byte, want string, maxAlloc uint64) {
	t.Helper()
	var err error
	n := allocated(func() { _, err = Import(format, data, Options{}) })
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an *InputError", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to mention %q", err, want)
	}
	if n > maxAlloc {
		t.Errorf("allocated %d bytes refusing %d bytes of input; at most %d expected", n, len(data), maxAlloc)
	}
}

const billionLaughsXML = `<?xml version="1.0"?>
<!DOCTYPE jmeterTestPlan [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<jmeterTestPlan version="1.2"><hashTree><TestPlan testname="&lol9;"/></hashTree></jmeterTestPlan>`

func TestJMXRefusesBillionLaughs(t *testing.T) {
	refused(t, "jmx", []byte(billionLaughsXML), "DOCTYPE", 1<<20)
	// Without the DOCTYPE the reference is simply unknown: encoding/xml expands no entity of its own.
	noDoctype := billionLaughsXML[strings.Index(billionLaughsXML, "<jmeterTestPlan"):]
	refused(t, "jmx", []byte(noDoctype), "lol9", 1<<20)
}

func TestJMXRefusesDeepNesting(t *testing.T) {
	const depth = 10_000
	data := []byte(`<jmeterTestPlan>` + strings.Repeat("<hashTree>", depth) + strings.Repeat("</hashTree>", depth) + `</jmeterTestPlan>`)
	refused(t, "jmx", data, "nest more than 64", 1<<20)
}

func TestJMXRefusesTooManyElements(t *testing.T) {
	// 50 MB of empty siblings: refused at element 200 001, having read about 2 MB of it.
	const sibling = "<hashTree/>"
	data := slices.Concat([]byte("<jmeterTestPlan><hashTree>"), bytes.Repeat([]byte(sibling), 50<<20/len(sibling)),
		[]byte("</hashTree></jmeterTestPlan>"))
	refused(t, "jmx", data, "more than 200000 elements", 200<<20)
}

func TestImportRefusesInputOverMaxInput(t *testing.T) {
	data := make([]byte, MaxInput+1)
	for _, f := range []string{"jmx", "openapi"} {
		refused(t, f, data, "", 1<<20)
	}
}

func TestOpenAPIRefusesLargeAndDeepDocuments(t *testing.T) {
	big := append([]byte("openapi: 3.0.0\nx: \""), bytes.Repeat([]byte("a"), 50<<20)...)
	refused(t, "openapi", big, "at most 16777216", 1<<20)
	refused(t, "openapi", big[:9<<20], "at most 8388608", 1<<20) // YAML has the lower bound
	deepJSON := []byte(`{"openapi":"3.0.0","x":` + strings.Repeat(`{"a":`, 10_000) + `1` + strings.Repeat(`}`, 10_000) + `}`)
	refused(t, "openapi", deepJSON, "nests more than 128", 1<<20)
	deepFlow := []byte("openapi: 3.0.0\nx: " + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + "\n")
	refused(t, "openapi", deepFlow, "nests more than 128", 1<<20)
	var deepBlock strings.Builder
	deepBlock.WriteString("openapi: 3.0.0\n")
	for i := range 300 { // 300 levels of block mappings (indentation: 90 KB of spaces)
		deepBlock.WriteString(strings.Repeat("  ", i) + "a:\n")
	}
	refused(t, "openapi", []byte(deepBlock.String()), "nests more than 128", 4<<20)
}

// A YAML alias bomb: nine levels of ten aliases would be 10^9 strings written out. The decoder
// shares an anchor's value between its aliases; the importer counts what it writes out and gives
// up on the body, listing the operation.
func TestOpenAPIAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: bomb, version: '1'}\nservers: [{url: 'http://127.0.0.1:9/'}]\nx-lol:\n  l0: &l0 lol\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("  l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for k := range 10 {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("paths:\n  /a:\n    post:\n      requestBody:\n        required: true\n        content:\n          application/json:\n            example: *l9\n      responses: {'200': {description: ok}}\n  /b:\n    get:\n      responses: {'200': {description: ok}}\n")
	var r Result
	var err error
	n := allocated(func() { r, err = Import("openapi", []byte(b.String()), Options{}) })
	if err != nil {
		t.Fatal(err)
	}
	if n > 200<<20 {
		t.Errorf("allocated %d bytes for a %d-byte document", n, b.Len())
	}
	if len(r.Plan["requests"].([]map[string]any)) != 1 {
		t.Errorf("requests = %v, want only GET /b", r.Plan["requests"])
	}
	if len(r.Skipped) != 1 || r.Skipped[0].Element != "POST /a" || !strings.Contains(r.Skipped[0].Reason, "too large") {
		t.Errorf("skipped = %+v", r.Skipped)
	}
}

// A $ref cycle (A → B → A) and a schema that refers to itself resolve to nothing rather than loop.
func TestOpenAPIRefCyclesEnd(t *testing.T) {
	doc := `{"openapi":"3.1.0","info":{"title":"c","version":"1"},"servers":[{"url":"http://h.example.test"}],
"paths":{"/a":{"post":{"requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/A"}}}},"responses":{}}},
"/b":{"post":{"requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Self"}}}},"responses":{}}}},
"components":{"schemas":{"A":{"$ref":"#/components/schemas/B"},"B":{"$ref":"#/components/schemas/A"},
"Self":{"type":"object","required":["next"],"properties":{"next":{"$ref":"#/components/schemas/Self"}}}}}}`
	r, err := Import("openapi", []byte(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := r.Plan["requests"].([]map[string]any)
	if len(reqs) != 1 || reqs[0]["body"] != `{"next":null}` {
		t.Errorf("requests = %v; want only POST /b with {\"next\":null}", reqs)
	}
	if len(r.Skipped) != 1 || r.Skipped[0].Element != "POST /a" {
		t.Errorf("skipped = %+v", r.Skipped)
	}
}

// Every fixture is detected as its own format and as no other.
func TestDetectFixtures(t *testing.T) {
	for _, dir := range []string{"jmx", "openapi"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*"))
		for _, f := range files {
			if strings.HasSuffix(f, ".golden.json") {
				continue
			}
			data, _ := os.ReadFile(f)
			if got := Detect(data); got != dir {
				t.Errorf("Detect(%s) = %q", f, got)
			}
		}
	}
	if got := Detect([]byte(`{"info":{},"openapi":"3.1.0","paths":{}}`)); got != "openapi" {
		t.Errorf("minified OpenAPI JSON detected as %q", got)
	}
	if got := Detect([]byte(`{"swagger":"2.0"}`)); got == "openapi" {
		t.Errorf("Swagger 2.0 detected as openapi")
	}
	for _, doc := range []string{`{"swagger":"2.0","paths":{}}`, "swagger: '2.0'\npaths: {}\n"} {
		if _, err := Import("detect", []byte(doc), Options{}); err == nil || !strings.Contains(err.Error(), "Swagger 2.0 is not OpenAPI 3: convert it first") {
			t.Errorf("detect %q: err %v; want it to name Swagger 2.0", doc, err)
		}
	}
}

// A file declaring ISO-8859-1 is read as Latin-1; an unknown encoding is refused by name.
func TestJMXLatin1(t *testing.T) {
	data, err := os.ReadFile("testdata/jmx/jmeter2_13.jmx")
	if err != nil {
		t.Fatal(err)
	}
	latin := bytes.Replace(data, []byte(`encoding="UTF-8"`), []byte(`encoding="ISO-8859-1"`), 1)
	latin = bytes.Replace(latin, []byte(`testname="Catalogue browse"`), []byte("testname=\"Caf\xe9 browse\""), 1)
	r, err := Import("jmx", latin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Plan["name"] != "Café browse" {
		t.Errorf("name = %q", r.Plan["name"])
	}
	other := bytes.Replace(data, []byte(`encoding="UTF-8"`), []byte(`encoding="EBCDIC"`), 1)
	refused(t, "jmx", other, `encoding "EBCDIC" is not read`, 1<<20)
}
