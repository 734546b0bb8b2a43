package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// http.version, http.h2_fallback, http.h2_connections: accepted values parse, each wrong one is an
// error under its own field path, and absent fields are not written back.
func TestHTTPVersionFields(t *testing.T) {
	base := `{"name":"t","requests":[{"url":"https://127.0.0.1:1/"}],"load":{"vus":1,"duration":"1s"}%s}`
	p, err := Parse([]byte(fmt.Sprintf(base, "")))
	if err != nil || p.HTTP.H2() {
		t.Fatalf("absent: %v, h2 %v", err, p.HTTP.H2())
	}
	if b, _ := json.Marshal(p); strings.Contains(string(b), "version") || strings.Contains(string(b), "h2_") {
		t.Errorf("absent fields are written back: %s", b)
	}
	for _, ok := range []string{`"version":"1.1"`, `"version":"2"`, `"version":"h2c"`,
		`"version":"2","h2_fallback":true`, `"version":"2","h2_connections":1`,
		`"version":"h2c","h2_connections":1024`} {
		if _, err := Parse([]byte(fmt.Sprintf(base, `,"http":{`+ok+`}`))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, c := range []struct{ http, field string }{
		{`"version":"3"`, "http.version"},
		{`"version":"HTTP/2"`, "http.version"},
		{`"version":"h2c","h2_fallback":true`, "http.h2_fallback"},
		{`"h2_fallback":true`, "http.h2_fallback"},
		{`"version":"2","h2_connections":-1`, "http.h2_connections"},
		{`"version":"2","h2_connections":1025`, "http.h2_connections"},
		{`"h2_connections":4`, "http.h2_connections"},
	} {
		_, err := Parse([]byte(fmt.Sprintf(base, `,"http":{`+c.http+`}`)))
		ve, _ := err.(*ValidationError)
		if ve == nil || ve.Fields[c.field] == "" {
			t.Errorf("%s: want an error on %s, got %v", c.http, c.field, err)
		}
	}
}
