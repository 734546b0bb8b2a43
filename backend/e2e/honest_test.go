package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// TestBrowserRunVerdictAndOutcomeFilter: the run view of a run against a dead port says it failed,
// in red, with the error kind — never "the generator kept up … these figures describe the
// target", nor "Throughput" as a success figure; a run with 20 % errors is amber with its error
// count; a clean run says "passed". Each run's plan link, after the live end, is its plan.
// History's Outcome filter (URL-backed) lists only the runs of that outcome.
func TestBrowserRunVerdictAndOutcomeFilter(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	dead := "http://" + testutil.ClosedPort(t) + "/" // nothing listens there
	var n atomic.Int64
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%5 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(flaky.Close)

	ctx := newBrowser(t, 90*time.Second)
	openSPA(t, ctx, srv.base+"/?lang=en#/runs")
	evalString(t, ctx, `localStorage.setItem("volley.lang", "en"), ""`)
	type result struct {
		run, plan int64
	}
	runs := map[string]result{}
	for _, c := range []struct{ outcome, target, class, word string }{
		{"failed", dead, "error", "✗ failed"},
		{"finished_with_errors", flaky.URL + "/", "warn", "⚠ with errors"},
		{"passed", okTarget(t), "ok", "✓ passed"},
	} {
		planID := createPlan(t, srv.base, nginxPlan("verdict "+c.outcome, c.target, map[string]any{"executor": "constant-vus", "vus": 1, "duration": "2s"}))
		var started runJSON
		if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv.base, planID), nil, &started); code != http.StatusCreated {
			t.Fatalf("%s: start: status %d", c.outcome, code)
		}
		runs[c.outcome] = result{started.ID, planID}
		goToHash(t, ctx, fmt.Sprintf("#/runs/%d", started.ID))
		// The run view sees the run end live, then shows its verdict.
		waitJS(t, ctx, c.outcome+" verdict", fmt.Sprintf(`document.querySelector('[data-testid="run-verdict"]')?.dataset.outcome === %s`, jsString(c.outcome)), 30*time.Second)
		verdict := evalString(t, ctx, `document.querySelector('[data-testid="run-verdict"]').innerText`)
		cls := evalString(t, ctx, `document.querySelector('[data-testid="run-verdict"]').className`)
		page := evalString(t, ctx, `document.querySelector('[data-testid="summary"]').innerText`)
		tile := evalString(t, ctx, `document.querySelector('[data-testid="summary-throughput"] .label').innerText`)
		t.Logf("%s: verdict %q; throughput tile %q", c.outcome, verdict, tile)
		if !strings.Contains(cls, c.class) || !strings.HasPrefix(verdict, c.word) {
			t.Errorf("%s: verdict %q (class %q), want %q in a %s banner", c.outcome, verdict, cls, c.word, c.class)
		}
		switch c.outcome {
		case "failed":
			if !strings.Contains(verdict, "connect_refused") {
				t.Errorf("failed: verdict %q does not name connect_refused", verdict)
			}
		case "finished_with_errors":
			if !strings.Contains(verdict, "requests failed") || !strings.Contains(verdict, "status_5xx") {
				t.Errorf("with errors: verdict %q does not count the failed requests and their kind", verdict)
			}
		}
		if c.outcome != "passed" && (strings.Contains(page, "describe the target") || strings.HasPrefix(tile, "Throughput")) {
			t.Errorf("%s: the summary still presents the figures as a success: tile %q, %q", c.outcome, tile, page)
		}
		if c.outcome == "passed" && !strings.Contains(page, "describe the target") {
			t.Errorf("passed: the generator note is missing: %q", page)
		}
		link := fmt.Sprintf(`h1 a[href="#/plans/%d"]`, planID)
		if evalString(t, ctx, fmt.Sprintf(`String(!!document.querySelector(%s))`, jsString(link))) != "true" {
			t.Errorf("%s: after the live end the plan link is %q, want #/plans/%d", c.outcome,
				evalString(t, ctx, `document.querySelector('h1 a')?.getAttribute("href") ?? ""`), planID)
		}
		screenshot(t, ctx, "verdict-"+c.outcome+".png")
	}

	// In Chinese, the failed run's verdict is in Chinese.
	evalString(t, ctx, `localStorage.setItem("volley.lang", "zh-CN"), ""`)
	openSPA(t, ctx, fmt.Sprintf("%s/?lang=zh-CN#/runs/%d", srv.base, runs["failed"].run))
	waitJS(t, ctx, "the Chinese verdict", `document.querySelector('[data-testid="run-verdict"]')?.innerText.startsWith("✗ 失败")`, 15*time.Second)
	if v := evalString(t, ctx, `document.querySelector('[data-testid="run-verdict"]').innerText`); !strings.Contains(v, "没有任何成功的响应") {
		t.Errorf("zh-CN verdict %q", v)
	}
	evalString(t, ctx, `localStorage.setItem("volley.lang", "en"), ""`)

	// History: the Outcome filter, from the URL and from its control.
	rowIDs := `[...document.querySelectorAll('[data-testid="run-row"]')].map((r) => r.dataset.runId).join(",")`
	openSPA(t, ctx, srv.base+"/?lang=en#/runs?outcome=failed")
	want := fmt.Sprint(runs["failed"].run)
	waitJS(t, ctx, "only the failed run", fmt.Sprintf(`%s === %s`, rowIDs, jsString(want)), 15*time.Second)
	if v := evalString(t, ctx, `document.querySelector("#filter-outcome").value`); v != "failed" {
		t.Errorf("outcome control shows %q, want failed", v)
	}
	setField(t, ctx, "#filter-outcome", "finished_with_errors,failed")
	want = fmt.Sprintf("%d,%d", runs["finished_with_errors"].run, runs["failed"].run)
	waitJS(t, ctx, "the runs that did not pass", fmt.Sprintf(`%s === %s && location.hash.includes("outcome=finished_with_errors%%2Cfailed")`, rowIDs, jsString(want)), 15*time.Second)
	setField(t, ctx, "#filter-outcome", "passed")
	waitJS(t, ctx, "the passed run", fmt.Sprintf(`%s === %s`, rowIDs, jsString(fmt.Sprint(runs["passed"].run))), 15*time.Second)
	screenshot(t, ctx, "history-outcome-filter.png")
}

