package plan

import (
	"encoding/json"
	"strings"
	"testing"
)

// keepMasked is KeepMasked for a sent plan that must not be refused.
func keepMasked(t *testing.T, data []byte, stored *Plan) []byte {
	t.Helper()
	out, err := KeepMasked(data, stored)
	if err != nil {
		t.Fatalf("KeepMasked: %v", err)
	}
	return out
}

func TestURLOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:1/a?k=v":        "http://127.0.0.1:1",
		"HTTP://Example.COM/x":            "http://example.com",
		"https://user:pw@h.example:8443/": "https://h.example:8443",
		"http://h.example#frag":           "http://h.example",
		"{{base}}/x":                      "{{base}}",
		"http://{{Host}}:{{port}}/p":      "http://{{Host}}:{{port}}",
	} {
		if got := URLOrigin(in); got != want {
			t.Errorf("URLOrigin(%q) = %q, want %q", in, got, want)
		}
	}
}

// A masked value is kept only while the request still targets the origin it was entered for,
// whether the stored request is matched by name or by position.
func TestKeepMaskedRefusesARetargetedRequest(t *testing.T) {
	stored, err := Parse([]byte(secretPlan))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := Marshal(stored)
	shown := MaskSpec(spec)
	send := func(i int, edit func(r map[string]any)) []byte {
		var raw map[string]any
		_ = json.Unmarshal(shown, &raw)
		edit(raw["requests"].([]any)[i].(map[string]any))
		b, _ := json.Marshal(raw)
		return b
	}
	// Same origin, another path and query: kept.
	same := send(0, func(r map[string]any) { r["url"] = "http://127.0.0.1:1/other?q=1" })
	if p, err := Parse(keepMasked(t, same, stored)); err != nil || p.Requests[0].Headers["authorization"] != "Bearer A1" {
		t.Fatalf("same origin: %v %v", err, p)
	}
	for name, edit := range map[string]func(r map[string]any){
		"host by name":     func(r map[string]any) { r["url"] = "http://attacker.example/a" },
		"port by name":     func(r map[string]any) { r["url"] = "http://127.0.0.1:2/a" },
		"scheme by name":   func(r map[string]any) { r["url"] = "https://127.0.0.1:1/a" },
		"host by position": func(r map[string]any) { r["name"] = "renamed"; r["url"] = "http://attacker.example/a" },
		"template host":    func(r map[string]any) { r["url"] = "{{base}}/a" },
	} {
		out, err := KeepMasked(send(0, edit), stored)
		ve, ok := err.(*ValidationError)
		if !ok || out != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		msg := ve.Fields["requests[0].headers"]
		for _, want := range []string{`"authorization"`, `"X-Api-Key"`, "target changed", "enter its value again"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: message %q lacks %q", name, msg, want)
			}
		}
		if strings.Contains(msg, "A1") || strings.Contains(msg, "K1") {
			t.Errorf("%s: message shows a value: %q", name, msg)
		}
	}
	// A value entered anew for the new target is the new value, not refused.
	fresh := send(0, func(r map[string]any) {
		r["url"] = "http://attacker.example/a"
		h := r["headers"].(map[string]any)
		h["authorization"], h["X-Api-Key"] = "Bearer NEW", "{{secret.KEY}}"
	})
	if p, err := Parse(keepMasked(t, fresh, stored)); err != nil || p.Requests[0].Headers["authorization"] != "Bearer NEW" {
		t.Fatalf("re-entered values: %v %v", err, p)
	}
}

// http.hosts sends a request elsewhere without touching its URL: an added or changed override keeps
// no masked value; an unchanged one (the plan edited elsewhere) keeps them.
func TestKeepMaskedRefusesChangedHostsOverrides(t *testing.T) {
	base, err := Parse([]byte(secretPlan))
	if err != nil {
		t.Fatal(err)
	}
	base.HTTP.Hosts = map[string]string{"api.test": "127.0.0.1:1"}
	spec, _ := Marshal(base)
	stored, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	shown := MaskSpec(spec)
	send := func(hosts any) []byte {
		var raw map[string]any
		_ = json.Unmarshal(shown, &raw)
		h, _ := raw["http"].(map[string]any)
		if hosts == nil {
			delete(h, "hosts")
		} else {
			h["hosts"] = hosts
		}
		b, _ := json.Marshal(raw)
		return b
	}
	if p, err := Parse(keepMasked(t, send(map[string]any{"api.test": "127.0.0.1:1"}), stored)); err != nil ||
		p.Requests[0].Headers["authorization"] != "Bearer A1" {
		t.Fatalf("unchanged hosts: %v %v", err, p)
	}
	for name, hosts := range map[string]any{
		"redirected":  map[string]any{"api.test": "127.0.0.2:9"},
		"added":       map[string]any{"api.test": "127.0.0.1:1", "127.0.0.1:1": "127.0.0.2:9"},
		"not strings": map[string]any{"api.test": 7},
	} {
		out, err := KeepMasked(send(hosts), stored)
		ve, ok := err.(*ValidationError)
		if !ok || out != nil || !strings.Contains(ve.Fields["requests[0].headers"], "http.hosts changed") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
