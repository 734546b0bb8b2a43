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
