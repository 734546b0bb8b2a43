package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// http.max_header: absent means the default and is not written back; outside its range (or not
// an integer) is an error on http.max_header; the range's edges are accepted.
func TestMaxHeader(t *testing.T) {
	base := `{"name":"t","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"vus":1,"duration":"1s"}%s}`
	p, err := Parse([]byte(fmt.Sprintf(base, "")))
	if err != nil || p.HTTP.MaxHeaderOrDefault() != DefaultMaxHeader || DefaultMaxHeader != 65536 {
		t.Fatalf("absent: %v, max_header %d", err, p.HTTP.MaxHeaderOrDefault())
	}
	if b, _ := json.Marshal(p); strings.Contains(string(b), "max_header") || strings.Contains(string(b), "proxy") {
		t.Errorf("absent options are written back: %s", b)
	}
	for _, v := range []string{"-1", "1023", "1048577", "\"64KB\"", "1.5"} {
		_, err := Parse([]byte(fmt.Sprintf(base, `,"http":{"max_header":`+v+`}`)))
		if ve, _ := err.(*ValidationError); ve == nil || ve.Fields["http.max_header"] == "" {
			t.Errorf("max_header %s: %v", v, err)
		}
	}
	for _, v := range []int{MinMaxHeader, 65536, MaxMaxHeader} {
		p, err := Parse([]byte(fmt.Sprintf(base, fmt.Sprintf(`,"http":{"max_header":%d}`, v))))
		if err != nil || p.HTTP.MaxHeaderOrDefault() != v {
			t.Errorf("max_header %d: %v", v, err)
		}
	}
}

// http.proxy is http://host:port and nothing else; anything else is an error on http.proxy.
func TestProxyOption(t *testing.T) {
	base := `{"name":"t","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"vus":1,"duration":"1s"},"http":{"proxy":%q}}`
	for proxy, addr := range map[string]string{
		"http://127.0.0.1:3128":  "127.0.0.1:3128",
		"http://proxy.test:8080": "proxy.test:8080",
		"http://[::1]:3128/":     "[::1]:3128",
	} {
		p, err := Parse([]byte(fmt.Sprintf(base, proxy)))
		if err != nil {
			t.Errorf("%s: %v", proxy, err)
			continue
		}
		if got, err := ProxyAddr(p.HTTP.Proxy); got != addr || err != nil {
			t.Errorf("%s: address %q (%v), want %q", proxy, got, err, addr)
		}
	}
	for _, proxy := range []string{"127.0.0.1:3128", "https://127.0.0.1:3128", "socks5://127.0.0.1:1080",
		"http://127.0.0.1", "http://user:pw@127.0.0.1:3128", "http://127.0.0.1:3128/path", "http://127.0.0.1:0",
		"http://127.0.0.1:3128?x=1", "http://:3128"} {
		_, err := Parse([]byte(fmt.Sprintf(base, proxy)))
		if ve, _ := err.(*ValidationError); ve == nil || ve.Fields["http.proxy"] == "" {
			t.Errorf("proxy %q: %v, want an error on http.proxy", proxy, err)
		}
	}
}

// http.proxy with HTTP/2 or with a WebSocket step is refused on http.proxy, naming why (those
// connections would bypass the proxy); the same plans without the proxy, and HTTP/1.1 with it,
// are accepted.
func TestProxyRefusedWithH2AndWebSocket(t *testing.T) {
	const base = `{"name":"t","requests":[%s],"load":{"vus":1,"duration":"1s"},"http":{%s}}`
	const h1, ws = `{"url":"https://127.0.0.1:1/"}`, `{"url":"ws://127.0.0.1:1/chat"}`
	const proxy = `"proxy":"http://127.0.0.1:3128"`
	for _, c := range []struct{ reqs, http, want string }{
		{h1, proxy + `,"version":"2"`, `http.version "2"`},
		{h1, proxy + `,"version":"h2c"`, `http.version "h2c"`},
		{h1 + "," + ws, proxy, "WebSocket steps (requests[1])"},
		{h1, proxy + `,"version":"1.1"`, ""},
		{h1, proxy, ""},
		{h1 + "," + ws, `"version":"2"`, ""},
	} {
		_, err := Parse([]byte(fmt.Sprintf(base, c.reqs, c.http)))
		ve, _ := err.(*ValidationError)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s with %s: %v", c.reqs, c.http, err)
		case c.want != "" && (ve == nil || !strings.Contains(ve.Fields["http.proxy"], c.want)):
			t.Errorf("%s with %s: %v, want an error on http.proxy naming %s", c.reqs, c.http, err, c.want)
		}
	}
}
