package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The secrets in the browser: a value set on the Secrets page and an Authorization header shown
// masked in the plan editor, saved back untouched; the run sends the real values to a loopback
// target, and neither canary ever appears in the page, an API answer or the server's log.
func TestBrowserSecrets(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	mk := func(tag string) string {
		b := make([]byte, 10)
		_, _ = rand.Read(b)
		return tag + hex.EncodeToString(b)
	}
	cStore, cAuth := mk("STORE"), mk("AUTH")
	var good, bad atomic.Int64
	tg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+cAuth && r.Header.Get("X-Token") == cStore && r.URL.Path == "/t" {
			good.Add(1)
		} else {
			bad.Add(1)
		}
	}))
	defer tg.Close()
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	ctx := newBrowser(t, 90*time.Second)
	noCanary := func(where, s string) {
		t.Helper()
		for _, c := range []string{cStore, cAuth} {
			if strings.Contains(s, c) {
				t.Errorf("%s: the canary %s… is there", where, c[:5])
			}
		}
	}
	html := func() string {
		return evalString(t, ctx, `document.documentElement.outerHTML + [...document.querySelectorAll("input")].map(i => i.value).join("|")`)
	}

	// 1. The Secrets page: set a value; the page never shows it.
	openSPA(t, ctx, srv.base+"/#/secrets")
	waitJS(t, ctx, "the secret form", exists("#secret-name"), 15*time.Second)
	setField(t, ctx, "#secret-name", "TOKEN")
	setField(t, ctx, "#secret-value", cStore)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="secret-save"]`))); err != nil {
		t.Fatalf("click save: %v", err)
	}
	waitJS(t, ctx, "the TOKEN row", exists(`[data-testid="secret-TOKEN"]`), 15*time.Second)
	noCanary("secrets page", html())
	screenshot(t, ctx, "secrets-page.png")

	// 2. A plan with a secret header, opened in the editor and saved untouched.
	plan := map[string]any{"name": "secrets e2e", "requests": []any{map[string]any{
		"url": tg.URL + "/t?api_key=K", "headers": map[string]string{"Authorization": "Bearer " + cAuth, "X-Token": "{{secret.TOKEN}}"}}},
		"load": map[string]any{"executor": "per-vu-iterations", "vus": 2, "iterations": 5}}
	var created struct{ ID int64 }
	if code := apiDo(t, "POST", srv.base+"/api/plans", plan, &created); code != http.StatusCreated {
		t.Fatalf("create plan: %d", code)
	}
	goToHash(t, ctx, fmt.Sprintf("#/plans/%d", created.ID))
	waitJS(t, ctx, "the editor with the plan", `document.querySelector("#plan-name")?.value === "secrets e2e"`, 15*time.Second)
	if got := evalString(t, ctx, `(() => { const i = document.querySelector("#req-0-header-0-value"); return i.type + " " + i.value })()`); got != "password ********" {
		t.Errorf("the Authorization input is %q, want a password field holding ********", got)
	}
	noCanary("plan editor", html())
	screenshot(t, ctx, "secrets-editor.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="save-plan"]`))); err != nil {
		t.Fatalf("click save: %v", err)
	}
	waitJS(t, ctx, "saved", `[...document.querySelectorAll("[role=status]")].some(e => e.textContent.includes("Saved"))`, 15*time.Second)

	// 3. The run sends the real values.
	var run struct{ ID int64 }
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", srv.base, created.ID), nil, &run); code != http.StatusCreated {
		t.Fatalf("start: %d", code)
	}
	waitRunEnded(t, srv.base, run.ID, 30*time.Second)
	if good.Load() != 10 || bad.Load() != 0 {
		t.Errorf("the target got %d requests with the real values and %d without, want 10 and 0", good.Load(), bad.Load())
	}
	goToHash(t, ctx, fmt.Sprintf("#/runs/%d", run.ID))
	waitJS(t, ctx, "the summary", visibleWithText(`[data-testid="summary"]`), 30*time.Second)
	noCanary("run view", html())
	for _, path := range []string{fmt.Sprintf("/api/plans/%d", created.ID), fmt.Sprintf("/api/runs/%d", run.ID), "/api/secrets",
		fmt.Sprintf("/api/runs/%d/report?format=json", run.ID), fmt.Sprintf("/api/runs/%d/report?format=html", run.ID)} {
		res, err := http.Get(srv.base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		noCanary(path, string(b))
		if strings.Contains(string(b), "api_key=K\"") && strings.Contains(string(b), `"name":"GET `+tg.URL+`/t?`) {
			t.Errorf("%s: a request name with the query string", path)
		}
	}
	log, _ := os.ReadFile(srv.log)
	noCanary("server log", string(log))
}
