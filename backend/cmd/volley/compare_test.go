package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/net/html"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/report"
	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// seedSecond fills second sec (1…) of run i: the sample's counts (its ElapsedS and Latency are
// set by seedRuns) and the second's latency histogram (left empty: no response).
type seedSecond func(i, sec int, rng *rand.Rand, smp *metrics.Sample, h *hdr.Histogram)

// seedRuns stores n runs of one plan ("cli", vus constant VUs for secs seconds) as the engine
// would: each second's sample and histogram from fill (rng seeded with run index+1 and seed),
// then a summary of their totals and merged histogram. It returns the database file and the run
// ids, oldest first.
func seedRuns(t *testing.T, vus, secs, n int, seed uint64, fill seedSecond) (string, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "volley.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	spec := fmt.Appendf(nil, `{"name":"cli","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":%d,"duration":"%ds"}}`, vus, secs)
	p, err := st.CreatePlan(ctx, "cli", spec)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range n {
		started := time.Now().Add(time.Duration(i-10) * time.Minute)
		r, err := st.CreateRun(ctx, p.ID, p.Name, spec, started)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(i)+1, seed))
		merged := metrics.NewHist()
		sum := metrics.Summary{DurationS: float64(secs), Executor: "constant-vus"}
		for sec := 1; sec <= secs; sec++ {
			h := metrics.NewHist()
			smp := metrics.Sample{ElapsedS: sec}
			fill(i, sec, rng, &smp, h)
			merged.Merge(h)
			sum.Requests, sum.Successes, sum.Errors = sum.Requests+smp.Requests, sum.Successes+smp.Successes, sum.Errors+smp.Errors
			smp.Latency = metrics.LatencyOf(h, 0)
			data, _ := json.Marshal(smp)
			var enc string
			if h.TotalCount() > 0 {
				enc, _ = metrics.EncodeHist(h)
			}
			if err := st.AppendSample(ctx, r.ID, store.Sample{Second: sec, TMs: int64(sec), Data: data, Hist: []byte(enc)}, store.Progress{}); err != nil {
				t.Fatal(err)
			}
		}
		sum.RPS = float64(sum.Requests) / float64(secs)
		if sum.Requests > 0 {
			sum.ErrorRate = float64(sum.Errors) / float64(sum.Requests)
		}
		var enc string
		if merged.TotalCount() > 0 {
			sum.Latency = metrics.LatencyOf(merged, 0)
			enc, _ = metrics.EncodeHist(merged)
		}
		b, _ := json.Marshal(sum)
		if err := st.FinishRun(ctx, r.ID, store.StatusFinished, started.Add(time.Duration(secs)*time.Second), store.Progress{}, b, []byte(enc), ""); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return path, ids
}

// seedDB stores runs of one plan: 40 seconds each, latencies lognormal around the given medians.
func seedDB(t *testing.T, medians ...float64) (string, []int64) {
	t.Helper()
	return seedRuns(t, 5, 40, len(medians), 5, func(i, _ int, rng *rand.Rand, smp *metrics.Sample, h *hdr.Histogram) {
		for range 300 {
			_ = h.RecordValue(int64(medians[i] * 1000 * math.Exp(0.4*rng.NormFloat64())))
		}
		rps := 500 * (1 + 0.03*rng.NormFloat64())
		smp.RPS, smp.Requests, smp.Successes = rps, int64(rps), int64(rps)
		smp.Client = metrics.ClientSample{CPUPercent: 30, RSSBytes: 30 << 20}
	})
}

