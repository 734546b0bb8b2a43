package plan

import (
	"errors"
	"strings"
	"testing"
)

// judge denies hosts containing "169.254" or "bad", a stand-in for netpolicy (tested there).
type judge struct{ seen []string }

func (j *judge) CheckHost(h string) error {
	j.seen = append(j.seen, h)
	if strings.Contains(h, "169.254") || strings.Contains(h, "bad") {
		return errors.New(h + " is denied")
	}
	return nil
}

func TestCheckTargets(t *testing.T) {
	p, err := Parse([]byte(`{"name":"t","requests":[
		{"url":"http://127.0.0.1:8080/a"},
		{"url":"http://user@169.254.169.254/latest"},
		{"url":"https://[::1]:8443/?q=169.254"}],
		"load":{"vus":1,"duration":"1s"},
		"http":{"hosts":{"svc.test":"127.0.0.1:9000, bad.test:80","ok.test":"127.0.0.2"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	j := &judge{}
	err = CheckTargets(p, j)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	if len(ve.Fields) != 2 || ve.Fields["requests[1].url"] != "169.254.169.254 is denied" ||
		ve.Fields["http.hosts"] != `"svc.test" → bad.test:80 is denied` {
		t.Errorf("fields %v", ve.Fields)
	}
	want := "127.0.0.1:8080,169.254.169.254,[::1]:8443,127.0.0.2,127.0.0.1:9000,bad.test:80"
	if got := strings.Join(j.seen, ","); got != want {
		t.Errorf("checked %s, want %s", got, want)
	}
	// The proxy's host is judged like a request URL's; an allowed one adds no problem.
	p.HTTP.Proxy = "http://bad.proxy.test:3128"
	if err := CheckTargets(p, &judge{}); !errors.As(err, &ve) || ve.Fields["http.proxy"] != "bad.proxy.test:3128 is denied" {
		t.Errorf("denied proxy: %v", err)
	}
	p.HTTP.Proxy = "http://127.0.0.1:3128"
	j = &judge{}
	if err := CheckTargets(p, j); !errors.As(err, &ve) || ve.Fields["http.proxy"] != "" || !strings.Contains(strings.Join(j.seen, ","), ",127.0.0.1:3128") {
		t.Errorf("allowed proxy: %v, checked %v", err, j.seen)
	}
	if CheckTargets(p, nil) != nil {
		t.Error("a nil judge denies")
	}
}
