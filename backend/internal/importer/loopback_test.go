package importer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// impReceived is one request as the loopback target saw it.
type impReceived struct {
	Method, Path, Query, Body string
	Header                    http.Header
}

// impRun runs an imported plan once (one VU, one iteration) with every host of its
// requests resolved to a loopback target (http.hosts), and returns what the target received.
// The target answers each path with answers[path], else {"token":"t-1","id":7}.
func impRun(t *testing.T, p map[string]any, answers ...map[string]string) []impReceived {
	t.Helper()
	var mu sync.Mutex
	var got []impReceived
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, impReceived{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Clone()})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		body := `{"token":"t-1","id":7}`
		if len(answers) > 0 && answers[0][r.URL.Path] != "" {
			body = answers[0][r.URL.Path]
		}
		_, _ = w.Write([]byte(body))
	})
	addr := tg.Listener.Addr().String()
	hosts := map[string]any{}
	for _, r := range p["requests"].([]any) {
		u, err := url.Parse(r.(map[string]any)["url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		hosts[u.Hostname()] = addr
	}
	h, _ := p["http"].(map[string]any)
	if h == nil {
		h = map[string]any{}
	}
	h["hosts"] = hosts
	h["timeout"] = "2s"
	p["http"] = h
	p["load"] = map[string]any{"executor": "per-vu-iterations", "vus": 1, "iterations": 1, "max_duration": "10s"}
	delete(p, "think_time")
	for _, r := range p["requests"].([]any) {
		delete(r.(map[string]any), "think_time")
	}
	impRunPlan(t, Result{Plan: p})
	mu.Lock()
	defer mu.Unlock()
	return got
}

// impRunPlan runs an imported plan, proving it validates, within 20 s, and returns its summary.
func impRunPlan(t *testing.T, r Result) *metrics.Summary {
	t.Helper()
	c, err := plan.Compile(parsePlan(t, r))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sum, err := e.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// impFixture imports one fixture file.
func impFixture(t *testing.T, format, path string, o Options) Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(format, data, o)
	if err != nil {
		t.Fatal(err)
	}
	// A copy, so a test's changes to the plan stay its own.
	var p map[string]any
	if err := json.Unmarshal(impPlanJSON(t, res.Plan), &p); err != nil {
		t.Fatal(err)
	}
	res.Plan = p
	return res
}