func writeSummary(t *testing.T, dir, name string, s metrics.Summary) string {
	t.Helper()
	b, _ := json.MarshalIndent(s, "", "  ")
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCompare runs `volley compare args…` as the binary would and returns its exit status and
// output.
func runCompare(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	c := compareCmd()
	c.SilenceUsage, c.SilenceErrors = true, true // as under the root command
	var out, errOut bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&errOut)
	c.SetArgs(args)
	err := c.Execute()
	code := 0
	var ec exitCode
	switch {
	case errors.As(err, &ec):
		code = int(ec)
	case err != nil:
		t.Fatalf("compare %v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// compareCase is a `volley compare` command line and what it must answer.
type compareCase struct {
	name   string
	args   []string
	code   int
	stdout []string // each in the output
	stderr string   // in the error output
}

// checkCompare runs c and reports what differs; ok is false when the exit status does.
func checkCompare(t *testing.T, c compareCase) (out string, ok bool) {
	t.Helper()
	code, out, errOut := runCompare(t, c.args...)
	if code != c.code {
		t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", c.name, code, c.code, out, errOut)
		return out, false
	}
	for _, w := range c.stdout {
		if !strings.Contains(out, w) {
			t.Errorf("%s: output lacks %q:\n%s", c.name, w, out)
		}
	}
	if c.stderr != "" && !strings.Contains(errOut, c.stderr) {
		t.Errorf("%s: stderr %q lacks %q", c.name, errOut, c.stderr)
	}
	return out, true
}

func TestCompareCommand(t *testing.T) {
	db, ids := seedDB(t, 5, 5, 6.5) // baseline, same, 30 % slower
	dir := t.TempDir()
	sumA := writeSummary(t, dir, "a.json", metrics.Summary{Requests: 100, RPS: 1000, ErrorRate: 0, DurationS: 30, Executor: "constant-vus",
		Latency: metrics.Latency{P50: 1, P90: 2, P95: 3, P99: 4, Max: 8}})
	sumB := writeSummary(t, dir, "b.json", metrics.Summary{Requests: 100, RPS: 700, ErrorRate: 0.02, DurationS: 30, Executor: "constant-vus",
		Latency: metrics.Latency{P50: 1, P90: 2, P95: 4.5, P99: 4, Max: 8}})
	notSummary := filepath.Join(dir, "plan.json")
	_ = os.WriteFile(notSummary, []byte(`{"name":"x"}`), 0o644)
	id := func(i int) string { return fmt.Sprint(ids[i]) }
	for _, c := range []compareCase{
		{"same runs", []string{id(0), id(1), "--db", db}, 0, []string{"no_change", "no regression", "p95", "tps"}, ""},
		{"slower run", []string{id(0), id(2), "--db", db}, 1, []string{"REGRESSION", "95% CI [+", "regression(s)"}, ""},
		{"three runs", []string{id(0), id(1), id(2), "--db", db}, 1, []string{"#" + id(1), "#" + id(2)}, ""},
		{"summary files", []string{sumA, sumB}, 0, []string{"inconclusive", "+50.0%", "-31.4%", "summary only", "no per-second data", "note: a.json: a summary only"}, ""},
		{"one run", []string{id(0), "--db", db}, 2, nil, "give 2 to 5 runs"},
		{"six runs", []string{"1", "2", "3", "4", "5", "6", "--db", db}, 2, nil, "give 2 to 5 runs"},
		{"mixed", []string{id(0), sumA, "--db", db}, 2, nil, "not both"},
		{"missing run", []string{id(0), "999", "--db", db}, 2, nil, "run 999 is not in"},
		{"duplicate", []string{id(0), id(0), "--db", db}, 2, nil, "listed twice"},
		{"no database", []string{"1", "2", "--db", filepath.Join(dir, "nope.db")}, 2, nil, "no database file"},
		{"missing file", []string{sumA, filepath.Join(dir, "nope.json")}, 2, nil, "no such file"},
		{"not a summary", []string{sumA, notSummary}, 2, nil, "not a run file"},
		{"bad flag", []string{"--bogus", "1", "2"}, 2, nil, "unknown flag"},
	} {
		checkCompare(t, c)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.db")); err == nil {
		t.Error("compare created a database file")
	}
}

// `volley run --report` writes the report from memory: no database. The load goes to a loopback
// test target for 2 s with 1 VU.
func TestRunReportFlag(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	dir := t.TempDir()
	planPath := filepath.Join(dir, "plan.json")
	_ = os.WriteFile(planPath, []byte(fmt.Sprintf(`{"name":"report flag","requests":[{"name":"home","url":%q}],"load":{"executor":"constant-vus","vus":1,"duration":"2s"}}`, tg.URL)), 0o644)
	for _, name := range []string{"report.html", "report.zh-CN.html", "report.csv"} {
		runReport = reportFile{} // the flag's state is package-level, as in the binary
		reportPath := filepath.Join(dir, name)
		c := runCmd()
		c.SilenceUsage, c.SilenceErrors = true, true
		var out, errOut bytes.Buffer
		c.SetOut(&out)
		c.SetErr(&errOut)
		args := []string{planPath, "--quiet", "--report", reportPath}
		if name == "report.zh-CN.html" {
			args = append(args, "--report-lang", "zh-CN")
		}
		c.SetArgs(args)
		if err := c.Execute(); err != nil {
			t.Fatalf("run: %v\n%s", err, errOut.String())
		}
		b, err := os.ReadFile(reportPath)
		if err != nil {
			t.Fatal(err)
		}
		switch name {
		case "report.html", "report.zh-CN.html":
			// the page of a real run: its load settings, its seven charts (throughput, latency,
			// errors, VUs, status codes, generator CPU and memory), its request in the table
			s := string(b)
			if _, err := html.Parse(bytes.NewReader(b)); err != nil || !strings.HasPrefix(s, "<!DOCTYPE html>") ||
				!strings.Contains(s, "report flag") || strings.Count(s, "<svg") != 7 || strings.Count(s, "<polyline") < 9 ||
				!strings.Contains(s, "<td>home</td><td class=\"l\">GET</td><td class=\"url\">"+tg.URL+"</td>") ||
				!strings.Contains(s, "<dd>constant-vus</dd>") || !strings.Contains(s, "<title>200</title>") || !regexp.MustCompile(`<td>home</td><td>[1-9]\d*</td>`).MatchString(s) {
				t.Errorf("%s: %.3000s", name, s)
			}
			lang, heading := `<html lang="en">`, "Load settings"
			if name == "report.zh-CN.html" {
				lang, heading = `<html lang="zh-CN">`, "负载设置"
			}
			if !strings.Contains(s, lang) || !strings.Contains(s, heading) {
				t.Errorf("%s is not in its language", name)
			}
		case "report.csv":
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) < 3 || !strings.HasPrefix(lines[0], "elapsed_s,t,requests") {
				t.Errorf("csv report: %q", lines)
			}
		}
	}
	// An unwritable path fails before any load, with status 3, and leaves nothing behind.
	runReport = reportFile{}
	c := runCmd()
	c.SilenceUsage, c.SilenceErrors = true, true
	var errOut bytes.Buffer
	c.SetErr(&errOut)
	c.SetOut(&bytes.Buffer{})
	c.SetArgs([]string{planPath, "--report", filepath.Join(dir, "missing", "r.html")})
	before := tg.Requests()
	var ec exitCode
	if err := c.Execute(); !errors.As(err, &ec) || ec != exitCannotRun || !strings.Contains(errOut.String(), "cannot write the report") {
		t.Errorf("unwritable report: %v %q", err, errOut.String())
	}
	if tg.Requests() != before {
		t.Error("load was sent although the report could not be written")
	}
	// So does a language the report does not speak, with status 2.
	runReport = reportFile{}
	c = runCmd()
	c.SilenceUsage, c.SilenceErrors = true, true
	errOut.Reset()
	c.SetErr(&errOut)
	c.SetOut(&bytes.Buffer{})
	c.SetArgs([]string{planPath, "--report", filepath.Join(dir, "r.html"), "--report-lang", "fr"})
	if err := c.Execute(); !errors.As(err, &ec) || ec != exitUsage || !strings.Contains(errOut.String(), "--report-lang must be one of en, zh-CN") {
		t.Errorf("unknown report language: %v %q", err, errOut.String())
	}
	if tg.Requests() != before {
		t.Error("load was sent although the report language is unknown")
	}
	// --report-lang without --report, and a report file whose extension names no format (.pdf,
	// none): usage errors (status 2) naming what is wrong, before any load.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--report-lang", "zh-CN"}, "--report-lang needs --report"},
		{[]string{"--report", filepath.Join(dir, "r.pdf")}, "--report r.pdf: the format follows the extension: .html, .htm, .json or .csv"},
		{[]string{"--report", filepath.Join(dir, "r")}, "--report r: the format follows the extension"},
	} {
		runReport = reportFile{}
		cmd := runCmd()
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		errOut.Reset()
		cmd.SetErr(&errOut)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetArgs(append([]string{planPath}, c.args...))
		if err := cmd.Execute(); !errors.As(err, &ec) || ec != exitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: %v %q, want %q", c.args, err, errOut.String(), c.want)
		}
	}
	if tg.Requests() != before {
		t.Error("load was sent although the report flags were wrong")
	}
	runReport = reportFile{}
}

