package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// volleyStdin runs the volley binary with stdin and returns its exit code and output.
func volleyStdin(t *testing.T, stdin string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, volleyBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("volley %v: %v", args, err)
	}
	return 0, out.String()
}

// bearerGet is an API GET with a token (or none); it returns the status and body.
func bearerGet(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// A server with a user: the API is closed without a session or token, the browser logs in through
// the login page and starts a run of the demo plan; the run is in the audit log with its target.
// A non-loopback bind with no users refuses to start and says how to add one.
func TestLoginInTheBrowserAndRunTheDemo(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	dir := t.TempDir()

	// the refusal: 0.0.0.0 with no users
	fresh := filepath.Join(dir, "fresh.db")
	code, out := volleyStdin(t, "", "serve", "--addr", fmt.Sprintf("0.0.0.0:%d", freePort(t)), "--db", fresh, "--demo-target", "")
	if code != 2 || !strings.Contains(out, "volley user add admin --role admin --db "+fresh) {
		t.Fatalf("serve on 0.0.0.0 without users: exit %d\n%s", code, out)
	}

	db := filepath.Join(dir, "volley.db")
	const pw = "e2e tester password"
	if code, out := volleyStdin(t, pw+"\n", "user", "add", "ann", "--role", "tester", "--password-stdin", "--db", db); code != 0 {
		t.Fatalf("user add: exit %d\n%s", code, out)
	}
	if code, out := volleyStdin(t, "x\n", "user", "add", "bob", "--role", "tester", "--password-stdin", "--db", db); code != 2 {
		t.Fatalf("user add with a short password: exit %d, want 2\n%s", code, out)
	}
	code, out = volleyStdin(t, "", "user", "token", "ann", "--label", "e2e", "--db", db)
	token := regexp.MustCompile(`vlt_[A-Za-z0-9_-]{43}`).FindString(out)
	if code != 0 || token == "" {
		t.Fatalf("user token: exit %d\n%s", code, out)
	}

	demo := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := startServer(t, db, demo)
	if st, b := bearerGet(t, srv.base+"/api/plans", ""); st != http.StatusUnauthorized {
		t.Fatalf("GET /api/plans without a session: %d %s", st, b)
	}
	if st, b := bearerGet(t, srv.base+"/api/plans", token); st != http.StatusOK || !bytes.Contains(b, []byte("Demo")) {
		t.Fatalf("GET /api/plans with the token: %d %s", st, b)
	}

	ctx := newBrowser(t, 90*time.Second)
	openSPA(t, ctx, srv.base+"/#/plans")
	waitJS(t, ctx, "the login page", exists(`[data-testid="login-form"]`), 20*time.Second)
	screenshot(t, ctx, "login.png")
	setField(t, ctx, `[data-testid="login-user"]`, "ann")
	setField(t, ctx, `[data-testid="login-password"]`, "wrong password")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="login-submit"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the login error", visibleWithText(`[data-testid="login-error"]`), 10*time.Second)
	setField(t, ctx, `[data-testid="login-password"]`, pw)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="login-submit"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the user in the header", `(document.querySelector('[data-testid="current-user"]')?.textContent ?? "").includes("ann")`, 15*time.Second)
	// the session is an HttpOnly cookie: the page's script cannot read it
	if c := evalString(t, ctx, `document.cookie`); strings.Contains(c, "volley_session") {
		t.Errorf("the session cookie is readable from script: %q", c)
	}
	waitJS(t, ctx, "the demo plan's Run button", exists(`[data-testid="run-plan"]`), 15*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="run-plan"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the run view (#/runs/<id>)", `/^#\/runs\/\d+$/.test(location.hash)`, 15*time.Second)
	runID, _ := strconv.ParseInt(regexp.MustCompile(`\d+$`).FindString(evalString(t, ctx, `location.hash`)), 10, 64)
	waitJS(t, ctx, "live samples in the run view (websocket with the session)",
		`Number(document.querySelector('[data-testid="chart-tps"]')?.getAttribute("data-points") ?? 0) >= 2`, 20*time.Second)
	screenshot(t, ctx, "auth-run-live.png")

	st, b := bearerGet(t, fmt.Sprintf("%s/api/runs/%d", srv.base, runID), token)
	var r struct {
		Status   string `json:"status"`
		PlanName string `json:"plan_name"`
	}
	_ = json.Unmarshal(b, &r)
	if st != http.StatusOK || !strings.HasPrefix(r.PlanName, "Demo") {
		t.Fatalf("run %d: %d %s", runID, st, b)
	}
	// stop it from the API with the token (a tester's), as CI would
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/runs/%d/stop", srv.base, runID), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted && res.StatusCode != http.StatusConflict {
		t.Errorf("stop with the token: %d", res.StatusCode)
	}
	// logout in the browser brings the login page back and ends the session
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="logout"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the login page after logout", exists(`[data-testid="login-form"]`), 10*time.Second)
	// the CLI lists the user
	if code, out := volleyStdin(t, "", "user", "list", "--db", db); code != 0 || !strings.Contains(out, "ann") {
		t.Errorf("user list: %d\n%s", code, out)
	}
}
