package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	_ "github.com/mattn/go-sqlite3"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// Dashboard end-to-end tests: compare, capacity report, the offline HTML report, and the history
// and run pages at realistic sizes (5 000 runs; a one-hour run) measured in a real Chromium.

// TestCompareTwoRunsInTheBrowser runs one plan against nginx at 5 VUs, then (after a PUT) at 40 VUs,
// and reads the compare page: the delta table with a verdict per cell, the load warning, and the
// overlaid throughput chart with two series.
func TestCompareTwoRunsInTheBrowser(t *testing.T) {
	requireUI(t)
	requireTool(t, nginxPath)
	requireTool(t, chromiumPath)
	ng := startNginx(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")

	spec := nginxPlan("compare e2e", ng.url, map[string]any{"executor": "constant-vus", "vus": 5, "duration": "12s"})
	planID := createPlan(t, srv.base, spec)
	runA := runToEnd(t, srv.base, planID, 60*time.Second)
	spec["load"] = map[string]any{"executor": "constant-vus", "vus": 40, "duration": "12s"}
	if code := apiDo(t, "PUT", fmt.Sprintf("%s/api/plans/%d", srv.base, planID), spec, nil); code != http.StatusOK {
		t.Fatalf("PUT /api/plans/%d: status %d", planID, code)
	}
	runB := runToEnd(t, srv.base, planID, 60*time.Second)
	for _, r := range []runJSON{runA, runB} {
		if r.Status != "finished" || r.Summary == nil {
			t.Fatalf("run %d: status %q (error %q), summary %v: want finished with a summary", r.ID, r.Status, r.Error, r.Summary != nil)
		}
		t.Logf("run %d: %d requests, %.0f req/s, p95 %.3f ms, errors %d", r.ID, r.Summary.Requests, r.Summary.RPS, r.Summary.Latency.P95, r.Summary.Errors)
	}

	// What the API says, to hold the page to it.
	var cmp struct {
		Baseline int64 `json:"baseline"`
		Metrics  []struct {
			Metric string `json:"metric"`
			Values []struct {
				RunID    int64    `json:"run_id"`
				Value    *float64 `json:"value"`
				DeltaPct *float64 `json:"delta_pct"`
				Verdict  string   `json:"verdict"`
				Reason   string   `json:"reason"`
			} `json:"values"`
		} `json:"metrics"`
		Warnings []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"warnings"`
	}
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/compare?ids=%d,%d&baseline=%d", srv.base, runA.ID, runB.ID, runA.ID), nil, &cmp); code != http.StatusOK {
		t.Fatalf("GET /api/compare: status %d", code)
	}
	apiVerdict := map[string]string{} // "metric/run" -> verdict
	for _, m := range cmp.Metrics {
		for _, v := range m.Values {
			apiVerdict[fmt.Sprintf("%s/%d", m.Metric, v.RunID)] = v.Verdict
			if v.RunID == runB.ID {
				t.Logf("api compare %-11s #%d: value %s, Δ%% %s, verdict %s %s", m.Metric, v.RunID, fptr(v.Value), fptr(v.DeltaPct), v.Verdict, v.Reason)
			}
		}
	}
	for _, w := range cmp.Warnings {
		t.Logf("api compare warning %s: %s", w.Code, w.Message)
	}

	ctx := newBrowser(t, 60*time.Second)
	openSPA(t, ctx, fmt.Sprintf("%s/#/compare?ids=%d,%d&baseline=%d", srv.base, runA.ID, runB.ID, runA.ID))
	waitJS(t, ctx, "[data-testid=compare-table]", visibleWithText(`[data-testid="compare-table"]`), 20*time.Second)
	waitJS(t, ctx, "compare-chart-tps with data-series and points",
		`Number(document.querySelector('[data-testid="compare-chart-tps"]')?.getAttribute("data-points") ?? 0) > 0`, 10*time.Second)

	type cell struct {
		RunID   string `json:"run"`
		Verdict string `json:"verdict"`
		Text    string `json:"text"`
	}
	type row struct {
		Metric string `json:"metric"`
		Cells  []cell `json:"cells"`
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll('[data-testid="compare-table"] [data-testid="compare-row"]')].map(r => ({
		metric: r.getAttribute("data-metric"),
		cells: [...r.querySelectorAll("[data-verdict]")].map(c => ({
			run: c.getAttribute("data-run-id") ?? "", verdict: c.getAttribute("data-verdict"),
			text: c.textContent.replace(/\s+/g, " ").trim()})),
	}))`))
	if err != nil {
		t.Fatalf("read compare rows: %v", err)
	}
	byMetric := map[string]row{}
	for _, r := range rows {
		byMetric[r.Metric] = r
		for _, c := range r.Cells {
			t.Logf("ui compare %-11s #%s %-12s %s", r.Metric, c.RunID, c.Verdict, c.Text)
		}
	}
	valid := map[string]bool{"baseline": true, "regression": true, "improvement": true, "no_change": true, "inconclusive": true, "none": true}
	for _, m := range []string{"tps", "p50", "p90", "p95", "p99", "max", "error_rate", "cpu_percent", "rss_bytes"} {
		r, ok := byMetric[m]
		if !ok {
			t.Errorf("no [data-testid=compare-row][data-metric=%s] (rows: %d)", m, len(rows))
			continue
		}
		if len(r.Cells) != 2 {
			t.Errorf("row %s: %d cells with data-verdict, want 2 (one per run)", m, len(r.Cells))
			continue
		}
		for _, c := range r.Cells {
			if !valid[c.Verdict] {
				t.Errorf("row %s run %s: data-verdict=%q", m, c.RunID, c.Verdict)
			}
			if c.RunID == fmt.Sprint(runA.ID) && c.Verdict != "baseline" {
				t.Errorf("row %s: the baseline #%d has verdict %q", m, runA.ID, c.Verdict)
			}
			if want := apiVerdict[m+"/"+c.RunID]; want != "" && c.Verdict != want {
				t.Errorf("row %s run %s: page says %q, /api/compare says %q", m, c.RunID, c.Verdict, want)
			}
			if c.Text == "" {
				t.Errorf("row %s run %s: empty cell", m, c.RunID)
			}
		}
	}
	if got := evalString(t, ctx, `document.querySelector('[data-testid="compare-chart-tps"]')?.getAttribute("data-series") ?? ""`); got != "2" {
		t.Errorf(`compare-chart-tps data-series=%q, want "2"`, got)
	}
	charts := evalString(t, ctx, `[...document.querySelectorAll('[data-testid^="compare-chart-"]')].map(c => c.getAttribute("data-testid") + ":" + c.getAttribute("data-series") + "x" + c.getAttribute("data-points")).join(" ")`)
	t.Logf("compare charts (series x points): %s", charts)
	// 5 vs 40 VUs of one plan: the page says the load differs.
	warn := evalString(t, ctx, `document.querySelector('[data-testid="compare-warnings"]')?.innerText ?? ""`)
	t.Logf("compare warnings on the page: %q", warn)
	if !strings.Contains(strings.ToLower(warn), "vus") {
		t.Errorf("the compare page shows no VUs warning for 5 vs 40 VUs: %q", warn)
	}
	time.Sleep(300 * time.Millisecond) // let uPlot paint before the picture
	screenshot(t, ctx, "compare.png")
}

