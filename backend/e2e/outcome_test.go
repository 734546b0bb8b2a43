package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// TestDeadTargetRunFailsInTheBrowser runs a plan against a loopback port where nothing listens:
// the run must end with outcome "failed", its error naming the dominant error kind, shown in red
// with that message in the run view and in History (in English and in Chinese), with p95 "—".
func TestDeadTargetRunFailsInTheBrowser(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	dead := "http://" + testutil.ClosedPort(t) + "/" // nothing listens there

	planID := createPlan(t, srv.base, nginxPlan("dead target e2e", dead, map[string]any{"executor": "constant-vus", "vus": 2, "duration": "3s"}))
	var started runJSON
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv.base, planID), nil, &started); code != 201 {
		t.Fatalf("start: status %d", code)
	}
	ctx := newBrowser(t, 60*time.Second)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.base+"/")); err != nil {
		t.Fatal(err)
	}
	evalString(t, ctx, `localStorage.setItem("volley.lang", "en"), ""`)
	openSPA(t, ctx, fmt.Sprintf("%s/#/runs/%d", srv.base, started.ID))
	// The run view watches the run end live: its badge turns to the failed outcome.
	waitJS(t, ctx, "the run badge says failed", `document.querySelector('[data-testid="run-status"]')?.dataset.outcome === "failed"`, 30*time.Second)

	var run struct {
		runJSON
		Outcome string  `json:"outcome"`
		P95Ms   float64 `json:"p95_ms"`
	}
	apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv.base, started.ID), nil, &run)
	t.Logf("run %d: status %s, outcome %s, %d requests, error %q", run.ID, run.Status, run.Outcome, run.Requests, run.Error)
	if run.Status != "finished" || run.Outcome != "failed" || run.Requests == 0 ||
		!strings.HasPrefix(run.Error, "no successful response: ") || !strings.Contains(run.Error, " connect_refused (of ") {
		t.Fatalf("API: status %q outcome %q requests %d error %q", run.Status, run.Outcome, run.Requests, run.Error)
	}

	type badge struct {
		Text  string `json:"text"`
		Color string `json:"color"`
		Title string `json:"title"`
	}
	readBadge := func(sel string) badge {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.Evaluate[badge](fmt.Sprintf(`(() => { const b = document.querySelector(%s);
			return b ? {text: b.innerText, color: getComputedStyle(b).color, title: b.title} : {text: "", color: "", title: ""}; })()`, jsString(sel))))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return b
	}
	const red = "rgb(185, 28, 28)" // --bad, #b91c1c
	b := readBadge(`[data-testid="run-status"]`)
	if b.Text != "finished · ✗ failed" || b.Color != red || !strings.Contains(b.Title, run.Error) {
		t.Errorf("run view badge: %+v, want \"finished · ✗ failed\" in %s with the error in its title", b, red)
	}
	banner := evalString(t, ctx, `document.querySelector('[data-testid="run-error"]')?.innerText ?? ""`)
	if !strings.Contains(banner, run.Error) {
		t.Errorf("run view error banner %q lacks %q", banner, run.Error)
	}
	screenshot(t, ctx, "outcome-run.png")

	// History, in English then in Chinese.
	for _, lang := range []struct{ code, word string }{{"en", "✗ failed"}, {"zh-CN", "✗ 失败"}} {
		evalString(t, ctx, fmt.Sprintf(`localStorage.setItem("volley.lang", %s), ""`, jsString(lang.code)))
		openSPA(t, ctx, srv.base+"/?lang="+lang.code+"#/runs")
		row := fmt.Sprintf(`[data-testid="run-row"][data-run-id="%d"]`, run.ID)
		waitJS(t, ctx, "the run's row in History", fmt.Sprintf(`!!document.querySelector(%s)`, jsString(row+` [data-outcome="failed"]`)), 20*time.Second)
		b := readBadge(row + ` [data-outcome]`)
		if !strings.HasSuffix(b.Text, lang.word) || b.Color != red {
			t.Errorf("%s: History badge %+v, want …%s in %s", lang.code, b, lang.word, red)
		}
		rowText := evalString(t, ctx, fmt.Sprintf(`document.querySelector(%s).innerText`, jsString(row)))
		if !strings.Contains(rowText, run.Error) || !strings.Contains(rowText, "—") {
			t.Errorf("%s: History row %q lacks the error %q or p95 —", lang.code, rowText, run.Error)
		}
		t.Logf("%s: History row: %s", lang.code, strings.Join(strings.Fields(rowText), " "))
		screenshot(t, ctx, "outcome-history-"+lang.code+".png")
	}
}
