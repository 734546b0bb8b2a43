package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser tests of issue 12's bugs (item 6): each failed before its fix.

// okTarget is a loopback HTTP server answering 200 "ok" to every request.
func okTarget(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(ts.Close)
	return ts.URL + "/"
}

// shortLoad is one VU for one second: a run that ends quickly.
var shortLoad = map[string]any{"executor": "constant-vus", "vus": 1, "duration": "1s"}

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// recordNativeDialogs replaces window.confirm/alert so a native dialog is counted (and refused).
const recordNativeDialogs = `(() => { window.__native = 0; window.confirm = () => { window.__native++; return false; }; window.alert = () => { window.__native++; }; return true; })()`

func runIDOfHash(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	hash := evalString(t, ctx, `location.hash`)
	m := regexp.MustCompile(`^#/runs/(\d+)$`).FindStringSubmatch(hash)
	if m == nil {
		t.Fatalf("hash %q is not a run view", hash)
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatalf("hash %q is not a run view", hash)
	}
	return id
}

// TestBrowserRunAgainAfterSaveAndRunOfNewPlan: "Save & run" on a new plan, then the run view's
// plan link names the plan and "Run again" starts a second run of it.
func TestBrowserRunAgainAfterSaveAndRunOfNewPlan(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	target := okTarget(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	ctx := newBrowser(t, 60*time.Second)

	openSPA(t, ctx, srv.base+"/#/plans/new")
	waitJS(t, ctx, "the plan form", exists("#plan-name"), 15*time.Second)
	setField(t, ctx, "#plan-name", "run again")
	setField(t, ctx, "#req-0-url", target)
	setField(t, ctx, "#load-executor", "constant-vus")
	waitJS(t, ctx, "#load-duration", exists("#load-duration"), 5*time.Second)
	setField(t, ctx, "#load-vus", "1")
	setField(t, ctx, "#load-duration", "1s")
	click(t, ctx, `[data-testid="save-and-run"]`)
	waitJS(t, ctx, "the run view", `/^#\/runs\/\d+$/.test(location.hash)`, 15*time.Second)
	first := runIDOfHash(t, ctx)
	var r runJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv.base, first), nil, &r); code != http.StatusOK || r.PlanID <= 0 {
		t.Fatalf("GET run %d: status %d, plan_id %d", first, code, r.PlanID)
	}
	waitRunEnded(t, srv.base, first, 20*time.Second)
	waitJS(t, ctx, "the summary", visibleWithText(`[data-testid="summary"]`), 20*time.Second)
	link := fmt.Sprintf(`a[href="#/plans/%d"]`, r.PlanID)
	waitJS(t, ctx, "the plan link "+link, exists(link), 5*time.Second)
	if n := evalString(t, ctx, `String(document.querySelectorAll('a[href="#/plans/0"]').length)`); n != "0" {
		t.Errorf("%s links point to #/plans/0", n)
	}
	click(t, ctx, `[data-testid="run-again"]`)
	waitJS(t, ctx, "a second run's view", fmt.Sprintf(`/^#\/runs\/\d+$/.test(location.hash) && location.hash !== "#/runs/%d"`, first), 10*time.Second)
	second := runIDOfHash(t, ctx)
	var r2 runJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv.base, second), nil, &r2); code != http.StatusOK || r2.PlanID != r.PlanID {
		t.Fatalf("second run %d: status %d, plan_id %d, want %d", second, code, r2.PlanID, r.PlanID)
	}
	waitRunEnded(t, srv.base, second, 20*time.Second)
}