// TestSweepCapacityReportInTheBrowser runs a concurrency sweep (1, 10, 40 VUs, 2 s each) against
// nginx from the API and reads its capacity table on the run page.
func TestSweepCapacityReportInTheBrowser(t *testing.T) {
	requireUI(t)
	requireTool(t, nginxPath)
	requireTool(t, chromiumPath)
	ng := startNginx(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")

	planID := createPlan(t, srv.base, nginxPlan("sweep e2e", ng.url,
		map[string]any{"executor": "concurrency-sweep", "levels": []int{1, 10, 40}, "step_duration": "2s"}))
	start := time.Now()
	run := runToEnd(t, srv.base, planID, 60*time.Second)
	if run.Status != "finished" || run.Summary == nil {
		t.Fatalf("sweep run %d: status %q (error %q), summary %v", run.ID, run.Status, run.Error, run.Summary != nil)
	}
	t.Logf("sweep run %d ended in %s: %d requests", run.ID, time.Since(start).Round(100*time.Millisecond), run.Summary.Requests)
	var full struct {
		Summary struct {
			Sweep []struct {
				VUs      int     `json:"vus"`
				Requests int64   `json:"requests"`
				RPS      float64 `json:"rps"`
				Knee     bool    `json:"knee"`
			} `json:"sweep"`
		} `json:"summary"`
	}
	apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", srv.base, run.ID), nil, &full)
	for _, r := range full.Summary.Sweep {
		t.Logf("api sweep: %2d VUs: %6d requests, %8.0f req/s, knee %v", r.VUs, r.Requests, r.RPS, r.Knee)
	}

	ctx := newBrowser(t, 40*time.Second)
	openSPA(t, ctx, fmt.Sprintf("%s/#/runs/%d", srv.base, run.ID))
	waitJS(t, ctx, "[data-testid=capacity-table] with 3 capacity rows",
		`document.querySelectorAll('[data-testid="capacity-table"] [data-testid="capacity-row"]').length === 3`, 20*time.Second)
	type capRow struct {
		VUs  string `json:"vus"`
		Knee string `json:"knee"`
		Text string `json:"text"`
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]capRow](`[...document.querySelectorAll('[data-testid="capacity-row"]')].map(r => ({
		vus: r.getAttribute("data-vus") ?? "", knee: r.getAttribute("data-knee") ?? "", text: r.innerText.replace(/\s+/g, " ").trim()}))`))
	if err != nil {
		t.Fatalf("read capacity rows: %v", err)
	}
	knees := 0
	for i, r := range rows {
		t.Logf("ui capacity row: vus=%s knee=%q %s", r.VUs, r.Knee, r.Text)
		if want := fmt.Sprint([]int{1, 10, 40}[i]); r.VUs != want {
			t.Errorf("capacity row %d: data-vus=%q, want %s", i, r.VUs, want)
		}
		if r.Knee == "true" {
			knees++
			if i < len(full.Summary.Sweep) && !full.Summary.Sweep[i].Knee {
				t.Errorf("row %d (%s VUs) is marked as the knee, the summary says it is not", i, r.VUs)
			}
		} else if i < len(full.Summary.Sweep) && full.Summary.Sweep[i].Knee {
			t.Errorf("row %d (%s VUs) is the summary's knee but has no data-knee=true", i, r.VUs)
		}
	}
	if knees > 1 {
		t.Errorf("%d rows marked as the knee, want at most 1", knees)
	}
	t.Logf("capacity sentence: %q", evalString(t, ctx, `document.querySelector('[data-testid="capacity-sentence"]')?.innerText ?? ""`))
	time.Sleep(300 * time.Millisecond)
	screenshot(t, ctx, "capacity.png")
}

