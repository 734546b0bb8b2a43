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

// TestBrowserImportCurl pastes a curl command (as a browser's "Copy as cURL" writes it) into the
// Plans page's Import dialog, sees the plan in the editor unsaved, shortens its load, saves and
// runs it against the built-in demo target, and checks the run got the answers the imported
// request asks for (POST /status/201 → 201).
func TestBrowserImportCurl(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	demo := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), demo)
	ctx := newBrowser(t, 90*time.Second)

	var list struct {
		Total int `json:"total"`
	}
	apiDo(t, "GET", srv.base+"/api/plans", nil, &list)
	before := list.Total // the demo target's example plan
	openSPA(t, ctx, srv.base+"/#/plans")
	waitJS(t, ctx, "the Import button", exists(`[data-testid="import-plan"]`), 15*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="import-plan"]`))); err != nil {
		t.Fatalf("click import: %v", err)
	}
	waitJS(t, ctx, "the Import dialog", exists(`[data-testid="import-text"]`), 5*time.Second)
	curl := fmt.Sprintf("curl 'http://%s/status/201' \\\n  -H 'Accept: application/json' \\\n  -H 'Content-Type: application/json' \\\n  --data-raw $'{\"note\":\"it\\'s imported\"}'", demo)
	setField(t, ctx, `[data-testid="import-text"]`, curl)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="import-submit"]`))); err != nil {
		t.Fatalf("click import-submit: %v", err)
	}

	// Nothing skipped: the editor opens at once with the plan, unsaved.
	waitJS(t, ctx, "the editor with the imported request", `location.hash === "#/plans/new" && document.querySelector("#req-0-url")?.value === `+jsString("http://"+demo+"/status/201"), 15*time.Second)
	if m := evalString(t, ctx, `document.querySelector("#req-0-method")?.value ?? ""`); m != "POST" {
		t.Errorf("method %q, want POST", m)
	}
	screenshot(t, ctx, "import-editor.png")
	if apiDo(t, "GET", srv.base+"/api/plans", nil, &list); list.Total != before {
		t.Fatalf("%d plans stored before saving, %d before the import; it must open unsaved", list.Total, before)
	}

	setField(t, ctx, "#load-duration", "2s")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="save-and-run"]`))); err != nil {
		t.Fatalf("click save-and-run: %v", err)
	}
	waitJS(t, ctx, "the run view (#/runs/<id>)", `/^#\/runs\/\d+$/.test(location.hash)`, 15*time.Second)
	runID, _ := strconv.ParseInt(regexp.MustCompile(`\d+$`).FindString(evalString(t, ctx, `location.hash`)), 10, 64)
	waitJS(t, ctx, "[data-testid=summary]", visibleWithText(`[data-testid="summary"]`), 30*time.Second)
	var r runJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv.base, runID), nil, &r); code != http.StatusOK || r.Summary == nil {
		t.Fatalf("GET run %d: %d, summary %v", runID, code, r.Summary)
	}
	s := r.Summary
	if r.Status != "finished" || s.Requests == 0 || s.StatusCodes["201"] != s.Requests || s.Errors != 0 {
		t.Errorf("run %d: status %q, requests %d, errors %d, status codes %v; want every request a 201", runID, r.Status, s.Requests, s.Errors, s.StatusCodes)
	}
}