// TestBrowserUnsavedPlanFormIsKept: a language switch keeps an unsaved form; leaving it asks
// first (the app's dialog for navigation, beforeunload for closing the tab); a saved form leaves
// without asking.
func TestBrowserUnsavedPlanFormIsKept(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	ctx := newBrowser(t, 60*time.Second)

	openSPA(t, ctx, srv.base+"/#/plans/new")
	waitJS(t, ctx, "the plan form", exists("#plan-name"), 15*time.Second)
	evalString(t, ctx, `String(`+recordNativeDialogs+`)`)
	beforeUnloadBlocked := `(() => { const e = new Event("beforeunload", {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented; })()`
	if evalString(t, ctx, `String(`+beforeUnloadBlocked+`)`) != "false" {
		t.Error("an untouched form asks before closing the tab")
	}
	setField(t, ctx, "#plan-name", "keep me")
	setField(t, ctx, "#req-0-url", "http://127.0.0.1:9/x")

	setField(t, ctx, `[data-testid="lang-switch"]`, "zh-CN")
	waitJS(t, ctx, "the Chinese UI", `document.documentElement.lang === "zh-CN" || document.querySelector('[data-testid="save-plan"]')?.textContent.includes("保存")`, 5*time.Second)
	if v := evalString(t, ctx, `document.querySelector("#plan-name")?.value ?? ""`); v != "keep me" {
		t.Errorf("after switching language the plan name is %q, want %q", v, "keep me")
	}
	if v := evalString(t, ctx, `document.querySelector("#req-0-url")?.value ?? ""`); v != "http://127.0.0.1:9/x" {
		t.Errorf("after switching language the URL is %q", v)
	}
	setField(t, ctx, `[data-testid="lang-switch"]`, "en")

	if evalString(t, ctx, `String(`+beforeUnloadBlocked+`)`) != "true" {
		t.Error("closing the tab with an unsaved form does not ask (beforeunload not prevented)")
	}

	// Leaving through the nav: the app's dialog; Cancel stays with the form as it was.
	click(t, ctx, `nav a[href="#/runs"]`)
	waitJS(t, ctx, "the confirm dialog", visibleWithText(`[data-testid="confirm-dialog"]`), 5*time.Second)
	click(t, ctx, `[data-testid="confirm-cancel"]`)
	waitJS(t, ctx, "the dialog closed", `!document.querySelector('[data-testid="confirm-dialog"]')`, 5*time.Second)
	if h := evalString(t, ctx, `location.hash`); h != "#/plans/new" {
		t.Errorf("after Cancel the hash is %s, want #/plans/new", h)
	}
	if v := evalString(t, ctx, `document.querySelector("#plan-name")?.value ?? ""`); v != "keep me" {
		t.Errorf("after Cancel the plan name is %q", v)
	}
	// A hash change (typed URL, back button) asks too; Leave goes.
	goToHash(t, ctx, "#/compare")
	waitJS(t, ctx, "the confirm dialog on a hash change", visibleWithText(`[data-testid="confirm-dialog"]`), 5*time.Second)
	click(t, ctx, `[data-testid="confirm-ok"]`)
	waitJS(t, ctx, "the compare page", `location.hash === "#/compare" && !document.querySelector("#plan-name")`, 5*time.Second)
	if evalString(t, ctx, `String(`+beforeUnloadBlocked+`)`) != "false" {
		t.Error("after leaving the form, closing the tab still asks")
	}

	// A saved form leaves without asking.
	goToHash(t, ctx, "#/plans/new")
	waitJS(t, ctx, "the plan form", exists("#plan-name"), 5*time.Second)
	setField(t, ctx, "#plan-name", "saved")
	setField(t, ctx, "#req-0-url", "http://127.0.0.1:9/x")
	click(t, ctx, `[data-testid="save-plan"]`)
	waitJS(t, ctx, "the saved plan", `/^#\/plans\/\d+$/.test(location.hash) && document.querySelector("#plan-name")?.value === "saved"`, 10*time.Second)
	click(t, ctx, `nav a[href="#/runs"]`)
	waitJS(t, ctx, "the history without a question", `location.hash === "#/runs" && !document.querySelector('[data-testid="confirm-dialog"]')`, 5*time.Second)
	if n := evalString(t, ctx, `String(window.__native)`); n != "0" {
		t.Errorf("%s native dialogs were shown", n)
	}
}