// TestHTMLReportOpensOfflineAndValidates downloads a run's HTML report, validates it with
// html-validate, and opens it from a file with the network off: every request it makes must be
// file: or data:, and it must still show the run's request count and an SVG chart.
func TestHTMLReportOpensOfflineAndValidates(t *testing.T) {
	requireTool(t, nginxPath)
	requireTool(t, chromiumPath)
	validator := filepath.Join(repoRoot, "frontend", "node_modules", ".bin", "html-validate")
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(validator); err != nil || nodeErr != nil {
		msg := fmt.Sprintf("html-validate needs node and %s (cd frontend && npm ci): %v %v", validator, err, nodeErr)
		if strict() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ng := startNginx(t)
	srv := startServer(t, filepath.Join(t.TempDir(), "volley.db"), "")
	spec := nginxPlan("report e2e <&> \"quoted\"", ng.url, map[string]any{"executor": "constant-vus", "vus": 3, "duration": "4s"})
	spec["thresholds"] = []string{"p(95)<2000ms", "error_rate<1%"}
	run := runToEnd(t, srv.base, createPlan(t, srv.base, spec), 40*time.Second)
	if run.Summary == nil || run.Summary.Requests == 0 {
		t.Fatalf("run %d: status %q, no requests in the summary", run.ID, run.Status)
	}

	resp, body := httpGet(t, fmt.Sprintf("%s/api/runs/%d/report?format=html", srv.base, run.ID))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET report: status %d: %s", resp.StatusCode, truncate(string(body), 300))
	}
	t.Logf("report: %d bytes, Content-Type %q, Content-Disposition %q", len(body), resp.Header.Get("Content-Type"),
		resp.Header.Get("Content-Disposition"))
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("report Content-Type %q, want text/html", resp.Header.Get("Content-Type"))
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, fmt.Sprintf("volley-run-%d.html", run.ID)) {
		t.Errorf("Content-Disposition %q does not name volley-run-%d.html", cd, run.ID)
	}
	file := filepath.Join(t.TempDir(), fmt.Sprintf("volley-run-%d.html", run.ID))
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}

	// html-validate with its default (recommended) rules; run from the temp dir so no project
	// config applies.
	vctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(vctx, node, validator, "--formatter", "text", file)
	cmd.Dir = filepath.Dir(file)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("html-validate %s: %v\n%s", file, err, truncate(string(out), 6000))
	} else {
		t.Logf("html-validate: exit 0 %s", strings.TrimSpace(string(out)))
	}

	// A server that must not be reached: proves the offline emulation is on.
	var probeHits atomic.Int64
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { probeHits.Add(1) }))
	defer probe.Close()

	ctx := newBrowser(t, 40*time.Second)
	var mu sync.Mutex
	var urls []string
	urlOf := map[network.RequestID]string{}
	failures := map[string]string{} // URL -> Network.loadingFailed errorText
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if e.Request != nil {
				urls = append(urls, e.Request.URL)
				urlOf[e.RequestID] = e.Request.URL
			}
		case *network.EventLoadingFailed:
			failures[urlOf[e.RequestID]] = e.ErrorText
		}
	}); err != nil {
		t.Fatalf("listen: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("Network.enable: %v", err)
	}
	goOffline(t, ctx)
	// The network really is off: from the blank page the browser starts on (no CSP of the report's
	// to block it first), a fetch to a live local server fails as disconnected and never arrives.
	res, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(async () => {
		try { await fetch(%s, {mode: "no-cors"}); return "fetched"; } catch (e) { return "failed: " + e.message; }
	})()`, jsString(probe.URL+"/probe")), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("probe fetch: %v", err)
	}
	var netErr string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) { // the event is on its way: a busy machine delays it
		mu.Lock()
		netErr = failures[probe.URL+"/probe"]
		mu.Unlock()
		if netErr != "" {
			break
		}
	}
	if !strings.HasPrefix(res, "failed") || probeHits.Load() != 0 || netErr != "net::ERR_INTERNET_DISCONNECTED" {
		t.Errorf("offline emulation is not effective: fetch %q, probe hits %d, network error %q (want net::ERR_INTERNET_DISCONNECTED)",
			res, probeHits.Load(), netErr)
	} else {
		t.Logf("offline check: fetch to %s -> %s, %s, 0 hits", probe.URL, res, netErr)
	}
	mu.Lock()
	urls = nil // the probe is not the report's
	mu.Unlock()
	fileURL := (&url.URL{Scheme: "file", Path: file}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL)); err != nil {
		t.Fatalf("open %s: %v", fileURL, err)
	}
	waitJS(t, ctx, "the report loaded", `document.readyState === "complete" && document.body !== null`, 10*time.Second)
	time.Sleep(500 * time.Millisecond) // anything lazy (images, fonts) would have asked by now

	mu.Lock()
	seen := append([]string(nil), urls...)
	mu.Unlock()
	for _, u := range seen {
		if !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the report requested %s (only file: and data: are allowed)", truncate(u, 200))
		}
	}
	t.Logf("requests made by the report: %d %v", len(seen), seen)
	if len(seen) == 0 {
		t.Errorf("no Network.requestWillBeSent at all: the listener saw nothing (not even the file itself)")
	}

	text := evalString(t, ctx, `document.body.innerText`)
	if !regexp.MustCompile(`(^|\D)` + fmt.Sprint(run.Summary.Requests) + `(\D|$)`).MatchString(strings.ReplaceAll(text, ",", "")) {
		t.Errorf("the report does not show the run's %d requests:\n%s", run.Summary.Requests, truncate(text, 1500))
	}
	type svgInfo struct {
		N      int `json:"n"`
		Shapes int `json:"shapes"`
		Width  int `json:"width"`
	}
	svg, err := chromedp.Run(ctx, chromedp.Evaluate[svgInfo](`(() => {
		const s = [...document.querySelectorAll("svg")];
		return {n: s.length, shapes: s.reduce((a, e) => a + e.querySelectorAll("path, polyline, line").length, 0),
			width: Math.round(Math.max(0, ...s.map(e => e.getBoundingClientRect().width)))};
	})()`))
	if err != nil {
		t.Fatalf("read svg: %v", err)
	}
	t.Logf("report: %d <svg>, %d path/polyline/line shapes, widest %d px", svg.N, svg.Shapes, svg.Width)
	if svg.N < 1 || svg.Shapes < 1 || svg.Width < 100 {
		t.Errorf("want at least one rendered <svg> chart with shapes: %+v", svg)
	}

	screenshot(t, ctx, "report.png")
}

// TestHistoryWith5000RunsPaintsFast fills the database with 5 000 finished runs and measures, in
// the page, the time from navigation start until the first history row is painted.
func TestHistoryWith5000RunsPaintsFast(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	db := filepath.Join(t.TempDir(), "volley.db")
	srv := startServer(t, db, "")
	spec := nginxPlan("history 5000", "http://127.0.0.1:9/", map[string]any{"executor": "constant-vus", "vus": 20, "duration": "30s"})
	planID := createPlan(t, srv.base, spec)
	planSpec := planSpecOf(t, srv.base, planID)
	stopServer(t, srv)

	const n = 5000
	start := time.Now()
	sqldb := openDB(t, db)
	tx, err := sqldb.Begin()
	if err != nil {
		t.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO runs (plan_id, plan_name, status, started_at, ended_at, duration_s, requests, rps,
		p95_ms, error_rate, error, plan_spec, thresholds_ok, notes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := tx.Prepare(`INSERT INTO run_tags (run_id, tag) VALUES (?, ?)`)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5000, 1))
	newest := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < n; i++ {
		started := newest.Add(-time.Duration(n-1-i) * 37 * time.Minute) // oldest first, ids ascending
		dur := 30 + rng.Float64()*0.2
		rps := 4000 + rng.Float64()*2000
		status, errMsg := "finished", ""
		switch {
		case i%97 == 0:
			status, errMsg = "failed", "dial tcp 127.0.0.1:9: connect: connection refused"
		case i%31 == 0:
			status = "stopped"
			dur = 5 + rng.Float64()*20
		}
		var thOK any // NULL: no thresholds
		if i%3 == 1 {
			thOK = int64(1)
		} else if i%3 == 2 {
			thOK = int64(rng.IntN(5) / 4) // mostly failed
		}
		notes := ""
		if i%50 == 0 {
			notes = fmt.Sprintf("nightly run %d", i)
		}
		res, err := ins.Exec(planID, "history 5000", status, started, started.Add(time.Duration(dur*float64(time.Second))), dur,
			int64(rps*dur), rps, 2+rng.Float64()*6, rng.Float64()*0.002, errMsg, planSpec, thOK, notes)
		if err != nil {
			t.Fatalf("insert run %d: %v", i, err)
		}
		if i%10 == 0 {
			id, _ := res.LastInsertId()
			for _, tg := range []string{"nightly", fmt.Sprintf("v%d", i/500)} {
				if _, err := tag.Exec(id, tg); err != nil {
					t.Fatalf("tag run %d: %v", id, err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := sqldb.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("inserted %d runs in %s", n, time.Since(start).Round(time.Millisecond))

	srv = startServer(t, db, "")
	var list struct {
		Total int `json:"total"`
	}
	if code := apiDo(t, "GET", srv.base+"/api/runs?limit=1", nil, &list); code != http.StatusOK || list.Total != n {
		t.Fatalf("GET /api/runs: status %d, total %d, want %d", code, list.Total, n)
	}

	ctx := newBrowser(t, 60*time.Second)
	watchPaint(t, ctx, `document.querySelector('[data-testid="run-row"]') !== null`)
	cold := measurePaint(t, ctx, srv.base+"/#/runs", false)
	rows := evalString(t, ctx, `String(document.querySelectorAll('[data-testid="run-row"]').length)`)
	t.Logf("history, 5 000 runs, cold load: first [data-testid=run-row] painted %.0f ms after navigation start "+
		"(rows in the DOM at %.0f ms, first contentful paint %.0f ms, %s rows)", cold.PaintedAt, cold.SeenAt, cold.FCP, rows)
	t.Logf("cold load breakdown (ms after navigation start): %s", loadBreakdown(t, ctx))
	warm := measurePaint(t, ctx, "", true)
	t.Logf("reload breakdown (ms after navigation start): %s", loadBreakdown(t, ctx))
	t.Logf("history, 5 000 runs, reload: first row painted %.0f ms (rows in the DOM at %.0f ms)", warm.PaintedAt, warm.SeenAt)
	if cold.PaintedAt < 300 {
		t.Logf("target < 300 ms: met (%.0f ms)", cold.PaintedAt)
	} else {
		t.Logf("target < 300 ms: NOT met (%.0f ms cold, %.0f ms reload; shared 2-core machine)", cold.PaintedAt, warm.PaintedAt)
	}
	// Speed targets live in benchmarks; this bound only catches a page that stopped paging (all
	// 5 000 rows drawn, or the whole history fetched first), which takes far longer, while a busy
	// 2-core machine (load 12: 1.3–2.2 s measured) still holds it.
	if cold.PaintedAt >= 5000 {
		t.Errorf("first history row painted %.0f ms after navigation start, want < 5000 ms", cold.PaintedAt)
	} else if cold.PaintedAt >= 1000 {
		t.Logf("target < 1000 ms: NOT met (%.0f ms; a busy machine?)", cold.PaintedAt)
	}
	if rows != "50" {
		t.Errorf("%s run rows rendered, want one page of 50", rows)
	}
	waitJS(t, ctx, "[data-testid=page-range]", visibleWithText(`[data-testid="page-range"]`), 5*time.Second)
	rng2 := evalString(t, ctx, `document.querySelector('[data-testid="page-range"]').textContent.trim()`)
	t.Logf("page range: %q", rng2)
	if !regexp.MustCompile(`(^|\D)5[,.\s\x{202f}\x{a0}]?000(\D|$)`).MatchString(rng2) {
		t.Errorf("page range %q does not show the total 5000", rng2)
	}
	first := evalString(t, ctx, `document.querySelector('[data-testid="run-row"]').getAttribute("data-run-id")`)
	if first != fmt.Sprint(n) {
		t.Errorf("first row is run %s, want the newest, %d", first, n)
	}
	screenshot(t, ctx, "history-5000.png")
}

// TestHourLongRunDetailDraws stores a finished one-hour run (3 600 seconds) and measures how long its
// run page takes to draw every chart, and that it asks the server for a downsampled series.
func TestHourLongRunDetailDraws(t *testing.T) {
	requireUI(t)
	requireTool(t, chromiumPath)
	db := filepath.Join(t.TempDir(), "volley.db")
	srv := startServer(t, db, "")
	spec := nginxPlan("hour long", "http://127.0.0.1:9/", map[string]any{"executor": "constant-vus", "vus": 50, "duration": "1h"})
	spec["thresholds"] = []string{"p(95)<50ms"}
	planID := createPlan(t, srv.base, spec)
	planSpec := planSpecOf(t, srv.base, planID)
	stopServer(t, srv)

	const seconds = 3600
	start := time.Now()
	runID := insertHourLongRun(t, db, planID, planSpec, seconds)
	t.Logf("inserted run %d with %d seconds in %s", runID, seconds, time.Since(start).Round(time.Millisecond))

	srv = startServer(t, db, "")
	if items := getSamples(t, srv.base, runID); len(items) == 0 || len(items) > 2000 {
		t.Errorf("GET samples without points: %d items, want 1..2000 (the default cap)", len(items))
	}

	ctx := newBrowser(t, 60*time.Second)
	const allCharts = `(() => {
		const cs = [...document.querySelectorAll('.chart[data-testid^="chart-"][data-points]')];
		return cs.length >= 6 && cs.every(c => Number(c.getAttribute("data-points")) > 0);
	})()`
	watchPaint(t, ctx, allCharts)
	t0 := time.Now()
	m := measurePaint(t, ctx, fmt.Sprintf("%s/#/runs/%d", srv.base, runID), false)
	evalStart := time.Now()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1 + 1`)); err != nil {
		t.Fatalf("evaluate after draw: %v", err)
	}
	evalRTT := time.Since(evalStart)
	total := time.Since(t0)
	t.Logf("hour-long run page: all charts drawn %.0f ms after navigation start (in page; data seen %.0f ms); "+
		"navigate → charts drawn → page answered 1+1: %d ms (evaluate round trip %.1f ms)",
		m.PaintedAt, m.SeenAt, total.Milliseconds(), float64(evalRTT.Microseconds())/1000)
	if total >= 5*time.Second {
		t.Errorf("the hour-long run page took %s to draw and respond, want < 5 s", total)
	}

	charts := evalString(t, ctx, `[...document.querySelectorAll('.chart[data-testid][data-points]')].map(c => c.getAttribute("data-testid") + "=" + c.getAttribute("data-points")).join(" ")`)
	t.Logf("charts (data-points): %s", charts)
	for _, kv := range strings.Fields(charts) {
		name, pts, _ := strings.Cut(kv, "=")
		var p int
		fmt.Sscan(pts, &p)
		if strings.HasPrefix(name, "chart-distribution") {
			continue
		}
		if p <= 0 || p > 2000 {
			t.Errorf("%s draws %d points, want 1..2000 (not one per stored second)", name, p)
		}
	}
	samplesReqs := evalString(t, ctx, `performance.getEntriesByType("resource").map(e => e.name).filter(u => /\/samples/.test(u)).join(" ")`)
	t.Logf("samples requests: %s", samplesReqs)
	if samplesReqs == "" {
		t.Errorf("no request to /samples seen in the resource timing entries")
	}
	for _, u := range strings.Fields(samplesReqs) {
		if !strings.Contains(u, "points=") {
			t.Errorf("samples request without points=: %s", u)
		}
	}
	if note := evalString(t, ctx, `document.querySelector('[data-testid="samples-downsampled"]')?.innerText ?? ""`); note == "" {
		t.Errorf("no [data-testid=samples-downsampled] note for a downsampled run")
	} else {
		t.Logf("downsampled note: %q", note)
	}
	screenshot(t, ctx, "run-hour-long.png")
}

