package importer

import (
	"net/http"
	"testing"
)

func TestCurlGolden(t *testing.T) { checkGolden(t, "curl", Options{}) }

// TestCurlRunsAgainstLoopback runs Chromium's "Copy as cURL (cmd)" form of a PUT and checks the
// request the target receives: method, path, query, headers (cookie and auth included), body.
func TestCurlRunsAgainstLoopback(t *testing.T) {
	res := importFixture(t, "curl", "testdata/curl/chromium_cmd_put.txt", Options{})
	delete(res.Plan["http"].(map[string]any), "insecure_skip_verify")
	got := runImported(t, res.Plan)
	if len(got) != 1 {
		t.Fatalf("the target received %d requests, want 1", len(got))
	}
	r := got[0]
	if r.Method != "PUT" || r.Path != "/api/cart" || r.Query != "src=web&v=2" {
		t.Errorf("got %s %s?%s, want PUT /api/cart?src=web&v=2", r.Method, r.Path, r.Query)
	}
	if r.Body != `{"item":42,"qty":3,"note":"50% off"}` {
		t.Errorf("body %q", r.Body)
	}
	for k, v := range map[string]string{"Accept": "application/json", "Content-Type": "application/json", "Cookie": "session=abc123"} {
		if r.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, r.Header.Get(k), v)
		}
	}
	res = importFixture(t, "curl", "testdata/curl/auth_form_redirects.txt", Options{})
	got = runImported(t, res.Plan)
	if len(got) != 1 || got[0].Method != "POST" || got[0].Body != "name=Alice&city=Paris" {
		t.Fatalf("got %+v", got)
	}
	if u, p, ok := (&http.Request{Header: got[0].Header}).BasicAuth(); !ok || u != "alice" || p != "s3cret" {
		t.Errorf("basic auth %q %q %v", u, p, ok)
	}
}
