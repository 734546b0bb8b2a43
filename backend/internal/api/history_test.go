package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/store"
)

// newStoreApp is newApp with the store at hand, to seed runs without running load.
func newStoreApp(t *testing.T) (*app, *store.Store) {
	t.Helper()
	s := newStack(t, stackConfig{})
	return s.app, s.st
}

// seeded describes a synthetic stored run.
type seeded struct {
	seconds  int
	rps      float64
	medianMs float64
	errRate  float64
	ok       *bool // thresholds_ok
	running  bool  // leave it running: no summary
	vus      int
	cpuMax   *float64 // server_cpu_max stored at the end
}

// seedRun stores a run as the StoreSink would: one sample (JSON + histogram) per second, then the
// summary with the merged histogram.
func seedRun(t *testing.T, st *store.Store, planID int64, started time.Time, s seeded, seed uint64) int64 {
	t.Helper()
	ctx := context.Background()
	p, err := st.GetPlan(ctx, planID)
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Spec
	if s.vus > 0 {
		spec = []byte(planJSON("http://127.0.0.1:9/", s.vus, "60s"))
	}
	r, err := st.CreateRun(ctx, planID, p.Name, spec, started)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	merged := metrics.NewHist()
	var reqs, errs int64
	for sec := 1; sec <= s.seconds; sec++ {
		h := metrics.NewHist()
		for range 200 {
			_ = h.RecordValue(int64(s.medianMs * 1000 * math.Exp(0.4*rng.NormFloat64())))
		}
		merged.Merge(h)
		rps := s.rps * (1 + 0.03*rng.NormFloat64())
		smp := metrics.Sample{T: started.Add(time.Duration(sec) * time.Second).UnixMilli(), ElapsedS: sec, IntervalS: 1,
			Requests: int64(rps), RPS: rps, Errors: int64(rps * s.errRate), Latency: metrics.LatencyOf(h, 0), ActiveVUs: 10,
			Client: metrics.ClientSample{CPUPercent: 50, RSSBytes: 40 << 20}}
		reqs += smp.Requests
		errs += smp.Errors
		data, _ := json.Marshal(smp)
		enc, _ := metrics.EncodeHist(h)
		if err := st.AppendSample(ctx, r.ID, store.Sample{Second: sec, TMs: smp.T, Data: data, Hist: []byte(enc)},
			store.Progress{DurationS: float64(sec), Requests: reqs, RPS: s.rps}); err != nil {
			t.Fatal(err)
		}
	}
	if s.running {
		return r.ID
	}
	sum := metrics.Summary{Requests: reqs, Errors: errs, Successes: reqs - errs, DurationS: float64(s.seconds), RPS: s.rps,
		Latency: metrics.LatencyOf(merged, 0), Executor: "constant-vus", Seconds: s.seconds, StatusCodes: map[string]int64{"200": reqs - errs},
		ErrorKinds: map[string]int64{}, ByName: map[string]metrics.NameStats{"home": {Requests: reqs, Errors: errs}}}
	if reqs > 0 {
		sum.ErrorRate = float64(errs) / float64(reqs)
	}
	data, _ := json.Marshal(sum)
	enc, _ := metrics.EncodeHist(merged)
	err = st.FinishRun(ctx, r.ID, store.StatusFinished, started.Add(time.Duration(s.seconds)*time.Second),
		store.Progress{DurationS: sum.DurationS, Requests: reqs, RPS: sum.RPS, P95Ms: sum.Latency.P95, ErrorRate: sum.ErrorRate, ThresholdsOK: s.ok,
			ServerCPUMax: s.cpuMax},
		data, []byte(enc), "")
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func mustPlanID(t *testing.T, st *store.Store, name string) int64 {
	t.Helper()
	p, err := st.CreatePlan(context.Background(), name, []byte(planJSON("http://127.0.0.1:9/", 10, "60s")))
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

type apiCase struct {
	name, method, path, body string
	status                   int
	want                     []string // fragments of the body
}

func runCases(t *testing.T, a *app, cases []apiCase) {
	t.Helper()
	for _, c := range cases {
		req := newReq(c.method, a.url+c.path, c.body)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, res.StatusCode, c.status, b)
		}
		for _, w := range c.want {
			if !bytes.Contains(b, []byte(w)) {
				t.Errorf("%s: body lacks %s: %.600s", c.name, w, b)
			}
		}
	}
}

