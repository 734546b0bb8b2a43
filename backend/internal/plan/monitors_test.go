package plan

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type denyHost string

func (d denyHost) CheckHost(h string) error {
	if strings.HasPrefix(h, string(d)) {
		return errors.New(h + " is denied")
	}
	return nil
}

func TestMonitors(t *testing.T) {
	const head = `{"name":"m","requests":[{"url":"http://127.0.0.1:8080/"}],"load":{"vus":1,"duration":"1s"},`
	p, err := Parse([]byte(head + `"monitors":[{"type":"node","url":"http://127.0.0.1:9100/metrics"},{"type":"process","name":"nginx","url":"http://127.0.0.1:9256/metrics","interval":"2s"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := p.Monitors
	if m[0].Name != "node-0" || m[0].Interval.D() != time.Second || m[0].Timeout.D() != 800*time.Millisecond || m[1].Interval.D() != 2*time.Second {
		t.Errorf("defaults: %+v", m)
	}
	_, err = Parse([]byte(head + `"monitors":[{"type":"nope","url":"ftp://x"},{"type":"node","url":"http://a/","metric":"x"},
		{"type":"custom","url":"http://a/","name":"node-1","timeout":"2s","labels":{"bad label":"x"}},{"type":"node","url":"http://a/","interval":"10ms","bogus":1}]}`))
	var v *ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("%v", err)
	}
	for _, f := range []string{"monitors[0].type", "monitors[0].url", "monitors[1].metric", "monitors[2].name", "monitors[2].timeout", "monitors[2].labels", "monitors[3].interval", "monitors[3].bogus"} {
		if v.Fields[f] == "" {
			t.Errorf("no problem named for %s in %v", f, v.Fields)
		}
	}
	err = CheckTargets(p, denyHost("127.0.0.1:9256"))
	if !errors.As(err, &v) || v.Fields["monitors[1].url"] == "" || len(v.Fields) != 1 {
		t.Errorf("CheckTargets: %v", err)
	}
}

// A monitor's interval or timeout of 0, or too long to be a duration, and a port out of range are
// named with the monitor's bounds, as request URLs are.
func TestMonitorRanges(t *testing.T) {
	const head = `{"name":"m","requests":[{"url":"http://127.0.0.1:8080/"}],"load":{"vus":1,"duration":"1s"},`
	_, err := Parse([]byte(head + `"monitors":[{"type":"node","url":"http://127.0.0.1:99999/metrics","interval":"9999999h","timeout":"0s"},
		{"type":"node","url":"http://127.0.0.1:9100/metrics","interval":"0","timeout":"99999999999999999ms"}]}`))
	var v *ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("%v", err)
	}
	want := map[string]string{
		"monitors[0].url":      `port "99999" is out of range`,
		"monitors[0].interval": `"9999999h": must be 500ms–1m0s (leave it out for the default 1s)`,
		"monitors[0].timeout":  `"0s": must be 10ms up to the interval`,
		"monitors[1].interval": `"0": must be 500ms–1m0s`,
		"monitors[1].timeout":  `"99999999999999999ms": must be 10ms up to the interval`,
	}
	for f, msg := range want {
		if got := v.Fields[f]; !strings.HasPrefix(got, msg) || strings.Contains(got, "not a duration") || strings.Contains(got, ";") {
			t.Errorf("%s: %q, want it to start with %q (once)", f, got, msg)
		}
	}
	if len(v.Fields) != len(want) {
		t.Errorf("fields %v, want only %v", v.Fields, want)
	}
	// Elsewhere a duration too long is out of range too, not "not a duration".
	_, err = Parse([]byte(`{"name":"m","requests":[{"url":"http://127.0.0.1:8080/"}],"load":{"vus":1,"duration":"9999999h"}}`))
	if !errors.As(err, &v) || !strings.Contains(v.Fields["load.duration"], "out of range") {
		t.Errorf("load.duration: %v", err)
	}
	if durationOverflows("1h") || durationOverflows("abc") || !durationOverflows("-9999999h") {
		t.Error("durationOverflows")
	}
}

// A monitor's token is a secret reference only: listed among the plan's secrets, checked for a
// value like any other, resolved by BearerToken; a token in clear or too long is named.
func TestMonitorToken(t *testing.T) {
	const head = `{"name":"m","requests":[{"url":"http://127.0.0.1:8080/"}],"load":{"vus":1,"duration":"1s"},`
	p, err := Parse([]byte(head + `"monitors":[{"type":"process","url":"http://10.0.0.5:9256/metrics","token":"{{ secret.MON_TOKEN }}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if refs := p.SecretRefs(); len(refs) != 1 || refs[0] != (SecretRef{Name: "MON_TOKEN", Field: "monitors[0].token"}) {
		t.Errorf("refs %+v", refs)
	}
	var v *ValidationError
	if err := p.CheckSecrets("the store"); !errors.As(err, &v) || !strings.Contains(v.Fields["monitors[0].token"], `no secret "MON_TOKEN"`) {
		t.Errorf("missing secret: %v", err)
	}
	p.Secrets = SecretValues{"MON_TOKEN": "line\nbreak"}
	if err := p.CheckSecrets("the store"); !errors.As(err, &v) || !strings.Contains(v.Fields["monitors[0].token"], "control character") {
		t.Errorf("control character: %v", err)
	}
	p.Secrets = SecretValues{"MON_TOKEN": "0123456789abcdef"}
	if err := p.CheckSecrets("the store"); err != nil || p.Monitors[0].BearerToken(p.Secrets) != "0123456789abcdef" {
		t.Errorf("%v, token %q", err, p.Monitors[0].BearerToken(p.Secrets))
	}
	if got := (&Monitor{}).BearerToken(p.Secrets); got != "" {
		t.Errorf("no token: %q", got)
	}
	_, err = Parse([]byte(head + `"monitors":[{"type":"node","url":"http://a/","token":"0123456789abcdef"},
		{"type":"node","url":"http://b/","token":"Bearer {{secret.X}}"},{"type":"node","url":"http://c/","token":"{{secret.` + strings.Repeat("X", 95) + `}}"}]}`))
	if !errors.As(err, &v) {
		t.Fatalf("%v", err)
	}
	for i, want := range []string{"must be a secret reference, {{secret.NAME}}", "must be a secret reference", "106 bytes, over 100: must be a secret reference"} {
		if f := "monitors[" + string(rune('0'+i)) + "].token"; !strings.HasPrefix(v.Fields[f], want) {
			t.Errorf("%s: %q, want %q", f, v.Fields[f], want)
		}
	}
}