// TestBrowserHistoryTagFilterAsYouType: typing a tag filters the history without Enter.
func TestBrowserHistoryTagFilterAsYouType(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	target := okTarget(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	plan := createPlan(t, srv.base, nginxPlan("tags", target, shortLoad))
	a := runToEnd(t, srv.base, plan, 20*time.Second)
	b := runToEnd(t, srv.base, plan, 20*time.Second)
	if code := apiDo(t, "PATCH", fmt.Sprintf("%s/api/runs/%d", srv.base, b.ID), map[string]any{"tags": []string{"canary"}}, nil); code != http.StatusOK {
		t.Fatalf("PATCH tags: %d", code)
	}
	ctx := newBrowser(t, 40*time.Second)
	openSPA(t, ctx, srv.base+"/#/runs")
	rowA := fmt.Sprintf(`[data-testid="run-row"][data-run-id="%d"]`, a.ID)
	rowB := fmt.Sprintf(`[data-testid="run-row"][data-run-id="%d"]`, b.ID)
	waitJS(t, ctx, "both runs listed", exists(rowA)+" && "+exists(rowB), 15*time.Second)
	// Typing only: input events, no Enter, no change, the field keeps the focus.
	res := evalString(t, ctx, `(() => { const el = document.querySelector("#filter-tag"); if (!el) return "missing"; el.focus();
		el.value = "canary"; el.dispatchEvent(new Event("input", {bubbles: true})); return "ok"; })()`)
	if res != "ok" {
		t.Fatalf("#filter-tag: %s", res)
	}
	waitJS(t, ctx, "only the tagged run listed", "!("+exists(rowA)+") && "+exists(rowB)+` && location.hash.includes("tag=canary")`, 5*time.Second)
	if f := evalString(t, ctx, `document.activeElement?.id ?? ""`); f != "filter-tag" {
		t.Errorf("the tag field lost the focus while typing (active: %q)", f)
	}
}

// TestBrowserDeletePlanNamesItsRuns: deleting a plan with runs asks in the app's dialog, which
// names how many runs go with it and deletes only once that is ticked; no native confirm.
func TestBrowserDeletePlanNamesItsRuns(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	target := okTarget(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	plan := createPlan(t, srv.base, nginxPlan("doomed", target, shortLoad))
	runToEnd(t, srv.base, plan, 20*time.Second)
	runToEnd(t, srv.base, plan, 20*time.Second)
	ctx := newBrowser(t, 40*time.Second)
	openSPA(t, ctx, fmt.Sprintf("%s/#/plans/%d", srv.base, plan))
	waitJS(t, ctx, "the loaded plan", `document.querySelector("#plan-name")?.value === "doomed"`, 15*time.Second)
	evalString(t, ctx, `String(`+recordNativeDialogs+`)`)
	click(t, ctx, `[data-testid="delete-plan"]`)
	waitJS(t, ctx, "the confirm dialog", visibleWithText(`[data-testid="confirm-dialog"]`), 5*time.Second)
	if n := evalString(t, ctx, `String(window.__native)`); n != "0" {
		t.Fatalf("a native dialog was shown (%s)", n)
	}
	text := evalString(t, ctx, `document.querySelector('[data-testid="confirm-dialog"]').innerText`)
	if !regexp.MustCompile(`2 runs`).MatchString(text) {
		t.Errorf("the dialog does not say that 2 runs go with the plan: %q", text)
	}
	if evalString(t, ctx, `String(document.querySelector('[data-testid="confirm-ok"]').disabled)`) != "true" {
		t.Error("Delete is enabled before the runs' deletion is ticked")
	}
	click(t, ctx, `[data-testid="confirm-ack"]`)
	waitJS(t, ctx, "Delete enabled", `!document.querySelector('[data-testid="confirm-ok"]').disabled`, 2*time.Second)
	click(t, ctx, `[data-testid="confirm-ok"]`)
	waitJS(t, ctx, "the plans page", `location.hash === "#/plans"`, 10*time.Second)
	var runs struct {
		Total int `json:"total"`
	}
	if code := apiDo(t, "GET", srv.base+"/api/runs", nil, &runs); code != http.StatusOK || runs.Total != 0 {
		t.Errorf("after deleting the plan: GET /api/runs status %d, total %d, want 0", code, runs.Total)
	}
	if resp, _ := httpGet(t, fmt.Sprintf("%s/api/plans/%d", srv.base, plan)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET the deleted plan: %d, want 404", resp.StatusCode)
	}
}
