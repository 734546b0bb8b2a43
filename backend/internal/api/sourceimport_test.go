package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/api"
)

// TestImportSource: a tester imports a curl command (format named or detected) and gets the plan,
// which saves as it is; a viewer may not; a bad format or unreadable input is a 400 naming the
// field; a cookie request from another origin is refused by the guard.
func TestImportSource(t *testing.T) {
	a := newAuthApp(t, false, true)
	tom, vic := a.login("tom", tomPW), a.login("vic", vicPW)
	body, _ := json.Marshal(map[string]any{"input": "curl 'http://127.0.0.1:9/api/items' -H 'Accept: application/json' -d 'a=1' -F f=@x"})
	for _, q := range []string{"?format=curl", "", "?format=detect"} {
		m := a.must(tom, 200, "POST", "/api/import"+q, string(body))
		if m["format"] != "curl" {
			t.Errorf("%s: format %v", q, m["format"])
		}
		sk, _ := m["skipped"].([]any)
		if len(sk) != 1 || !strings.Contains(sk[0].(map[string]any)["element"].(string), "-F f=@x") {
			t.Errorf("%s: skipped %v", q, m["skipped"])
		}
		reqs := m["plan"].(map[string]any)["requests"].([]any)
		if r := reqs[0].(map[string]any); r["method"] != "POST" || r["body"] != "a=1" {
			t.Errorf("%s: request %v", q, r)
		}
		plan, _ := json.Marshal(m["plan"])
		a.must(tom, 201, "POST", "/api/plans", string(plan))
	}
	if st, m, _ := a.do(vic, "POST", "/api/import", string(body)); st != 403 {
		t.Errorf("viewer: %d %v", st, m)
	}
	for _, c := range []struct{ q, body, field string }{
		{"?format=nope", string(body), "format"},
		{"?format=har", `{"input":"{not json"}`, "input"},
		{"", `{"input":"hello"}`, "input"},
		{"", `{"input":""}`, "input"},
		{"", `{"text":"curl http://a.test/"}`, "body"},
	} {
		st, m, _ := a.do(tom, "POST", "/api/import"+c.q, c.body)
		e, _ := m["error"].(map[string]any)
		f, _ := e["fields"].(map[string]any)
		if st != 400 || f[c.field] == nil {
			t.Errorf("%s %s: %d %v, want 400 naming %s", c.q, c.body, st, m, c.field)
		}
	}
	req, _ := http.NewRequest("POST", a.url+"/api/import", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://evil.example")
	req.AddCookie(&http.Cookie{Name: api.SessionCookie, Value: tom.cookie})
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("a cross-origin import: %d, want 403", res.StatusCode)
	}
}