func TestRunHistoryEndpoints(t *testing.T) {
	a, st := newStoreApp(t)
	p1, p2 := mustPlanID(t, st, "p1"), mustPlanID(t, st, "p2")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	yes, no := true, false
	r1 := seedRun(t, st, p1, t0, seeded{seconds: 3, rps: 100, medianMs: 2, ok: &yes}, 1)
	r2 := seedRun(t, st, p1, t0.Add(time.Hour), seeded{seconds: 3, rps: 300, medianMs: 2, ok: &no, errRate: 0.1}, 2)
	r3 := seedRun(t, st, p1, t0.Add(2*time.Hour), seeded{seconds: 3, rps: 200, medianMs: 2}, 3)
	r4 := seedRun(t, st, p2, t0.Add(3*time.Hour), seeded{seconds: 3, rps: 50, medianMs: 2}, 4)
	for _, c := range []apiCase{
		{"patch notes and tags", "PATCH", fmt.Sprintf("/api/runs/%d", r2), `{"notes":"after the v2 deploy","tags":["v2","baseline","v2"]}`, 200,
			[]string{`"notes":"after the v2 deploy"`, `"tags":["baseline","v2"]`, `"summary":{`}},
		{"patch tags only keeps notes", "PATCH", fmt.Sprintf("/api/runs/%d", r2), `{"tags":["baseline","v2","nightly"]}`, 200,
			[]string{`"notes":"after the v2 deploy"`, `"tags":["baseline","nightly","v2"]`}},
		{"patch another", "PATCH", fmt.Sprintf("/api/runs/%d", r4), `{"tags":["baseline"]}`, 200, []string{`"tags":["baseline"]`}},
		{"bad tag", "PATCH", fmt.Sprintf("/api/runs/%d", r1), `{"tags":["ok","Not OK"]}`, 400, []string{`"bad_request"`, `"tags[1]"`}},
		{"too long tag", "PATCH", fmt.Sprintf("/api/runs/%d", r1), `{"tags":["` + strings.Repeat("a", 41) + `"]}`, 400, []string{`"tags[0]"`}},
		{"too many tags", "PATCH", fmt.Sprintf("/api/runs/%d", r1), `{"tags":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","r","s","t","u"]}`, 400,
			[]string{`"tags":"at most 20 tags`}},
		{"notes too long", "PATCH", fmt.Sprintf("/api/runs/%d", r1), `{"notes":"` + strings.Repeat("x", store.MaxNotesLen+1) + `"}`, 400, []string{`"notes"`}},
		{"unknown field", "PATCH", fmt.Sprintf("/api/runs/%d", r1), `{"note":"x"}`, 400, []string{`"note":"unknown field"`}},
		{"tags not a list", "PATCH", fmt.Sprintf("/api/runs/%d", r1), `{"tags":"v2"}`, 400, []string{`"bad_request"`}},
		{"not JSON", "PATCH", fmt.Sprintf("/api/runs/%d", r1), `{`, 400, []string{`"bad_request"`}},
		{"patch missing run", "PATCH", "/api/runs/999", `{"notes":"x"}`, 404, []string{`"not_found"`}},
		{"list has notes and tags", "GET", "/api/runs?limit=1", "", 200, []string{`"tags":["baseline"]`, `"notes":""`, `"total":4`}},
		{"untagged run lists []", "GET", fmt.Sprintf("/api/runs?plan_id=%d&sort=rps&order=asc&limit=1", p1), "", 200,
			[]string{fmt.Sprintf(`"id":%d`, r1), `"tags":[]`, `"total":3`}},
		{"tag", "GET", "/api/runs?tag=baseline", "", 200, []string{`"total":2`}},
		{"tag and plan", "GET", fmt.Sprintf("/api/runs?tag=baseline&plan_id=%d", p2), "", 200, []string{`"total":1`, fmt.Sprintf(`"id":%d`, r4)}},
		{"thresholds failed", "GET", "/api/runs?thresholds=failed", "", 200, []string{`"total":1`, fmt.Sprintf(`"id":%d`, r2)}},
		{"thresholds passed", "GET", "/api/runs?thresholds=passed", "", 200, []string{`"total":1`, fmt.Sprintf(`"id":%d`, r1)}},
		{"outcome", "GET", "/api/runs?outcome=finished_with_errors", "", 200,
			[]string{`"total":1`, fmt.Sprintf(`"id":%d`, r2), `"outcome":"finished_with_errors"`}},
		{"outcome passed", "GET", "/api/runs?outcome=passed", "", 200, []string{`"total":3`, `"outcome":"passed"`}},
		{"outcome comma list", "GET", "/api/runs?outcome=passed,finished_with_errors", "", 200, []string{`"total":4`}},
		{"outcome repeated", "GET", "/api/runs?outcome=failed&outcome=finished_with_errors", "", 200, []string{`"total":1`, fmt.Sprintf(`"id":%d`, r2)}},
		{"outcome failed", "GET", "/api/runs?outcome=failed", "", 200, []string{`"total":0`}},
		{"empty outcome: no filter", "GET", "/api/runs?outcome=", "", 200, []string{`"total":4`}},
		{"huge bad outcome cut", "GET", "/api/runs?outcome=" + strings.Repeat("x", 5000), "", 400,
			[]string{`"outcome":"\"` + strings.Repeat("x", 64) + `…\" is not one of`}},
		{"bad outcome", "GET", "/api/runs?outcome=passed,ok", "", 400, []string{`"bad_request"`, `"outcome":"\"ok\" is not one of passed, finished_with_errors, failed, stopped"`}},
		{"from/to", "GET", "/api/runs?from=2026-03-01T12:30:00Z&to=2026-03-01T14:00:00%2B00:00", "", 200, []string{`"total":1`, fmt.Sprintf(`"id":%d`, r2)}},
		{"sort rps desc", "GET", "/api/runs?sort=rps&limit=1", "", 200, []string{fmt.Sprintf(`"id":%d`, r2)}},
		{"sort error rate", "GET", "/api/runs?sort=error_rate&order=desc&limit=1", "", 200, []string{fmt.Sprintf(`"id":%d`, r2)}},
		{"page 2", "GET", "/api/runs?sort=started_at&order=asc&limit=1&offset=2", "", 200, []string{fmt.Sprintf(`"id":%d`, r3), `"total":4`}},
		{"bad status", "GET", "/api/runs?status=done", "", 400, []string{"status must be one of"}},
		{"bad tag filter", "GET", "/api/runs?tag=A%20B", "", 400, []string{"tag"}},
		{"bad from", "GET", "/api/runs?from=yesterday", "", 400, []string{"from must be an RFC 3339"}},
		{"bad thresholds", "GET", "/api/runs?thresholds=maybe", "", 400, []string{"thresholds must be"}},
		{"bad sort", "GET", "/api/runs?sort=plan_spec", "", 400, []string{"sort must be one of"}},
		{"bad order", "GET", "/api/runs?order=up", "", 400, []string{"order must be"}},
		{"trend oldest first", "GET", fmt.Sprintf("/api/plans/%d/trend?limit=2", p1), "", 200,
			[]string{fmt.Sprintf(`{"items":[{"run_id":%d,`, r2), fmt.Sprintf(`"run_id":%d`, r3), `"p95_ms":`, `"error_rate":0.09`, `"status":"finished"`}},
		{"trend default", "GET", fmt.Sprintf("/api/plans/%d/trend", p1), "", 200, []string{fmt.Sprintf(`"run_id":%d`, r1)}},
		{"trend bad limit", "GET", fmt.Sprintf("/api/plans/%d/trend?limit=0", p1), "", 400, []string{"limit"}},
		{"unknown parameter", "GET", "/api/runs?foo=1", "", 400, []string{`"bad_request"`, `\"foo\"`}},
		{"limit too big", "GET", "/api/runs?limit=9999", "", 400, []string{`"bad_request"`, "limit"}},
		{"limit zero", "GET", "/api/runs?limit=0", "", 400, []string{`"bad_request"`, "limit"}},
		{"trend missing plan", "GET", "/api/plans/999/trend", "", 404, []string{"not_found"}},
		{"previous", "GET", fmt.Sprintf("/api/runs/%d/previous", r3), "", 200, []string{fmt.Sprintf(`"id":%d`, r2), `"summary":{`}},
		{"no previous", "GET", fmt.Sprintf("/api/runs/%d/previous", r1), "", 404, []string{"no earlier run"}},
		{"previous of another plan's first", "GET", fmt.Sprintf("/api/runs/%d/previous", r4), "", 404, nil},
		{"previous of missing run", "GET", "/api/runs/999/previous", "", 404, []string{`"not_found"`}},
	} {
		runCases(t, a, []apiCase{c})
	}
	// A checked trend order: oldest first.
	_, got := a.do("GET", fmt.Sprintf("/api/plans/%d/trend", p1), "")
	items := got["items"].([]any)
	if len(items) != 3 || items[0].(map[string]any)["run_id"].(float64) != float64(r1) {
		t.Errorf("trend: %v", items)
	}
}

