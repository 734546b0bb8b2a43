package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The run view's Target panel, live and after the run, and the server's rows in compare: a plan
// against the built-in demo target with two monitors — `volley monitor --process volley` (the
// server's own process, a real process monitor) and a custom monitor on a closed port (an
// unreachable monitor: gaps, and its error shown once).
func TestBrowserTargetPanelLiveAndInCompare(t *testing.T) {
	requireUI(t)
	db := filepath.Join(t.TempDir(), "volley.db")
	demo := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := startServer(t, db, demo)
	waitTCP(t, demo, nil, 10*time.Second)
	monAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	mon := startProc(t, "volley-monitor", volleyBin, "monitor", "--process", "volley", "--listen", monAddr)
	waitTCP(t, monAddr, mon, 10*time.Second)
	ctx := newBrowser(t, 150*time.Second)

	spec := map[string]any{
		"name":     "target panel",
		"requests": []map[string]any{{"method": "GET", "url": "http://" + demo + "/"}},
		"load":     map[string]any{"executor": "constant-vus", "vus": 2, "duration": "6s"},
		"monitors": []map[string]any{
			// the scrape walks /proc, which a busy CI machine can slow past the default 800 ms
			{"name": "srv", "type": "process", "url": "http://" + monAddr + "/metrics", "interval": "2s", "timeout": "2s"},
			{"name": "dead", "type": "custom", "url": fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t)), "metric": "up"},
		},
	}
	planID := createPlan(t, srv.base, spec)
	start := func() int64 {
		var r runJSON
		if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv.base, planID), nil, &r); code != http.StatusCreated {
			t.Fatalf("start run: status %d", code)
		}
		return r.ID
	}
	first := start()
	openSPA(t, ctx, fmt.Sprintf("%s/#/runs/%d", srv.base, first))
	// Live: the process monitor's CPU and memory charts fill second by second.
	waitJS(t, ctx, "the Target panel", exists(`[data-testid="target-panel"]`), 15*time.Second)
	waitJS(t, ctx, "live target seconds", `Number(document.querySelector('[data-testid="target-chart-srv-cpu"]')?.dataset.points ?? 0) >= 2`, 15*time.Second)
	if !strings.Contains(evalString(t, ctx, `String(!!document.querySelector('[data-testid="chart-tps"]'))`), "true") {
		t.Error("the run's own charts are gone")
	}
	waitJS(t, ctx, "the memory chart", exists(`[data-testid="target-chart-srv-memory"]`), 5*time.Second)
	// The dead monitor: its error once, with its name.
	waitJS(t, ctx, "the dead monitor's error", visibleWithText(`[data-testid="target-error"]`), 10*time.Second)
	errs := evalString(t, ctx, `[...document.querySelectorAll('[data-testid="target-error"]')].map(e => e.textContent.trim()).join(' | ')`)
	if strings.Count(errs, "dead") != 1 || strings.Contains(errs, "srv") {
		t.Errorf("monitor errors shown: %q, want the dead monitor's once", errs)
	}
	screenshot(t, ctx, "target-panel-live")

	waitRunEnded(t, srv.base, first, 30*time.Second)
	// After the run: the summary table has the process monitor's series, avg and max.
	waitJS(t, ctx, "the target summary", `document.querySelectorAll('[data-testid="target-row"]').length >= 2`, 20*time.Second)
	rows := evalString(t, ctx, `[...document.querySelectorAll('[data-testid="target-row"]')].map(r => r.dataset.id).join(',')`)
	if !strings.Contains(rows, "srv/cpu_percent/volley") || !strings.Contains(rows, "srv/rss_bytes/volley") {
		t.Errorf("target rows %q, want srv's CPU and RSS of volley", rows)
	}
	if got := evalString(t, ctx, `String(document.querySelectorAll('[data-testid="target-error"]').length)`); got != "1" {
		t.Errorf("%s monitor errors after the run, want 1", got)
	}

	// Compare: a second run; the server's CPU % row shown without a verdict, its CPU per request
	// and memory with a verdict badge like the other rows — or, when the monitor missed too many of
	// these short runs' seconds, "none" with the reason, never a bare "no change".
	second := start()
	waitRunEnded(t, srv.base, second, 30*time.Second)
	goToHash(t, ctx, fmt.Sprintf("#/compare?ids=%d,%d&baseline=%d", first, second, first))
	row := `[data-testid="compare-row"][data-metric="server_cpu_percent"]`
	waitJS(t, ctx, "the server CPU row", exists(row), 20*time.Second)
	for _, c := range []struct {
		metric  string
		follows bool
	}{{"server_cpu_percent", true}, {"server_cpu_us_per_request", false}, {"server_memory_bytes", false}} {
		sel := fmt.Sprintf(`[data-testid="compare-row"][data-metric=%q]`, c.metric)
		want := map[bool]string{true: "no verdict", false: "verdict"}[c.follows]
		if got := evalString(t, ctx, fmt.Sprintf(`document.querySelector(%q)?.querySelector('[data-testid="follows-load"]') ? 'no verdict' : 'verdict'`, sel)); got != want {
			t.Errorf("%s: %s, want %s", c.metric, got, want)
		}
		if got := evalString(t, ctx, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ''`, sel)); !strings.Contains(got, "server") {
			t.Errorf("%s row: %q", c.metric, got)
		}
		if c.follows {
			continue
		}
		// the second run's cell: a verdict badge; "none" only with the reason shown
		cell := evalString(t, ctx, fmt.Sprintf(`(() => { const c = document.querySelector(%q)?.querySelector('[data-run-id="%d"]');
			if (!c) return 'no cell';
			const v = c.dataset.verdict;
			if (!c.querySelector('.verdict.v-' + v)) return 'no badge for ' + v;
			if (v === 'none' && !c.querySelector('[data-testid="no-data"]')) return 'none without a reason';
			return 'ok ' + v; })()`, sel, second))
		if !strings.HasPrefix(cell, "ok ") {
			t.Errorf("%s, run %d: %s", c.metric, second, cell)
		}
		t.Logf("%s: %s", c.metric, cell)
	}
	screenshot(t, ctx, "target-compare")
}