// --- helpers ---------------------------------------------------------------------------------

// nginxPlan is a plan JSON with one GET of target and the given load.
func nginxPlan(name, target string, load map[string]any) map[string]any {
	return map[string]any{
		"name":     name,
		"requests": []map[string]any{{"method": "GET", "url": target}},
		"load":     load,
		"http":     map[string]any{"timeout": "5s"},
	}
}

func createPlan(t *testing.T, base string, spec map[string]any) int64 {
	t.Helper()
	var p struct {
		ID int64 `json:"id"`
	}
	if code := apiDo(t, "POST", base+"/api/plans", spec, &p); code != http.StatusCreated {
		t.Fatalf("POST /api/plans: status %d", code)
	}
	return p.ID
}

// planSpecOf returns the plan JSON (with the server's defaults) as the runs table stores it.
func planSpecOf(t *testing.T, base string, id int64) string {
	t.Helper()
	var p struct {
		Plan json.RawMessage `json:"plan"`
	}
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/plans/%d", base, id), nil, &p); code != http.StatusOK || len(p.Plan) == 0 {
		t.Fatalf("GET /api/plans/%d: status %d, plan %s", id, code, p.Plan)
	}
	return string(p.Plan)
}

// runToEnd starts a run of the plan and waits until it has ended, returning it with its summary.
func runToEnd(t *testing.T, base string, planID int64, timeout time.Duration) runJSON {
	t.Helper()
	var r runJSON
	if code := apiDo(t, "POST", fmt.Sprintf("%s/api/plans/%d/runs", base, planID), nil, &r); code != http.StatusCreated {
		t.Fatalf("POST /api/plans/%d/runs: status %d", planID, code)
	}
	waitRunEnded(t, base, r.ID, timeout)
	var full runJSON
	if code := apiDo(t, "GET", fmt.Sprintf("%s/api/runs/%d", base, r.ID), nil, &full); code != http.StatusOK {
		t.Fatalf("GET /api/runs/%d: status %d", r.ID, code)
	}
	return full
}