// bulkSeconds stores n seconds of a run in one transaction (fast seeding of long runs).
func bulkSeconds(t *testing.T, st *store.Store, runID int64, n int) {
	t.Helper()
	err := st.DB().Transaction(func(tx *gorm.DB) error {
		for sec := 1; sec <= n; sec++ {
			rps := 1000 + 100*math.Sin(float64(sec)/30)
			p95 := 5.0
			if sec == 1234 {
				p95 = 500 // a spike the downsampled series must keep
			}
			data := fmt.Sprintf(`{"t":%d,"elapsed_s":%d,"rps":%g,"requests":%d,"latency_ms":{"p95":%g}}`, int64(sec)*1000, sec, rps, int(rps), p95)
			if err := tx.Exec("INSERT INTO run_samples (run_id, second, t_ms, data) VALUES (?, ?, ?, ?)", runID, sec, sec*1000, data).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSamplesDownsampling(t *testing.T) {
	a, st := newStoreApp(t)
	p := mustPlanID(t, st, "long")
	short := seedRun(t, st, p, time.Now(), seeded{seconds: 30, rps: 100, medianMs: 1}, 1)
	r, err := st.CreateRun(context.Background(), p, "long", []byte(`{}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	bulkSeconds(t, st, r.ID, 5000)
	type resp struct {
		Items []struct {
			ElapsedS int `json:"elapsed_s"`
			Latency  struct {
				P95 float64 `json:"p95"`
			} `json:"latency_ms"`
		} `json:"items"`
		Downsampled bool `json:"downsampled"`
		Total       int  `json:"total"`
	}
	get := func(path string) resp {
		res, err := http.Get(a.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out resp
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		path       string
		max        int
		down       bool
		total      int
		checkSpike bool
	}{
		{fmt.Sprintf("/api/runs/%d/samples", short), 30, false, 30, false},
		{fmt.Sprintf("/api/runs/%d/samples?points=10", short), 10, true, 30, false},
		{fmt.Sprintf("/api/runs/%d/samples", r.ID), 2000, true, 5000, true},
		{fmt.Sprintf("/api/runs/%d/samples?points=300", r.ID), 300, true, 5000, true},
		{fmt.Sprintf("/api/runs/%d/samples?points=6000", r.ID), 5000, false, 5000, true},
	} {
		got := get(c.path)
		n := len(got.Items)
		if n > c.max || n < c.max*3/4 || got.Downsampled != c.down || got.Total != c.total {
			t.Errorf("%s: %d items (max %d), downsampled %v, total %d", c.path, n, c.max, got.Downsampled, got.Total)
			continue
		}
		if got.Items[0].ElapsedS != 1 || got.Items[n-1].ElapsedS != c.total {
			t.Errorf("%s: first %d last %d", c.path, got.Items[0].ElapsedS, got.Items[n-1].ElapsedS)
		}
		if c.checkSpike {
			spike := false
			for _, it := range got.Items {
				spike = spike || it.Latency.P95 == 500
			}
			if !spike {
				t.Errorf("%s: the p95 spike was dropped", c.path)
			}
		}
	}
	runCases(t, a, []apiCase{
		{"points too small", "GET", fmt.Sprintf("/api/runs/%d/samples?points=1", short), "", 400, []string{"points"}},
		{"points not a number", "GET", fmt.Sprintf("/api/runs/%d/samples?points=x", short), "", 400, []string{"points"}},
		{"missing run", "GET", "/api/runs/999/samples", "", 404, nil},
	})
}

func TestDistribution(t *testing.T) {
	a, st := newStoreApp(t)
	p := mustPlanID(t, st, "dist")
	done := seedRun(t, st, p, time.Now(), seeded{seconds: 60, rps: 100, medianMs: 3}, 1) // 12 000 values
	running := seedRun(t, st, p, time.Now(), seeded{seconds: 5, rps: 100, medianMs: 3, running: true}, 2)
	type curve struct {
		Items []struct {
			Percentile float64 `json:"percentile"`
			ValueMs    float64 `json:"value_ms"`
		} `json:"items"`
		Count  int64  `json:"count"`
		Source string `json:"source"`
	}
	for _, c := range []struct {
		id     int64
		count  int64
		source string
		ps     []float64
	}{
		{done, 12000, "summary", []float64{50, 75, 90, 95, 99, 99.9, 99.99, 100}},
		{running, 1000, "seconds", []float64{50, 75, 90, 95, 99, 99.9, 100}},
	} {
		res, err := http.Get(fmt.Sprintf("%s/api/runs/%d/distribution", a.url, c.id))
		if err != nil {
			t.Fatal(err)
		}
		var got curve
		_ = json.NewDecoder(res.Body).Decode(&got)
		res.Body.Close()
		var ps []float64
		for i, it := range got.Items {
			ps = append(ps, it.Percentile)
			if i > 0 && it.ValueMs < got.Items[i-1].ValueMs {
				t.Errorf("run %d: the curve goes down at %v", c.id, it.Percentile)
			}
		}
		if got.Count != c.count || got.Source != c.source || fmt.Sprint(ps) != fmt.Sprint(c.ps) {
			t.Errorf("run %d: count %d source %s percentiles %v; want %d %s %v", c.id, got.Count, got.Source, ps, c.count, c.source, c.ps)
		}
	}
	run, _ := st.GetRun(context.Background(), done)
	var sum metrics.Summary
	_ = json.Unmarshal(run.Summary, &sum)
	_, body := a.do("GET", fmt.Sprintf("/api/runs/%d/distribution", done), "")
	items := body["items"].([]any)
	if got := items[3].(map[string]any)["value_ms"].(float64); got != sum.Latency.P95 {
		t.Errorf("p95 %v, summary says %v", got, sum.Latency.P95)
	}
	if got := items[len(items)-1].(map[string]any)["value_ms"].(float64); got != sum.Latency.Max {
		t.Errorf("max %v, summary says %v", got, sum.Latency.Max)
	}
	runCases(t, a, []apiCase{{"missing run", "GET", "/api/runs/999/distribution", "", 404, nil}})
}

func TestCompareEndpoint(t *testing.T) {
	a, st := newStoreApp(t)
	p := mustPlanID(t, st, "cmp")
	t0 := time.Now().Add(-time.Hour)
	base := seedRun(t, st, p, t0, seeded{seconds: 60, rps: 1000, medianMs: 5}, 1)
	same := seedRun(t, st, p, t0.Add(time.Minute), seeded{seconds: 60, rps: 1000, medianMs: 5}, 2)
	slow := seedRun(t, st, p, t0.Add(2*time.Minute), seeded{seconds: 60, rps: 1000, medianMs: 6.5, vus: 20}, 3)
	short := seedRun(t, st, p, t0.Add(3*time.Minute), seeded{seconds: 5, rps: 1000, medianMs: 5}, 4)
	ids := fmt.Sprintf("%d,%d,%d,%d", base, same, slow, short)
	runCases(t, a, []apiCase{
		{"compare", "GET", "/api/compare?ids=" + ids, "", 200, []string{
			fmt.Sprintf(`"baseline":%d`, base), `"metric":"p95"`, `"verdict":"regression"`, `"verdict":"no_change"`,
			`"verdict":"inconclusive"`, `"verdict":"baseline"`, `"code":"load_differs"`, `"code":"few_seconds"`, `"ci":[`, `"p_value":`,
			`"series":{`, `"notes":""`, `"threshold":0.05,`, `"error_threshold":0.001,`, `"confidence":0.95,`, `"effect":`,
			`"ci_low":`, `"ci_high":`, `"effect_kind":"relative"`, `"follows_load":true`, `"verdict":"none"`, `"decide_seconds":30`, `"load":true`}},
		{"threshold", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&threshold=50&error_threshold=1", base, slow), "", 200, []string{
			`"threshold":0.5,`, `"error_threshold":0.01,`, `"floor_pct":50`}},
		{"threshold zero", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&threshold=0", base, slow), "", 400, []string{"threshold must be a percentage"}},
		{"threshold text", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&error_threshold=x", base, slow), "", 400, []string{"error_threshold must be a percentage"}},
		{"threshold twice", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&threshold=5&threshold=0", base, slow), "", 400, []string{"threshold is given 2 times"}},
		{"threshold tiny", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&threshold=1e-320", base, slow), "", 400, []string{"threshold must be a percentage from 0.1 to 100"}},
		{"error threshold tiny", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&error_threshold=0.001", base, slow), "", 400, []string{"error_threshold must be a percentage from 0.01 to 100"}},
		{"threshold at its minimum", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&threshold=0.1", base, slow), "", 200, []string{`"threshold":0.001,`}},
		{"one id", "GET", fmt.Sprintf("/api/compare?ids=%d", base), "", 400, []string{"compare 2 to 5 runs"}},
		{"six ids", "GET", "/api/compare?ids=1,2,3,4,5,6", "", 400, []string{"compare 2 to 5 runs"}},
		{"no ids", "GET", "/api/compare", "", 400, []string{"ids is required"}},
		{"bad id", "GET", "/api/compare?ids=1,x", "", 400, []string{"not a positive integer"}},
		{"duplicate", "GET", fmt.Sprintf("/api/compare?ids=%d,%d", base, base), "", 400, []string{"twice"}},
		{"baseline not listed", "GET", fmt.Sprintf("/api/compare?ids=%d,%d&baseline=%d", base, same, slow), "", 400, []string{"not one of ids"}},
		{"missing run", "GET", fmt.Sprintf("/api/compare?ids=%d,999", base), "", 404, []string{"run 999 not found"}},
	})

	var got struct {
		Runs     []map[string]any `json:"runs"`
		Baseline int64            `json:"baseline"`
		Metrics  []struct {
			Metric string `json:"metric"`
			Values []struct {
				RunID   int64  `json:"run_id"`
				Verdict string `json:"verdict"`
			} `json:"values"`
		} `json:"metrics"`
		Series map[string][]map[string]any `json:"series"`
	}
	res, err := http.Get(fmt.Sprintf("%s/api/compare?ids=%d,%d&baseline=%d&points=20", a.url, base, slow, slow))
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(res.Body).Decode(&got)
	res.Body.Close()
	if got.Baseline != slow || len(got.Runs) != 2 || len(got.Series) != 2 || len(got.Series[fmt.Sprint(base)]) > 20 {
		t.Fatalf("compare: baseline %d, %d runs, series %d", got.Baseline, len(got.Runs), len(got.Series))
	}
	if s := got.Series[fmt.Sprint(base)]; s[0]["elapsed_s"].(float64) != 1 || s[len(s)-1]["elapsed_s"].(float64) != 60 {
		t.Errorf("series ends: %v … %v", s[0]["elapsed_s"], s[len(s)-1]["elapsed_s"])
	}
	for _, m := range got.Metrics {
		if m.Metric == "p95" && (m.Values[0].RunID != base || m.Values[0].Verdict != "improvement" || m.Values[1].Verdict != "baseline") {
			t.Errorf("p95 against the slow baseline: %+v", m.Values)
		}
	}
}

func TestReportEndpoint(t *testing.T) {
	a, st := newStoreApp(t)
	p := mustPlanID(t, st, `report <plan>`)
	id := seedRun(t, st, p, time.Now(), seeded{seconds: 20, rps: 500, medianMs: 2, errRate: 0.01}, 1)
	notes := "shared with the team"
	if _, err := st.UpdateRunMeta(context.Background(), id, &notes, &[]string{"release"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format, media string
		check         func(b []byte) error
	}{
		{"json", "application/json", func(b []byte) error {
			var v struct {
				Run     map[string]any   `json:"run"`
				Summary map[string]any   `json:"summary"`
				Samples []map[string]any `json:"samples"`
			}
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			if v.Run["id"].(float64) != float64(id) || v.Run["notes"] != notes || v.Run["plan"] == nil || v.Summary["requests"] == nil || len(v.Samples) != 20 {
				return fmt.Errorf("json report: run %v, %d samples", v.Run, len(v.Samples))
			}
			return nil
		}},
		{"csv", "text/csv", func(b []byte) error {
			rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
			if err != nil {
				return err
			}
			if len(rows) != 21 || rows[0][0] != "elapsed_s" || rows[0][13] != "generator_bound" || rows[20][0] != "20" {
				return fmt.Errorf("csv report: %d rows, header %v", len(rows), rows[0])
			}
			return nil
		}},
		{"html", "text/html", func(b []byte) error {
			s := string(b)
			if !strings.HasPrefix(s, "<!DOCTYPE html>") || !strings.Contains(s, "report &lt;plan&gt;") || strings.Count(s, "<svg") < 6 ||
				!strings.Contains(s, `<html lang="en">`) || !strings.Contains(s, `<section id="settings">`) || !strings.Contains(s, "http://127.0.0.1:9/") ||
				!strings.Contains(s, "shared with the team") || strings.Contains(s, "src=") || strings.Contains(s, "href=") {
				return fmt.Errorf("html report: %.300s", s)
			}
			return nil
		}},
	} {
		res, err := http.Get(fmt.Sprintf("%s/api/runs/%d/report?format=%s", a.url, id, c.format))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := fmt.Sprintf(`attachment; filename="volley-run-%d.%s"`, id, c.format)
		if res.StatusCode != 200 || res.Header.Get("Content-Disposition") != want || !strings.HasPrefix(res.Header.Get("Content-Type"), c.media) {
			t.Errorf("%s: %d %v", c.format, res.StatusCode, res.Header)
		}
		if err := c.check(b); err != nil {
			t.Errorf("%s: %v", c.format, err)
		}
	}
	res, _ := http.Get(fmt.Sprintf("%s/api/runs/%d/report", a.url, id))
	if res.Header.Get("Content-Disposition") != fmt.Sprintf(`attachment; filename="volley-run-%d.html"`, id) {
		t.Errorf("default format: %v", res.Header)
	}
	res.Body.Close()
	// The page's language: the lang parameter, else the browser's Accept-Language, else English.
	for _, c := range []struct{ query, accept, want string }{
		{"&lang=zh-CN", "", `<html lang="zh-CN">`},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", `<html lang="zh-CN">`},
		{"&lang=en", "zh-CN", `<html lang="en">`},
		{"", "fr", `<html lang="en">`},
	} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/runs/%d/report?format=html%s", a.url, id, c.query), nil)
		if c.accept != "" {
			req.Header.Set("Accept-Language", c.accept)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), c.want) || res.Header.Get("Vary") != "Accept-Language" {
			t.Errorf("lang %q, Accept-Language %q: %d, want %s", c.query, c.accept, res.StatusCode, c.want)
		}
	}
	runCases(t, a, []apiCase{
		{"bad lang", "GET", fmt.Sprintf("/api/runs/%d/report?format=html&lang=fr", id), "", 400, []string{"lang must be one of en, zh-CN", `"fields":{"lang":"\"fr\" is not one of en, zh-CN"}`}},
		{"bad format", "GET", fmt.Sprintf("/api/runs/%d/report?format=pdf", id), "", 400, []string{"format must be one of json, csv, html"}},
		{"missing run", "GET", "/api/runs/999/report?format=csv", "", 404, []string{`"not_found"`}},
	})
}