// runFiles writes runs of a database as run files (volley run --out) and as JSON exports
// (report?format=json): the same seconds, with and without their histograms.
func runFiles(t *testing.T, db, dir string, ids []int64) (files, exports []string) {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids {
		r, err := st.GetRun(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		smps, _ := st.Samples(t.Context(), id)
		hist, _ := st.RunHistogram(t.Context(), id)
		f := metrics.RunFile{Version: metrics.RunFileVersion, Plan: r.PlanSpec, Merged: string(hist),
			Run: metrics.RunFileRun{Status: "finished", StartedAt: r.StartedAt, EndedAt: *r.EndedAt}}
		_ = json.Unmarshal(r.Summary, &f.Summary)
		var samples []metrics.Sample
		for _, s := range smps {
			var fs metrics.FileSample
			_ = json.Unmarshal(s.Data, &fs.Sample)
			samples = append(samples, fs.Sample)
			fs.Hist = string(s.Hist)
			f.Samples = append(f.Samples, fs)
		}
		b, _ := json.Marshal(f)
		files = append(files, filepath.Join(dir, fmt.Sprintf("run%d.json", id)))
		_ = os.WriteFile(files[len(files)-1], b, 0o600)
		var e bytes.Buffer
		_ = report.WriteJSON(&e, report.Report{Run: map[string]any{"id": id, "plan": json.RawMessage(r.PlanSpec)}, Summary: &f.Summary, Samples: samples})
		exports = append(exports, filepath.Join(dir, fmt.Sprintf("export%d.json", id)))
		_ = os.WriteFile(exports[len(exports)-1], e.Bytes(), 0o600)
	}
	return files, exports
}

// Run files give the verdicts the database gives; a JSON export gives the per-second ones and
// says what it lacks; a damaged or newer file is bad input.
func TestCompareRunFilesAndExports(t *testing.T) {
	db, ids := seedDB(t, 5, 5, 6.5) // baseline, same, 30 % slower
	dir := t.TempDir()
	files, exports := runFiles(t, db, dir, ids)
	b, _ := os.ReadFile(files[0])
	damaged := filepath.Join(dir, "damaged.json")
	_ = os.WriteFile(damaged, bytes.ReplaceAll(b, []byte(`"hist":"`), []byte(`"hist":"AAAA`)), 0o600)
	newer := filepath.Join(dir, "newer.json")
	_ = os.WriteFile(newer, bytes.Replace(b, []byte(`"volley_run_file":1`), []byte(`"volley_run_file":7`), 1), 0o600)
	// numbers that do not agree: the same Check as the import's
	edited := func(name string, edit func(*metrics.RunFile)) string {
		var f metrics.RunFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		edit(&f)
		out, _ := json.Marshal(&f)
		path := filepath.Join(dir, name)
		_ = os.WriteFile(path, out, 0o600)
		return path
	}
	moreRequests := edited("more.json", func(f *metrics.RunFile) { f.Requests, f.Successes = f.Requests+1, f.Successes+1 })
	negative := edited("negative.json", func(f *metrics.RunFile) { f.Samples[3].RPS = -1 })
	for _, c := range []compareCase{
		{"same run files", []string{files[0], files[1]}, 0, []string{"no_change", "no regression"}, ""},
		{"slower run file", []string{files[0], files[2]}, 1, []string{"REGRESSION", "95% CI [+", "(38 of 40 seconds usable)"}, ""},
		{"exports", []string{exports[0], exports[2]}, 0, []string{"note: export", "no latency histograms", "no latency data", "effect +"}, ""},
		{"damaged", []string{files[0], damaged}, 2, nil, "hist: not a compressed HdrHistogram"},
		{"newer", []string{files[0], newer}, 2, nil, "newer than this volley reads"},
		{"requests", []string{files[0], moreRequests}, 2, nil, "but the seconds (samples[].requests) add up to"},
		{"negative", []string{negative, files[1]}, 2, nil, "samples[3].rps: -1 is out of range"},
	} {
		out, ok := checkCompare(t, c)
		if !ok {
			continue
		}
		if strings.Contains(out, "note:") != (c.name == "exports") {
			t.Errorf("%s: notes: %s", c.name, out)
		}
	}
}