// TestBrowserSendPanelAndURLHint: in the plan editor, Send against a target whose response header
// is over http.max_header (64 KiB) shows the status and the fields that fit, and says they were cut; a URL written
// as "{{base}}/" gets a hint that is itself a valid URL (never http://{{base}}/).
func TestBrowserSendPanelAndURLHint(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := range 400 {
			w.Header().Set(fmt.Sprintf("X-Pad-%03d", i), strings.Repeat("v", 200))
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(big.Close)
	planID := createPlan(t, srv.base, nginxPlan("send e2e", big.URL+"/", shortLoad))

	ctx := newBrowser(t, 60*time.Second)
	openSPA(t, ctx, fmt.Sprintf("%s/?lang=en#/plans/%d", srv.base, planID))
	evalString(t, ctx, `localStorage.setItem("volley.lang", "en"), ""`)
	waitJS(t, ctx, "the send button", exists(`[data-testid="send-0"]`), 15*time.Second)
	click(t, ctx, `[data-testid="send-0"]`)
	waitJS(t, ctx, "the send result", visibleWithText(`[data-testid="send-result-0"]`), 15*time.Second)
	res := evalString(t, ctx, `document.querySelector('[data-testid="send-result-0"]').innerText`)
	t.Logf("send result: %s", strings.Join(strings.Fields(res), " "))
	status := evalString(t, ctx, `document.querySelector('[data-testid="send-result-0"] .status')?.innerText ?? ""`)
	if status != "202" || !strings.Contains(res, "header_too_large") || !strings.Contains(res, "larger than 65536 bytes") {
		t.Errorf("send result: status %q, text %q", status, res)
	}
	if evalString(t, ctx, `String(!!document.querySelector('[data-testid="send-headers-cut-0"]')?.offsetParent)`) != "true" {
		t.Error("the note that the headers were cut is not visible")
	}
	screenshot(t, ctx, "send-huge-header.png")

	setField(t, ctx, "#req-0-url", "{{base}}/")
	click(t, ctx, `[data-testid="save-plan"]`)
	sel := `[data-field-error="requests[0].url"]`
	waitJS(t, ctx, "the URL's field error", visibleWithText(sel), 10*time.Second)
	hint := evalString(t, ctx, fmt.Sprintf(`document.querySelector(%s).innerText`, jsString(sel)))
	t.Logf("URL hint: %s", hint)
	if strings.Contains(hint, "http://{{base}}") || !strings.Contains(hint, "http://127.0.0.1:8080/") {
		t.Errorf("URL hint %q suggests a URL that is refused, or none", hint)
	}
}
