package plan

import (
	"strings"
	"testing"
)

// http.cookies, http.compression and the cookie extraction: what Parse accepts and the field it
// names for what it refuses.
func TestSessionFields(t *testing.T) {
	cases := []struct {
		http, extract string
		bad           string // the field named, "" when valid
	}{
		{`{}`, ``, ""},
		{`{"cookies":"vu"}`, ``, ""},
		{`{"cookies":"iteration"}`, ``, ""},
		{`{"cookies":"off"}`, ``, ""},
		{`{"cookies":"session"}`, ``, "http.cookies"},
		{`{"compression":["gzip","deflate","br","zstd"]}`, ``, ""},
		{`{"compression":["gzip","lzma"]}`, ``, "http.compression"},
		{`{"compression":["br","br"]}`, ``, "http.compression"},
		{`{"compression":"gzip"}`, ``, "http.compression"},
		{`{}`, `{"var":"sid","from":"cookie","name":"SESSION"}`, ""},
		{`{}`, `{"var":"sid","from":"cookie"}`, "requests[0].extract[0].name"},
		{`{}`, `{"var":"sid","from":"cookie","name":"a b"}`, "requests[0].extract[0].name"},
		{`{}`, `{"var":"sid","from":"cookie","name":"a;b"}`, "requests[0].extract[0].name"},
	}
	for _, c := range cases {
		extract := ""
		if c.extract != "" {
			extract = `,"extract":[` + c.extract + `]`
		}
		js := `{"name":"s","requests":[{"url":"http://127.0.0.1/"` + extract + `}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"},"http":` + c.http + `}`
		p, err := Parse([]byte(js))
		if c.bad == "" {
			if err != nil {
				t.Errorf("%s %s: %v", c.http, c.extract, err)
			}
			continue
		}
		ve, ok := err.(*ValidationError)
		if !ok || ve.Fields[c.bad] == "" {
			t.Errorf("%s %s: %v, want a problem with %s", c.http, c.extract, err, c.bad)
		}
		_ = p
	}
}

func TestAcceptEncodingAndCookieMode(t *testing.T) {
	h := HTTP{Compression: []string{"zstd", "gzip"}}
	if got := h.AcceptEncoding(); got != "zstd, gzip" {
		t.Errorf("Accept-Encoding %q", got)
	}
	if got := (HTTP{}).AcceptEncoding(); got != "" {
		t.Errorf("Accept-Encoding %q without compression", got)
	}
	if (HTTP{}).CookieMode() != CookiesVU || (HTTP{Cookies: "off"}).CookieMode() != CookiesOff {
		t.Error("cookie mode defaults")
	}
	// a cookie extraction does not make the engine keep bodies
	p, err := Parse([]byte(`{"name":"s","requests":[{"url":"http://127.0.0.1/","extract":[{"var":"a","from":"cookie","name":"sid"}]}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(p)
	if err != nil || c.Requests[0].KeepBody {
		t.Errorf("compile %v, keep body %v", err, c != nil && c.Requests[0].KeepBody)
	}
	if !strings.Contains(oneOf(extractFroms()), "cookie") {
		t.Error("cookie is not an extraction source")
	}
}
