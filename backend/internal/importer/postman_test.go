package importer

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestPostmanGolden(t *testing.T) { impCheckGolden(t, "postman", Options{}) }

// TestPostmanRunsAgainstLoopback runs the folders-and-auth collection: requests in folder order,
// the collection's bearer token from the data table, a folder variable in the path, basic auth,
// an API key in the query, noauth in the Public folder.
func TestPostmanRunsAgainstLoopback(t *testing.T) {
	res := impFixture(t, "postman", "testdata/postman/folders_auth.postman_collection.json", Options{})
	got := impRun(t, res.Plan)
	var lines []string
	for _, r := range got {
		lines = append(lines, r.Method+" "+r.Path+"?"+r.Query+" auth="+r.Header.Get("Authorization")+" key="+r.Header.Get("X-Api-Key"))
	}
	want := strings.Join([]string{
		"GET /health? auth= key=",
		"GET /api/users/48213? auth=Bearer tok-abc-123 key=",
		"GET /admin/audit? auth=Basic YWRtaW46czNjcmV0 key=",
		"GET /admin/export?format=csv&api_key=k+123 auth= key=",
		"GET /admin/stats? auth= key=key-789",
		"GET /digest? auth= key=",
	}, "\n")
	if s := strings.Join(lines, "\n"); s != want {
		t.Fatalf("the target received\n%s\nwant\n%s", s, want)
	}
	if u, p, ok := (&http.Request{Header: got[2].Header}).BasicAuth(); !ok || u != "admin" || p != "s3cret" {
		t.Errorf("basic auth %q %q", u, p)
	}
	res = impFixture(t, "postman", "testdata/postman/bodies.postman_collection.json", Options{})
	got = impRun(t, res.Plan)
	if len(got) != 3 || got[0].Body != "user=alice&password=wonder+land%26co&next=/account" ||
		got[0].Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Fatalf("got %+v", got)
	}
	if got[2].Method != "PATCH" || got[2].Path != "/api/orders/9" || got[2].Body != `<order><item id="42" qty="2"/></order>` {
		t.Errorf("xml request: %+v", got[2])
	}
}

// TestPostmanHostile: folders nested past the JSON depth bound are refused as unreadable input,
// and a v1 collection is told to be exported again.
func TestPostmanHostile(t *testing.T) {
	deep := `{"info":{"_postman_id":"x"},"item":` + strings.Repeat(`[{"item":`, 200_000) + `[]` + strings.Repeat(`}]`, 200_000) + `}`
	var ie *InputError
	if _, err := Import("postman", []byte(deep), Options{}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "nests more than") {
		t.Errorf("deep folders: %v", err)
	}
	if _, err := Import("postman", []byte(`{"id":"1","name":"old","order":[],"requests":[]}`), Options{}); !errors.As(err, &ie) || !strings.Contains(err.Error(), "v2.1") {
		t.Errorf("v1: %v", err)
	}
}
