package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestCompareTwentyPercentSlowerIsARegression runs one plan twice for 30 s at 40 VUs against a
// loopback target whose every answer waits a fixed delay (40 ms), the second time 25 % longer (so
// 20 % fewer requests per second at the same concurrency), and reads the compare page: TPS and p50
// are regressions with their effect and interval, generator CPU has no verdict, and no load
// warning is shown (the load was the same). The delay is long beside a busy 2-core machine's
// scheduling delays (tens of ms at load 15), which otherwise widen the tail's interval: p95 must be
// a regression or, when the machine's noise leaves it undecided, inconclusive — never no change or
// an improvement.
func TestCompareTwentyPercentSlowerIsARegression(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	var delay atomic.Int64
	delay.Store(int64(40 * time.Millisecond))
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(delay.Load()))
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(target.Close)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")

	planID := createPlan(t, srv.base, nginxPlan("compare regression e2e", target.URL,
		map[string]any{"executor": "constant-vus", "vus": 40, "duration": "30s"}))
	runA := runToEnd(t, srv.base, planID, 90*time.Second)
	delay.Store(int64(50 * time.Millisecond))
	runB := runToEnd(t, srv.base, planID, 90*time.Second)
	for _, r := range []runJSON{runA, runB} {
		if r.Status != "finished" || r.Summary == nil {
			t.Fatalf("run %d: status %q (error %q), summary %v", r.ID, r.Status, r.Error, r.Summary != nil)
		}
		t.Logf("run %d: %d requests, %.0f req/s, p50 %.3f ms, errors %d", r.ID, r.Summary.Requests, r.Summary.RPS, r.Summary.Latency.P50, r.Summary.Errors)
	}

	ctx := newBrowser(t, 60*time.Second)
	openSPA(t, ctx, fmt.Sprintf("%s/#/compare?ids=%d,%d&baseline=%d", srv.base, runA.ID, runB.ID, runA.ID))
	waitJS(t, ctx, "[data-testid=compare-table]", visibleWithText(`[data-testid="compare-table"]`), 20*time.Second)
	type cell struct {
		Verdict, Effect, Decide, Title string
	}
	read := func(metric string) cell {
		c, err := chromedp.Run(ctx, chromedp.Evaluate[cell](fmt.Sprintf(`(() => {
			const c = document.querySelector('[data-testid="compare-row"][data-metric=%q] [data-run-id="%d"]');
			return c ? {Verdict: c.getAttribute("data-verdict") ?? "", Effect: c.querySelector('[data-testid="effect"]')?.textContent ?? "",
				Decide: c.querySelector('[data-testid="decide"]')?.textContent ?? "", Title: c.getAttribute("title") ?? ""} : {};
		})()`, metric, runB.ID)))
		if err != nil {
			t.Fatalf("read %s: %v", metric, err)
		}
		t.Logf("ui %-11s %-12s %s %s", metric, c.Verdict, c.Effect, c.Decide)
		return c
	}
	for _, m := range []string{"tps", "p50"} {
		if c := read(m); c.Verdict != "regression" || c.Effect == "" {
			t.Errorf("%s: verdict %q effect %q, want a regression with its effect\n%s", m, c.Verdict, c.Effect, c.Title)
		}
	}
	if c := read("p95"); (c.Verdict != "regression" && c.Verdict != "inconclusive") || c.Effect == "" {
		t.Errorf("p95: verdict %q effect %q, want a regression (or inconclusive on a noisy machine) with its effect\n%s", c.Verdict, c.Effect, c.Title)
	}
	if c := read("cpu_percent"); c.Verdict != "none" || c.Effect != "" {
		t.Errorf("generator CPU: verdict %q effect %q, want no verdict", c.Verdict, c.Effect)
	}
	if c := read("error_rate"); c.Verdict != "no_change" {
		t.Errorf("0 %% vs 0 %% errors: %q, want no_change", c.Verdict)
	}
	if warn := evalString(t, ctx, `document.querySelector('[data-testid="compare-warnings"]')?.innerText ?? ""`); warn != "" {
		t.Errorf("a load warning for the same load: %q", warn)
	}
	if th := evalString(t, ctx, `document.querySelector('[data-testid="compare-threshold"]')?.value ?? ""`); th != "5" {
		t.Errorf("threshold field %q, want 5", th)
	}
}
