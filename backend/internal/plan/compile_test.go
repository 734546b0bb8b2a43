package plan

import (
	"bytes"
	"testing"
	"time"
)

// Compile works out what a run needs once, and keeps {{secret.NAME}} as names: the values the
// plan carries for the run never enter the compiled form.
func TestCompile(t *testing.T) {
	p, err := Parse([]byte(`{"name":"c","think_time":"1s-2s","data":{"csv":"id,name\n1,a\n2,b"},
	  "requests":[{"url":"https://api.test:8443/{{secret.PATH}}/{{id}}","headers":{"Authorization":"Bearer {{secret.TOKEN}}","X":"{{name}}","Y":"plain"},
	    "body":"{{tok}}","checks":[{"type":"json","path":"a","op":"eq","value":"b"}]},
	    {"url":"http://127.0.0.1:9/","think_time":"5ms","extract":[{"var":"tok","from":"regex","pattern":"t=(\\w+)"}]}],
	  "load":{"vus":1,"duration":"1s"},"thresholds":["p(95)<200ms",{"expr":"error_rate<1%","request":"GET http://127.0.0.1:9/"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p.Secrets = SecretValues{"PATH": "hidden-path", "TOKEN": "hidden-token"}
	c, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := c.Requests[0], c.Requests[1]
	if r0.Scheme != "https" || r0.HostPort != "api.test:8443" || r0.Host != "api.test" {
		t.Errorf("URL parts %q %q %q", r0.Scheme, r0.HostPort, r0.Host)
	}
	if len(r0.URL) != 4 || r0.URL[1].Kind != PartSecret || string(r0.URL[1].Lit) != "PATH" || r0.URL[3].Kind != PartData || r0.URL[3].Index != 0 {
		t.Errorf("URL template %+v", r0.URL)
	}
	if len(r0.Body) != 1 || r0.Body[0].Kind != PartExtract || r0.Body[0].Index != 0 || c.ExtractSlots != 1 {
		t.Errorf("body template %+v, %d slots", r0.Body, c.ExtractSlots)
	}
	for _, h := range r0.Headers {
		for _, part := range h.Value {
			if bytes.Contains(part.Lit, []byte("hidden")) {
				t.Errorf("header %s holds a secret value", h.Name)
			}
		}
		if want := h.Name == "Authorization"; h.Secret != want || (h.Name == "Y") != (h.Value == nil) {
			t.Errorf("header %s: secret %v, template %+v", h.Name, h.Secret, h.Value)
		}
	}
	if !r0.KeepBody || len(r0.Checks) != 1 || r0.Checks[0].Op != OpEq || string(r0.Checks[0].Str) != "b" || r0.Checks[0].Desc != "json a eq b" {
		t.Errorf("checks %+v", r0.Checks)
	}
	if !r1.KeepBody || len(r1.Extracts) != 1 || r1.Extracts[0].Re == nil || r1.Extracts[0].Slot != 0 {
		t.Errorf("extracts %+v", r1.Extracts)
	}
	if r0.ThinkLo != time.Second || r0.ThinkHi != 2*time.Second || r1.ThinkLo != 5*time.Millisecond || r1.ThinkHi != 5*time.Millisecond {
		t.Errorf("think times %v-%v, %v-%v", r0.ThinkLo, r0.ThinkHi, r1.ThinkLo, r1.ThinkHi)
	}
	if len(c.Rows) != 2 || string(c.Rows[0][1]) != "a" || string(c.Rows[1][1]) != "b" {
		t.Errorf("rows %q", c.Rows)
	}
	if len(c.Thresholds) != 2 || c.Thresholds[0].Percentile != 95 || c.Thresholds[1].Value != 0.01 {
		t.Errorf("thresholds %+v", c.Thresholds)
	}
	// An invalid plan is refused as Validate refuses it.
	p.Load.VUs = -1
	if _, err := Compile(p); err == nil || err.Error() != p.Validate().Error() {
		t.Errorf("Compile of an invalid plan: %v", err)
	}
}

// ParseCompiled gives what Parse and Compile give, and refuses what Parse refuses, with the same
// problems.
func TestParseCompiled(t *testing.T) {
	good := []byte(`{"name":"p","requests":[{"url":"http://127.0.0.1:9/a?u={{vu}}","checks":[{"type":"status","op":"eq","value":200}]}],"load":{"vus":2,"duration":"1s"},"thresholds":["p(95)<200ms"]}`)
	c, err := ParseCompiled(good)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Requests) != 1 || c.Requests[0].URL == nil || len(c.Requests[0].Checks) != 1 || len(c.Thresholds) != 1 ||
		c.Plan.Load.Duration != want.Plan.Load.Duration || len(want.Requests[0].URL) != len(c.Requests[0].URL) {
		t.Fatalf("ParseCompiled = %+v, want %+v", c, want)
	}
	bad := []byte(`{"name":"p","requests":[{"url":"ftp://x"}],"load":{"vus":0,"duration":"1s"}}`)
	_, perr := Parse(bad)
	_, cerr := ParseCompiled(bad)
	if perr == nil || cerr == nil || perr.Error() != cerr.Error() {
		t.Fatalf("ParseCompiled refuses with %v, Parse with %v", cerr, perr)
	}
}
