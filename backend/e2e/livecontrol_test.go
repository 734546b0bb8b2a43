package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserLiveControlChangesVUs: while a constant-vus run goes, the run view's VUs field and
// Apply change its VUs (the server records the change), and the change is marked on the time
// charts and listed under them — live, and again once the run has ended (from its summary).
func TestBrowserLiveControlChangesVUs(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	target := okTarget(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	ctx := newBrowser(t, 90*time.Second)

	spec := map[string]any{"name": "live control", "requests": []any{map[string]any{"url": target}},
		"load": map[string]any{"executor": "constant-vus", "vus": 2, "duration": "40s"}}
	var p struct {
		ID int64 `json:"id"`
	}
	if code := apiDo(t, "POST", srv.base+"/api/plans", spec, &p); code != http.StatusCreated {
		t.Fatalf("create plan: %d", code)
	}
	var r runJSON
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv.base, p.ID), nil, &r); code != http.StatusCreated {
		t.Fatalf("start run: %d", code)
	}
	stopURL := fmt.Sprintf("%s/api/runs/%d/stop", srv.base, r.ID)
	t.Cleanup(func() { // a failed test leaves no run going (the answer is 409 once it has ended)
		if res, err := http.Post(stopURL, "application/json", nil); err == nil {
			res.Body.Close()
		}
	})

	openSPA(t, ctx, fmt.Sprintf("%s/#/runs/%d", srv.base, r.ID))
	waitJS(t, ctx, "the live control", exists(`[data-testid="live-control-value"]`), 15*time.Second)
	waitJS(t, ctx, "a second on the charts", `Number(document.querySelector('[data-testid="chart-tps"]')?.dataset.points ?? 0) >= 1`, 15*time.Second)
	setField(t, ctx, `[data-testid="live-control-value"]`, "5")
	click(t, ctx, `[data-testid="live-control-apply"]`)
	waitJS(t, ctx, "the change listed", visibleWithText(`[data-testid="run-event"]`), 10*time.Second)
	if got := evalString(t, ctx, `document.querySelector('[data-testid="run-events"]').textContent`); !strings.Contains(got, "VUs 2 → 5") {
		t.Errorf("events listed: %q, want the change VUs 2 → 5", got)
	}
	for _, chart := range []string{"chart-tps", "chart-latency", "chart-vus"} {
		waitJS(t, ctx, chart+" marking the change", fmt.Sprintf(`document.querySelector('[data-testid=%q]')?.dataset.events === "1"`, chart), 5*time.Second)
	}
	// the engine holds 5 VUs: the next seconds say so
	waitJS(t, ctx, "5 active VUs", `[...document.querySelectorAll('.tile')].some(el => /Active VUs\s*5$/.test(el.textContent.trim()))`, 10*time.Second)

	apiDo(t, "POST", stopURL, nil, nil)
	waitRunEnded(t, srv.base, r.ID, 20*time.Second)
	waitJS(t, ctx, "the summary", visibleWithText(`[data-testid="summary"]`), 20*time.Second)
	if n := evalString(t, ctx, `String(document.querySelectorAll('[data-testid="live-control"]').length)`); n != "0" {
		t.Errorf("live control still offered after the run: %s", n)
	}
	// a fresh load of the finished run marks the change from its summary
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	waitJS(t, ctx, "the finished run's charts marking the change", `document.querySelector('[data-testid="chart-tps"]')?.dataset.events === "1"`, 15*time.Second)
	if got := evalString(t, ctx, `document.querySelector('[data-testid="run-events"]').textContent`); !strings.Contains(got, "VUs 2 → 5 by local") {
		t.Errorf("finished run's events: %q", got)
	}
}
