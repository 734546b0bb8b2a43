package importer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/plan"
)

// importHTTP imports data and returns the plan's http object as plan.Parse reads it, proving the
// plan validates, and the skipped list.
func importHTTP(t *testing.T, format, data string) (plan.HTTP, []Skipped) {
	t.Helper()
	r, err := Import(format, []byte(data), Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(r.Plan)
	p, err := plan.Parse(js)
	if err != nil {
		t.Fatalf("the imported plan does not validate: %v\n%s", err, js)
	}
	return p.HTTP, r.Skipped
}

// The importers fill the session plan fields: curl --compressed asks for what curl asks for; a
// HAR's recorded Accept-Encoding becomes http.compression with the codings Volley supports (the
// others named in skipped); a JMeter Cookie Manager is http.cookies "vu", or "iteration" when it
// clears its cookies each iteration.
func TestImportSessionFields(t *testing.T) {
	h, _ := importHTTP(t, "curl", `curl --compressed -H 'X-A: 1' http://app.test/`)
	if !reflect.DeepEqual(h.Compression, []string{"gzip", "deflate", "br"}) {
		t.Errorf("curl --compressed: compression %q", h.Compression)
	}
	r, _ := Import("curl", []byte(`curl --compressed http://app.test/`), Options{})
	if js, _ := json.Marshal(r.Plan); strings.Contains(string(js), "Accept-Encoding") {
		t.Errorf("curl --compressed still adds a header: %s", js)
	}
	har := func(enc ...string) string {
		var es []string
		for i, e := range enc {
			es = append(es, fmt.Sprintf(`{"startedDateTime":"2026-01-01T00:00:0%dZ","time":1,"request":{"method":"GET","url":"http://app.test/%d",
				"headers":[{"name":"Accept-Encoding","value":%q}]},"response":{"status":200,"content":{}}}`, i, i, e))
		}
		return `{"log":{"version":"1.2","entries":[` + strings.Join(es, ",") + `]}}`
	}
	h, skipped := importHTTP(t, "har", har("gzip, deflate, br, zstd", "gzip;q=1.0, sdch, identity, compress;q=0.5, deflate;q=0"))
	if !reflect.DeepEqual(h.Compression, []string{"gzip", "deflate", "br", "zstd"}) {
		t.Errorf("HAR: compression %q", h.Compression)
	}
	if js, _ := json.Marshal(skipped); !strings.Contains(string(js), "Accept-Encoding (compress, sdch)") {
		t.Errorf("HAR: unsupported codings not named: %s", js)
	}
	h, _ = importHTTP(t, "har", har("deflate;q=0, br"))
	if !reflect.DeepEqual(h.Compression, []string{"br"}) {
		t.Errorf("HAR with q=0: compression %q", h.Compression)
	}
	jmx := func(clear string) string {
		return `<jmeterTestPlan><hashTree><TestPlan testname="t"/><hashTree>
			<CookieManager testclass="CookieManager" testname="cm"><boolProp name="CookieManager.clearEachIteration">` + clear + `</boolProp></CookieManager><hashTree/>
			<ThreadGroup testname="tg"><stringProp name="ThreadGroup.num_threads">1</stringProp></ThreadGroup><hashTree>
			<HTTPSamplerProxy testname="s"><stringProp name="HTTPSampler.domain">app.test</stringProp><stringProp name="HTTPSampler.path">/</stringProp></HTTPSamplerProxy><hashTree/>
			</hashTree></hashTree></hashTree></jmeterTestPlan>`
	}
	for clear, want := range map[string]string{"false": "vu", "true": "iteration"} {
		if h, _ := importHTTP(t, "jmx", jmx(clear)); h.Cookies != want {
			t.Errorf("JMeter clearEachIteration %s: cookies %q, want %q", clear, h.Cookies, want)
		}
	}
}
