package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestDefaultNameDropsQueryFragmentAndUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8080/p?api_key=abc":           "GET http://h:8080/p",
		"http://user:pw@h/p/{{id}}?k={{x}}#f":   "GET http://h/p/{{id}}",
		"https://h/":                            "GET https://h/",
		"http://h/a@b?c":                        "GET http://h/a@b",
		"http://u@h":                            "GET http://h",
		"http://h/{{secret.TOKEN}}/x?y=1":       "GET http://h/{{secret.TOKEN}}/x",
		"http://[::1]:8080/p#frag":              "GET http://[::1]:8080/p",
		"http://a:b@[::1]:8080/p?q=user@host.x": "GET http://[::1]:8080/p",
	} {
		if got := DefaultName("GET", in); got != want {
			t.Errorf("DefaultName(%q) = %q, want %q", in, got, want)
		}
	}
	p, err := Parse([]byte(`{"name":"q","requests":[{"url":"http://127.0.0.1:1/p?api_key=K1"},
		{"name":"GET http://127.0.0.1:1/old?api_key=K2","url":"http://127.0.0.1:1/old?api_key=K2"}],
		"load":{"vus":1,"duration":"1s"},
		"thresholds":[{"expr":"p(95)<1s","request":"GET http://127.0.0.1:1/old?api_key=K2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Requests[0].Name != "GET http://127.0.0.1:1/p" {
		t.Errorf("default name %q", p.Requests[0].Name)
	}
	// A name an older Volley derived with the query string is renamed, its threshold with it.
	if p.Requests[1].Name != "GET http://127.0.0.1:1/old" || p.Thresholds[0].Request != "GET http://127.0.0.1:1/old" {
		t.Errorf("legacy name %q, threshold %q", p.Requests[1].Name, p.Thresholds[0].Request)
	}
	b, _ := Marshal(p)
	if strings.Contains(strings.ReplaceAll(string(b), `"url"`, ""), "name\":\"GET http://127.0.0.1:1/p?") {
		t.Errorf("name with query: %s", b)
	}
}

const secretPlan = `{"name":"s","requests":[
  {"name":"a","url":"http://127.0.0.1:1/a","headers":{"authorization":"Bearer A1","X-Api-Key":"K1","Accept":"*/*"},
   "secret_headers":["x-api-key"]},
  {"name":"b","url":"http://127.0.0.1:1/b","headers":{"Cookie":"c=B1","Proxy-Authorization":"Basic P1"}}],
 "load":{"vus":1,"duration":"1s"}}`

func TestMaskSpecHidesEverySecretHeader(t *testing.T) {
	p, err := Parse([]byte(secretPlan))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := Marshal(p)
	masked := string(MaskSpec(spec))
	for _, secret := range []string{"A1", "K1", "B1", "P1"} {
		if strings.Contains(masked, secret) {
			t.Errorf("%s in %s", secret, masked)
		}
	}
	if !strings.Contains(masked, `"Accept":"*/*"`) || strings.Count(masked, Masked) != 4 {
		t.Errorf("masked: %s", masked)
	}
	if p.Requests[0].Headers["authorization"] != "Bearer A1" {
		t.Error("MaskSpec changed the caller's plan")
	}
	// Idempotent, and a spec without secrets comes back as it is.
	if string(MaskSpec([]byte(masked))) != masked {
		t.Error("masking twice changed the spec")
	}
	plain := []byte(`{"name":"x","requests":[{"name":"a","url":"http://h/","headers":{"Accept":"x"}}]}`)
	if string(MaskSpec(plain)) != string(plain) {
		t.Error("a spec without secrets changed")
	}
	// A spec that does not decode as a plan is masked as JSON.
	odd := []byte(`{"requests":[{"weight":"heavy","headers":{"Authorization":"Bearer Z9","X":"y","Y":{"deep":"Z8"}}}]}`)
	if m := string(MaskSpec(odd)); strings.Contains(m, "Z9") || strings.Contains(m, "Z8") || !strings.Contains(m, `"X":"y"`) {
		t.Errorf("generic mask: %s", m)
	}
}

func TestKeepMaskedRestoresStoredValues(t *testing.T) {
	stored, err := Parse([]byte(secretPlan))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := Marshal(stored)
	shown := MaskSpec(spec)
	// The requests come back reordered, one new header, one header replaced.
	var raw map[string]any
	_ = json.Unmarshal(shown, &raw)
	reqs := raw["requests"].([]any)
	reqs[0], reqs[1] = reqs[1], reqs[0]
	reqs[0].(map[string]any)["headers"].(map[string]any)["Cookie"] = "c=NEW"
	reqs[1].(map[string]any)["headers"].(map[string]any)["X-Other"] = "o"
	sent, _ := json.Marshal(raw)
	p, err := Parse(keepMasked(t, sent, stored))
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Requests[1].Headers; h["authorization"] != "Bearer A1" || h["X-Api-Key"] != "K1" || h["X-Other"] != "o" {
		t.Errorf("request a: %v", h)
	}
	if h := p.Requests[0].Headers; h["Cookie"] != "c=NEW" || h["Proxy-Authorization"] != "Basic P1" {
		t.Errorf("request b: %v", h)
	}
	// Unmarking a masked header does not reveal it: it stays secret with its stored value.
	unmarked := strings.Replace(string(shown), `"secret_headers":["x-api-key"]`, `"secret_headers":[]`, 1)
	if unmarked == string(shown) {
		t.Fatal("fixture: secret_headers not found")
	}
	p2, err := Parse(keepMasked(t, []byte(unmarked), stored))
	if err != nil {
		t.Fatal(err)
	}
	if p2.Requests[0].Headers["X-Api-Key"] != "K1" || !p2.Requests[0].IsSecretHeader("X-Api-Key") {
		t.Errorf("unmarked while masked: %v %v", p2.Requests[0].Headers, p2.Requests[0].SecretHeaders)
	}
	if b, _ := Marshal(p2); strings.Contains(string(MaskSpec(b)), "K1") {
		t.Errorf("unmarking revealed the value")
	}
	// Without a stored value (a new plan, or a header that was not stored) the placeholder is an
	// error naming the field, never a value sent to a target.
	_, err = Parse(keepMasked(t, []byte(strings.Replace(string(shown), `"name":"a"`, `"name":"new"`, 1)), &Plan{}))
	ve, ok := err.(*ValidationError)
	if !ok || !strings.Contains(ve.Fields["requests[0].headers"], "masked placeholder") {
		t.Fatalf("placeholder without a stored value: %v", err)
	}
	if _, err := Parse(shown); err == nil {
		t.Error("a masked plan parsed as runnable")
	}
	// In a header that is not secret the placeholder is just text.
	if _, err := Parse([]byte(`{"name":"x","requests":[{"url":"http://h/","headers":{"X-Plain":"********"}}],"load":{"vus":1,"duration":"1s"}}`)); err != nil {
		t.Errorf("placeholder in a plain header: %v", err)
	}
}

func TestSecretRefsAndCheckSecrets(t *testing.T) {
	p, err := Parse([]byte(`{"name":"s","requests":[{"url":"http://127.0.0.1:1/{{secret.PATH}}?k={{ secret.KEY }}",
		"headers":{"X-Key":"{{secret.KEY}}"},"body":"{\"p\":\"{{secret.BODY}}\"}"}],"load":{"vus":1,"duration":"1s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.SecretNames()); got != "[BODY KEY PATH]" {
		t.Errorf("names %s", got)
	}
	err = p.CheckSecrets("the secret store")
	ve, ok := err.(*ValidationError)
	if !ok || !strings.Contains(ve.Fields["requests[0].url"], `no secret "PATH"`) ||
		!strings.Contains(ve.Fields["requests[0].headers"], `no secret "KEY"`) || !strings.Contains(ve.Fields["requests[0].body"], `"BODY"`) {
		t.Fatalf("missing secrets: %v", err)
	}
	p.Secrets = SecretValues{"PATH": "p", "KEY": "line\r\nX-Injected: 1", "BODY": "any\nthing"}
	err = p.CheckSecrets("the secret store")
	ve, ok = err.(*ValidationError)
	if !ok || len(ve.Fields) != 2 || !strings.Contains(ve.Fields["requests[0].headers"], "control character") || strings.Contains(err.Error(), "Injected") {
		t.Fatalf("control characters: %v", err)
	}
	p.Secrets["KEY"] = "k"
	if err := p.CheckSecrets("x"); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v", p.Secrets, *p, p.Secrets); strings.Contains(s, "any\nthing") {
		t.Errorf("secret values printed: %s", s)
	}
	if b, _ := Marshal(p); strings.Contains(string(b), "any\\nthing") {
		t.Errorf("secret values encoded: %s", b)
	}
	// Bad references are template errors naming the field.
	for _, bad := range []string{"{{secret.}}", "{{secret.9x}}", "{{secret.a.b}}", "{{secret.A 1}}"} {
		_, err := Parse([]byte(`{"name":"s","requests":[{"url":"http://h/` + bad + `"}],"load":{"vus":1,"duration":"1s"}}`))
		if ve, ok := err.(*ValidationError); !ok || ve.Fields["requests[0].url"] == "" {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := Parse([]byte(`{"name":"s","requests":[{"url":"http://h/","secret_headers":["bad name"]}],"load":{"vus":1,"duration":"1s"}}`)); err == nil ||
		!strings.Contains(err.Error(), "requests[0].secret_headers[0]") {
		t.Errorf("bad secret_headers: %v", err)
	}
}
