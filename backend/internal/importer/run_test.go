package importer

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// received is what the loopback target saw, request by request ("METHOD path" → count), and every
// way a request differed from what the fixture describes.
type received struct {
	mu       sync.Mutex
	hits     map[string]int
	problems []string
}

func (rc *received) saw(r *http.Request) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.hits == nil {
		rc.hits = map[string]int{}
	}
	rc.hits[r.Method+" "+r.URL.RequestURI()]++
}

func (rc *received) wrong(format string, args ...any) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.problems = append(rc.problems, fmt.Sprintf(format, args...))
}

// want compares a request's header with the expected value.
func (rc *received) want(r *http.Request, header, value string) {
	if got := r.Header.Get(header); got != value {
		rc.wrong("%s %s: %s = %q, want %q", r.Method, r.URL.Path, header, got, value)
	}
}

// runImported imports a fixture, lets edit adjust the plan as a user would (target addresses,
// a short load model), proves it validates and runs it against the loopback target.
func runImported(t *testing.T, format, fixture string, edit func(p map[string]any), tg *testutil.Target) *metrics.Summary {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Import(format, data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	edit(r.Plan)
	return impRunPlan(t, r)
}

func addrOf(tg *testutil.Target) string { return strings.TrimPrefix(tg.URL, "http://") }

// TestJMXPlanRunsAgainstLoopback runs the CSV/assertion/extractor fixture: the form body carries
// the data row, the token the JSON Extractor takes from the login answer goes into the next
// request's Authorization header, the Regular Expression Extractor's value into the third URL,
// and every imported check passes.
func TestJMXPlanRunsAgainstLoopback(t *testing.T) {
	rc := &received{}
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		rc.saw(r)
		if r.Host != "api.example.test" {
			rc.wrong("%s: Host = %q", r.URL.Path, r.Host)
		}
		body, _ := io.ReadAll(r.Body)
		switch r.Method + " " + r.URL.Path {
		case "POST /login":
			rc.want(r, "Content-Type", "application/x-www-form-urlencoded")
			if string(body) != "user=alice&pass=s3cret" {
				rc.wrong("POST /login: body %q", body)
			}
			_, _ = io.WriteString(w, `{"token":"tok123","user":{"id":"u7"}}`)
		case "GET /users/u7":
			rc.want(r, "Authorization", "Bearer tok123")
			_, _ = io.WriteString(w, `{"status":"active","roles":["admin"],"plan":"gold"}`)
		case "GET /plans/gold":
			_, _ = io.WriteString(w, `{}`)
		default:
			rc.wrong("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	})
	sum := runImported(t, "jmx", "testdata/jmx/csv_assertions_extractors.jmx", func(p map[string]any) {
		p["data"] = map[string]any{"csv": "user,pass\nalice,s3cret\n"} // the rows the import note asks for
		p["load"] = map[string]any{"executor": "per-vu-iterations", "vus": 1, "iterations": 2}
		p["http"] = map[string]any{"hosts": map[string]any{"api.example.test": addrOf(tg)}, "timeout": "5s"}
	}, tg)
	for _, pr := range rc.problems {
		t.Error(pr)
	}
	for _, k := range []string{"POST /login", "GET /users/u7", "GET /plans/gold"} {
		if rc.hits[k] != 2 {
			t.Errorf("%s received %d times, want 2 (all: %v)", k, rc.hits[k], rc.hits)
		}
	}
	if sum.Requests != 6 || sum.Errors != 0 {
		t.Errorf("requests %d errors %d (%v), want 6 and 0", sum.Requests, sum.Errors, sum.ErrorKinds)
	}
	if len(sum.Checks) < 6 {
		t.Errorf("%d checks reported, want the imported ones (≥ 6): %+v", len(sum.Checks), sum.Checks)
	}
	for _, c := range sum.Checks {
		if c.Fails != 0 || c.Passes != 2 {
			t.Errorf("check %s %s: %d passes, %d fails; want 2 and 0", c.Request, c.Check, c.Passes, c.Fails)
		}
	}
}

// TestOpenAPIPlanRunsAgainstLoopback runs the Petstore 3.0 import (flow switched to sequence so
// that each iteration sends every operation once): paths, header parameters and generated bodies
// arrive as the document describes them.
func TestOpenAPIPlanRunsAgainstLoopback(t *testing.T) {
	rc := &received{}
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		rc.saw(r)
		if r.Host != "petstore.example.test" {
			rc.wrong("%s: Host = %q", r.URL.Path, r.Host)
		}
		body, _ := io.ReadAll(r.Body)
		switch r.Method + " " + r.URL.RequestURI() {
		case "GET /v1/pets":
			_, _ = io.WriteString(w, `[]`)
		case "POST /v1/pets":
			rc.want(r, "Content-Type", "application/json")
			var pet map[string]any
			if err := json.Unmarshal(body, &pet); err != nil || pet["name"] != "Rex" || pet["id"] != float64(0) || len(pet) != 2 {
				rc.wrong("POST /v1/pets: body %q", body)
			}
			w.WriteHeader(http.StatusCreated)
		case "GET /v1/pets/xxxxxx": // petId has only a schema: a value generated from it
			_, _ = io.WriteString(w, `{}`)
		case "DELETE /v1/pets/fido-7":
			rc.want(r, "X-Reason", "adopted")
			w.WriteHeader(http.StatusNoContent)
		default:
			rc.wrong("unexpected %s %s", r.Method, r.URL.RequestURI())
			w.WriteHeader(http.StatusNotFound)
		}
	})
	sum := runImported(t, "openapi", "testdata/openapi/petstore_3_0.json", func(p map[string]any) {
		p["flow"] = "sequence"
		p["load"] = map[string]any{"executor": "per-vu-iterations", "vus": 1, "iterations": 2}
		p["http"] = map[string]any{"hosts": map[string]any{"petstore.example.test": addrOf(tg)}, "timeout": "5s"}
	}, tg)
	for _, pr := range rc.problems {
		t.Error(pr)
	}
	for _, k := range []string{"GET /v1/pets", "POST /v1/pets", "GET /v1/pets/xxxxxx", "DELETE /v1/pets/fido-7"} {
		if rc.hits[k] != 2 {
			t.Errorf("%s received %d times, want 2 (all: %v)", k, rc.hits[k], rc.hits)
		}
	}
	if sum.Requests != 8 || sum.Errors != 0 {
		t.Errorf("requests %d errors %d (%v), want 8 and 0", sum.Requests, sum.Errors, sum.ErrorKinds)
	}
}
