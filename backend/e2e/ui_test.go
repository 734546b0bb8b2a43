package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserCreatePlanRunWatchHistory drives the whole path a user takes: describe a test in the
// plan form, save and run it against a real nginx, watch the live charts, read the summary, find the
// run in the history; then checks Volley's request count against nginx's access log.
func TestBrowserCreatePlanRunWatchHistory(t *testing.T) {
	requireUI(t)
	requireTool(t, nginxPath)
	requireTool(t, chromiumPath)
	ng := startNginx(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	ctx := newBrowser(t, 80*time.Second)

	// 1. The plan form.
	openSPA(t, ctx, srv.base+"/#/plans/new")
	waitJS(t, ctx, "the plan form (#plan-name)", exists("#plan-name"), 15*time.Second)
	setField(t, ctx, "#plan-name", "e2e nginx static page")
	setField(t, ctx, "#req-0-method", "GET")
	setField(t, ctx, "#req-0-url", ng.url)
	setField(t, ctx, "#load-executor", "constant-vus")
	waitJS(t, ctx, "#load-duration (shown for constant-vus)", exists("#load-duration"), 5*time.Second)
	setField(t, ctx, "#load-vus", "50")
	setField(t, ctx, "#load-duration", "10s")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="save-and-run"]`))); err != nil {
		t.Fatalf("click save-and-run: %v", err)
	}

	// 2. The run view, live.
	waitJS(t, ctx, "the run view (#/runs/<id>)", `/^#\/runs\/\d+$/.test(location.hash)`, 15*time.Second)
	hash := evalString(t, ctx, `location.hash`)
	runID, _ := strconv.ParseInt(regexp.MustCompile(`\d+$`).FindString(hash), 10, 64)
	t.Logf("run view %s (run %d)", hash, runID)
	waitJS(t, ctx, "[data-testid=chart-tps] data-points >= 5",
		`Number(document.querySelector('[data-testid="chart-tps"]')?.getAttribute("data-points") ?? 0) >= 5`, 20*time.Second)
	var r runJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv.base, runID), nil, &r); code != http.StatusOK || r.Status != "running" {
		t.Fatalf("run %d should still be running for the live screenshot: status %d, %q", runID, code, r.Status)
	}
	// Let the next animation frame paint the latest sample before the picture.
	time.Sleep(300 * time.Millisecond)
	screenshot(t, ctx, "run-live.png")

	// 3. The summary.
	waitJS(t, ctx, "[data-testid=summary]", visibleWithText(`[data-testid="summary"]`), 30*time.Second)
	uiRequests := digits(t, "summary-requests", evalString(t, ctx, `document.querySelector('[data-testid="summary-requests"]')?.textContent ?? ""`))
	uiErrors := digits(t, "summary-errors", evalString(t, ctx, `document.querySelector('[data-testid="summary-errors"]')?.textContent ?? ""`))
	if uiRequests <= 0 {
		t.Errorf("summary-requests = %d, want > 0", uiRequests)
	}
	if uiErrors != 0 {
		t.Errorf("summary-errors = %d, want 0", uiErrors)
	}
	screenshot(t, ctx, "run-summary.png")

	// 4. The history.
	goToHash(t, ctx, "#/runs")
	row := fmt.Sprintf(`[data-testid="run-row"][data-run-id="%d"]`, runID)
	waitJS(t, ctx, row+" in the history", visibleWithText(row), 15*time.Second)
	screenshot(t, ctx, "history.png")

	// 5. Volley against nginx.
	var fin runJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv.base, runID), nil, &fin); code != http.StatusOK {
		t.Fatalf("GET run %d: status %d", runID, code)
	}
	if fin.Status != "finished" {
		t.Errorf("run status %q (error %q), want finished", fin.Status, fin.Error)
	}
	if fin.EndedAt == nil {
		t.Error("ended_at is null for an ended run")
	}
	s := fin.Summary
	if s == nil {
		t.Fatal("GET /api/runs/:id has no summary after the run ended")
	}
	logged := int64(ng.loggedRequests(t, 500*time.Millisecond, 10*time.Second))
	t.Logf("volley: requests=%d successes=%d errors=%d interrupted=%d duration=%.2fs rps=%.1f p50=%.3fms p95=%.3fms p99=%.3fms status=%v",
		s.Requests, s.Successes, s.Errors, s.Interrupted, s.DurationS, s.RPS, s.Latency.P50, s.Latency.P95, s.Latency.P99, s.StatusCodes)
	t.Logf("nginx access log: %d lines (volley requests %d + interrupted %d = %d)", logged, s.Requests, s.Interrupted, s.Requests+s.Interrupted)
	if uiRequests != s.Requests || uiErrors != s.Errors {
		t.Errorf("UI summary (requests %d, errors %d) differs from the API's (requests %d, errors %d)", uiRequests, uiErrors, s.Requests, s.Errors)
	}
	if s.Requests != s.Successes+s.Errors {
		t.Errorf("requests %d != successes %d + errors %d", s.Requests, s.Successes, s.Errors)
	}
	if s.Errors != 0 || s.StatusCodes["200"] != s.Requests {
		t.Errorf("want every request a 200 without error: errors %d, error kinds %v, status codes %v", s.Errors, s.ErrorKinds, s.StatusCodes)
	}
	if logged < s.Requests || logged > s.Requests+s.Interrupted {
		t.Errorf("nginx logged %d requests; volley counted %d (+%d interrupted): want requests <= logged <= requests+interrupted",
			logged, s.Requests, s.Interrupted)
	}
	if n := len(getSamples(t, srv.base, runID)); n < 9 {
		t.Errorf("GET /api/runs/%d/samples: %d items, want >= 9 for a 10s run", runID, n)
	} else {
		t.Logf("samples: %d", n)
	}
}

// TestAPIValidationFromBrowser submits an invalid plan and expects the server's field errors next to
// the fields they name.
func TestAPIValidationFromBrowser(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	ctx := newBrowser(t, 40*time.Second)

	openSPA(t, ctx, srv.base+"/#/plans/new")
	waitJS(t, ctx, "the plan form (#plan-name)", exists("#plan-name"), 15*time.Second)
	setField(t, ctx, "#plan-name", "invalid on purpose")
	setField(t, ctx, "#req-0-url", "ftp://x")
	setField(t, ctx, "#load-vus", "0")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="save-plan"]`))); err != nil {
		t.Fatalf("click save-plan: %v", err)
	}
	for _, path := range []string{"load.vus", "requests[0].url"} {
		sel := fmt.Sprintf(`[data-field-error=%s]`, jsString(path))
		waitJS(t, ctx, "a visible "+sel+" with text", visibleWithText(sel), 10*time.Second)
		t.Logf("%s: %q", path, evalString(t, ctx, fmt.Sprintf(`document.querySelector(%s).textContent.trim()`, jsString(sel))))
		// The message belongs next to its field (inline), not only in a list at the top.
		inline := fmt.Sprintf(`.field %s`, sel)
		waitJS(t, ctx, "an inline "+inline, visibleWithText(inline), 2*time.Second)
	}
	if hash := evalString(t, ctx, `location.hash`); hash != "#/plans/new" {
		t.Errorf("after a refused save the page moved to %s", hash)
	}
	var plans struct {
		Total int `json:"total"`
	}
	if apiDo(t, "GET", srv.base+"/api/plans", nil, &plans); plans.Total != 0 {
		t.Errorf("an invalid plan was stored: %d plans", plans.Total)
	}
}
