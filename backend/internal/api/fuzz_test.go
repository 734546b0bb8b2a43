package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/hub"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/examples"
)

// fakeRunner records runs without sending load: a fuzzed plan may name any host.
type fakeRunner struct{}

func (fakeRunner) Start(c *plan.Compiled, create func(time.Time) (int64, error)) (int64, error) {
	return create(time.Now())
}
func (fakeRunner) Stop(int64) error      { return runner.ErrNotRunning }
func (fakeRunner) Active() (int64, bool) { return 0, false }
func (fakeRunner) Done(int64) <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

var fuzzRoutes = []string{
	"GET /api/health", "GET /api/plans", "POST /api/plans", "GET /api/plans/{id}", "PUT /api/plans/{id}",
	"DELETE /api/plans/{id}", "POST /api/plans/{id}/runs", "GET /api/plans/{id}/trend", "GET /api/runs",
	"GET /api/runs/{id}", "PATCH /api/runs/{id}", "GET /api/runs/{id}/previous", "GET /api/runs/{id}/distribution",
	"GET /api/runs/{id}/report", "POST /api/runs/{id}/stop", "POST /api/runs/{id}/control", "DELETE /api/runs/{id}", "GET /api/runs/{id}/samples",
	"GET /api/compare", "GET /api/runs/{id}/agents",
}

// FuzzAPI sends fuzzed ids, query strings and bodies to every JSON handler through the real gin
// handler on a temporary SQLite database: no answer is a 5xx, nothing panics.
func FuzzAPI(f *testing.F) {
	st, err := store.Open(filepath.Join(f.TempDir(), "volley.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	ctx := context.Background()
	p, _ := plan.Parse(examples.Demo)
	spec, _ := plan.Marshal(p)
	sp, _ := st.CreatePlan(ctx, p.Name, spec)
	_, _ = st.CreateRun(ctx, sp.ID, sp.Name, spec, time.Now())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := api.New(st, runs.New(st, fakeRunner{}, log), hub.New(nil), fstest.MapFS{"index.html": {Data: []byte("x")}}, log)
	srv.SetCaps(plan.Caps{MaxVUs: 1000, MaxRate: 1000, MaxDuration: time.Hour, MaxRequests: 100, MemoryBudget: 1 << 30})
	h := srv.Handler()
	seeds := []struct {
		route     uint8
		id, query string
		body      []byte
	}{
		{2, "", "", examples.Demo}, {4, "1", "", examples.Demo}, {10, "1", "", []byte(`{"notes":"n","tags":["a","b"]}`)},
		{8, "", "status=finished&sort=rps&order=asc&limit=5&offset=1&from=2026-01-01T00:00:00Z", nil},
		{17, "", "ids=1,2&baseline=1", nil}, {16, "1", "points=10", nil}, {13, "1", "format=csv", nil},
		{7, "1", "limit=3", nil}, {6, "1", "", nil}, {3, "99999999999999999999", "", nil}, {2, "", "", []byte(strings.Repeat("[", 5000))},
	}
	for _, s := range seeds {
		f.Add(s.route, s.id, s.query, s.body)
	}
	f.Fuzz(func(t *testing.T, route uint8, id, query string, body []byte) {
		method, path, _ := strings.Cut(fuzzRoutes[int(route)%len(fuzzRoutes)], " ")
		path = strings.ReplaceAll(path, "{id}", id)
		req, err := http.NewRequest(method, "http://127.0.0.1"+path+"?"+query, bytes.NewReader(body))
		if err != nil {
			return // not a request a client can send
		}
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s?%s body %.200q: %d %.300s", method, path, query, body, w.Code, w.Body.String())
		}
	})
}