func httpGet(t *testing.T, u string) (*http.Response, []byte) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp, b
}

func fptr(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%.4g", *v)
}

// stopServer sends SIGTERM to the server's process group (the one this test started) and waits for
// it to exit, SIGKILLing it after 10 s.
func stopServer(t *testing.T, s *server) {
	t.Helper()
	if err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Logf("SIGTERM volley serve: %v", err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Logf("volley serve did not exit 10 s after SIGTERM; killing it")
		s.kill(t)
	}
}

// openDB opens the server's SQLite file directly (the server must be stopped), with the pragmas
// the store uses.
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	q.Set("_busy_timeout", "5000")
	q.Set("_txlock", "immediate")
	dsn := (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return db
}

// insertHourLongRun stores a finished constant-vus run of the plan with one realistic sample per
// second, its summary and merged histogram, and returns the run id.
func insertHourLongRun(t *testing.T, dbPath string, planID int64, planSpec string, seconds int) int64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(3600, 7))
	started := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Millisecond)
	hist := metrics.NewHist()
	var total, errs, bytesIn, bytesOut int64
	var sumLatUs float64
	var cpuSum, cpuMax float64
	var rssMax uint64
	status := map[string]int64{}
	samples := make([][]byte, seconds)
	for s := 1; s <= seconds; s++ {
		phase := float64(s) / float64(seconds)
		base := 5200 + 600*math.Sin(phase*2*math.Pi*6) + rng.NormFloat64()*150
		p50 := 1.8 + 0.4*math.Sin(phase*2*math.Pi*3) + rng.Float64()*0.2
		if s%600 == 300 { // a latency spike every 10 minutes
			base *= 0.4
			p50 *= 6
		}
		reqs := int64(math.Max(100, base))
		e := int64(0)
		if rng.IntN(40) == 0 {
			e = int64(1 + rng.IntN(20))
		}
		lat := map[string]float64{"min": r3(p50 * 0.15), "mean": r3(p50 * 1.1), "p50": r3(p50), "p75": r3(p50 * 1.3),
			"p90": r3(p50 * 1.8), "p95": r3(p50 * 2.3), "p99": r3(p50 * 4.1), "p99_9": r3(p50 * 7), "max": r3(p50*9 + rng.Float64()*10)}
		for k := 0; k < 20; k++ { // a sketch of the second's distribution for the summary histogram
			v := p50 * math.Exp(rng.NormFloat64()*0.45)
			_ = hist.RecordValues(int64(v*1000), reqs/20)
		}
		cpu := 65 + rng.Float64()*20
		rss := uint64(30<<20) + uint64(s)*2048
		codes := map[string]int64{"200": reqs - e}
		kinds := map[string]int64{}
		if e > 0 {
			codes["503"] = e
			kinds["status_5xx"] = e
		}
		smp := map[string]any{
			"t": started.Add(time.Duration(s) * time.Second).UnixMilli(), "elapsed_s": s, "interval_s": 1,
			"requests": reqs, "rps": float64(reqs), "successes": reqs - e, "errors": e, "interrupted": 0,
			"latency_ms": lat, "active_vus": 50, "dropped_iterations": 0,
			"bytes_in": reqs * 850, "bytes_out": reqs * 95,
			"status_codes": codes, "error_kinds": kinds,
			"client": map[string]any{"cpu_percent": r3(cpu), "rss_bytes": rss, "goroutines": 64 + rng.IntN(8), "open_conns": 50,
				"gc_pause_ms": r3(rng.Float64() * 0.4), "schedule_lag_p99_ms": r3(rng.Float64() * 0.6)},
			"generator_bound": false,
		}
		b, err := json.Marshal(smp)
		if err != nil {
			t.Fatal(err)
		}
		samples[s-1] = b
		total += reqs
		errs += e
		bytesIn += reqs * 850
		bytesOut += reqs * 95
		sumLatUs += float64(reqs) * p50 * 1100
		cpuSum += cpu
		cpuMax = math.Max(cpuMax, cpu)
		rssMax = max(rssMax, rss)
		for k, v := range codes {
			status[k] += v
		}
	}
	encHist, err := metrics.EncodeHist(hist)
	if err != nil {
		t.Fatal(err)
	}
	lat := metrics.LatencyOf(hist, uint64(sumLatUs))
	dur := float64(seconds)
	p95 := lat.P95
	summary := map[string]any{
		"requests": total, "successes": total - errs, "errors": errs, "interrupted": 12, "dropped_iterations": 0,
		"duration_s": dur, "rps": float64(total) / dur, "send_rate": float64(total) / dur, "error_rate": float64(errs) / float64(total),
		"latency_ms": lat, "latency_ms_success": lat, "service_time_ms": lat, "schedule_lag_ms": metrics.Latency{},
		"status_codes": status, "error_kinds": map[string]int64{"status_5xx": errs},
		"bytes_in": bytesIn, "body_bytes_in": bytesIn * 7 / 10, "bytes_out": bytesOut,
		"client":     map[string]any{"cpu_percent_avg": r3(cpuSum / dur), "cpu_percent_max": r3(cpuMax), "rss_bytes_max": rssMax},
		"thresholds": []map[string]any{{"expr": "p(95)<50ms", "value": p95, "ok": p95 < 50}},
		"by_name":    map[string]any{"GET http://127.0.0.1:9/": map[string]any{"requests": total, "errors": errs, "latency_ms": lat}},
		"checks":     []any{}, "executor": "constant-vus", "seconds": seconds, "generator_bound_seconds": 0,
	}
	sumJSON, err := json.Marshal(summary)
	if err != nil {
		t.Fatal(err)
	}

	db := openDB(t, dbPath)
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ended := started.Add(time.Duration(seconds) * time.Second)
	res, err := tx.Exec(`INSERT INTO runs (plan_id, plan_name, status, started_at, ended_at, duration_s, requests, rps,
		p95_ms, error_rate, error, plan_spec, thresholds_ok, notes) VALUES (?, ?, 'finished', ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?)`,
		planID, "hour long", started, ended, dur, total, float64(total)/dur, p95, float64(errs)/float64(total), planSpec,
		boolInt(p95 < 50), "one hour, inserted by the e2e test")
	if err != nil {
		t.Fatal(err)
	}
	runID, err := res.LastInsertId()
	if err != nil {
		t.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO run_samples (run_id, second, t_ms, data, hist) VALUES (?, ?, ?, ?, NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range samples {
		if _, err := ins.Exec(runID, i+1, started.Add(time.Duration(i+1)*time.Second).UnixMilli(), string(b)); err != nil {
			t.Fatalf("insert second %d: %v", i+1, err)
		}
	}
	if _, err := tx.Exec(`INSERT INTO run_summaries (run_id, data, hist) VALUES (?, ?, ?)`, runID, string(sumJSON), []byte(encHist)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return runID
}

func r3(v float64) float64 { return math.Round(v*1000) / 1000 }

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// goOffline cuts the tab's network: every request fails as if the machine were disconnected.
// cdproto v0.159 has no Network.emulateNetworkConditions (deprecated upstream); its replacement is a
// global rule from Network.emulateNetworkConditionsByRule plus Network.overrideNetworkState for
// navigator.onLine.
func goOffline(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
		MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
	}); err != nil {
		// An older Chromium: the deprecated command, by name.
		legacy := cdp.Command[map[string]any, cdp.Empty]{Method: "Network.emulateNetworkConditions"}
		if _, err2 := chromedp.Call(ctx, legacy, map[string]any{"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}); err2 != nil {
			t.Fatalf("emulate offline: %v; legacy: %v", err, err2)
		}
	}
	if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{
		Offline: true, DownloadThroughput: -1, UploadThroughput: -1,
	}); err != nil {
		t.Logf("Network.overrideNetworkState: %v (navigator.onLine not overridden)", err)
	}
}

