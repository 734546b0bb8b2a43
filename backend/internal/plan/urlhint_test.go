package plan

import (
	"regexp"
	"strings"
	"testing"
)

// The hint of a URL without a scheme names an example; that example must itself be accepted,
// and a host written as a placeholder must not be suggested back (http://{{base}}/ is refused).
func TestURLHintSuggestsAnAcceptedURL(t *testing.T) {
	example := regexp.MustCompile(`e\.g\. (\S+?)\)`)
	for _, raw := range []string{"{{base}}/", "{{base}}/x?q={{id}}", "127.0.0.1:8080/a", "localhost/{{p}}", "a b", "{{host}}:{{port}}"} {
		_, err := parseURL(raw)
		if err == nil {
			t.Fatalf("%q: accepted", raw)
		}
		m := example.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("%q: %q names no example", raw, err)
		}
		if _, err := parseURL(m[1]); err != nil {
			t.Errorf("%q: the hint suggests %q, which is refused: %v", raw, m[1], err)
		}
		if strings.Contains(raw, "{{") && strings.HasPrefix(raw, "{{") && !strings.Contains(err.Error(), "not for the host") {
			t.Errorf("%q: %q does not say a placeholder cannot be the host", raw, err)
		}
	}
	// A URL that only lacks its scheme is suggested back with http:// in front.
	if _, err := parseURL("127.0.0.1:8080/a"); !strings.Contains(err.Error(), "http://127.0.0.1:8080/a") {
		t.Errorf("hint %q does not suggest http://127.0.0.1:8080/a", err)
	}
}

// A request's headers are compiled (and so sent) in the plan's order — name order, as a stored
// plan writes its headers object — the same on every compile, not in a map's random order.
func TestHeadersCompileInThePlansOrder(t *testing.T) {
	js := `{"name":"h","requests":[{"url":"http://127.0.0.1:9/","headers":{"X-Zeta":"1","Accept":"2","X-Mid":"3","Cache-Control":"4","User-Agent":"5","B-Two":"6"}}],
		"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`
	want := []string{"Accept", "B-Two", "Cache-Control", "User-Agent", "X-Mid", "X-Zeta"}
	for range 20 {
		c, err := ParseCompiled([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range c.Requests[0].Headers {
			got = append(got, h.Name)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("headers compiled in the order %v, want %v", got, want)
		}
	}
}