// watchPaint installs, for every document the tab loads from now on, a requestAnimationFrame loop
// that records performance.now() when cond (a JS expression) first holds (seenAt) and at the next
// animation frame (paintedAt: the frame that showed it has been painted), plus the first
// contentful paint.
func watchPaint(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	src := fmt.Sprintf(`(() => {
		const w = window.__volleyPaint = {};
		try {
			new PerformanceObserver(l => { for (const e of l.getEntries()) if (e.name === "first-contentful-paint") w.fcp = e.startTime; })
				.observe({type: "paint", buffered: true});
		} catch (e) {}
		const check = () => { try { return !!(%s); } catch (e) { return false; } };
		const loop = () => {
			if (document.readyState !== "loading" && check()) {
				w.seenAt = performance.now();
				requestAnimationFrame(() => { w.paintedAt = performance.now(); });
				return;
			}
			requestAnimationFrame(loop);
		};
		requestAnimationFrame(loop);
	})()`, cond)
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
		t.Fatalf("add paint watcher: %v", err)
	}
}

type paintTiming struct {
	SeenAt    float64 `json:"seenAt"`
	PaintedAt float64 `json:"paintedAt"`
	FCP       float64 `json:"fcp"`
}

// measurePaint navigates to u (or reloads) and waits for the watcher installed by watchPaint.
func measurePaint(t *testing.T, ctx context.Context, u string, reload bool) paintTiming {
	t.Helper()
	nav := chromedp.Reload()
	if !reload {
		nav = chromedp.Navigate(u)
	}
	if err := chromedp.Do(ctx, nav); err != nil {
		t.Fatalf("navigate %s: %v", u, err)
	}
	if body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`)); strings.Contains(body, "UI not built") {
		requireUI(t)
	}
	waitJS(t, ctx, "the paint watcher's paintedAt", `typeof window.__volleyPaint?.paintedAt === "number"`, 20*time.Second)
	m, err := chromedp.Run(ctx, chromedp.Evaluate[paintTiming](`({seenAt: window.__volleyPaint.seenAt, paintedAt: window.__volleyPaint.paintedAt, fcp: window.__volleyPaint.fcp ?? -1})`))
	if err != nil {
		t.Fatalf("read paint timing: %v", err)
	}
	return m
}

// loadBreakdown describes where the page's load went: the document, its script, DOMContentLoaded
// and the /api/ requests, from the Navigation and Resource Timing entries.
func loadBreakdown(t *testing.T, ctx context.Context) string {
	t.Helper()
	return evalString(t, ctx, `(() => {
		const r = Math.round, n = performance.getEntriesByType("navigation")[0];
		const parts = n ? ["document " + r(n.requestStart) + "-" + r(n.responseEnd), "DOMContentLoaded " + r(n.domContentLoadedEventEnd)] : [];
		for (const e of performance.getEntriesByType("resource")) {
			const u = new URL(e.name);
			if (u.pathname.startsWith("/api/") || u.pathname.endsWith(".js"))
				parts.push(u.pathname.replace(/^.*\/assets\//, "") + u.search + " " + r(e.startTime) + "-" + r(e.responseEnd));
		}
		return parts.join(", ");
	})()`)
}
