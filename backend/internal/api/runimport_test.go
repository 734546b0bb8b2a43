package api_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// importFile is a run file of n seconds of plan name, as `volley run --out` writes it: 50
// requests a second, latencies around medianMs (spread: their relative spread), the seconds cycling
// through 20 distinct histograms (building thousands of histograms is slow under -race).
func importFile(t *testing.T, name string, n int, medianMs, spread float64, seed uint64) *metrics.RunFile {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	start := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	f := &metrics.RunFile{Version: metrics.RunFileVersion,
		Run:  metrics.RunFileRun{Status: "finished", StartedAt: start, EndedAt: start.Add(time.Duration(n) * time.Second)},
		Plan: json.RawMessage(fmt.Sprintf(`{"name":%q,"requests":[{"name":"home","url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":2,"duration":"%ds"}}`, name, n))}
	type variant struct {
		values []int64
		enc    string
		lat    metrics.Latency
	}
	variants := make([]variant, min(n, 20))
	for i := range variants {
		h := metrics.NewHist()
		for range 50 {
			v := int64(medianMs * 1000 * math.Exp(spread*rng.NormFloat64()))
			_ = h.RecordValue(v)
			variants[i].values = append(variants[i].values, v)
		}
		variants[i].enc, _ = metrics.EncodeHist(h)
		variants[i].lat = metrics.LatencyOf(h, 0)
	}
	merged := metrics.NewHist()
	for sec := 1; sec <= n; sec++ {
		v := variants[(sec-1)%len(variants)]
		f.Samples = append(f.Samples, metrics.FileSample{Sample: metrics.Sample{T: start.Add(time.Duration(sec) * time.Second).UnixMilli(),
			ElapsedS: sec, IntervalS: 1, Requests: 50, RPS: 50, Successes: 50, Latency: v.lat,
			StatusCodes: map[string]int64{"200": 50}, ActiveVUs: 2}, Hist: v.enc})
	}
	for i, v := range variants {
		for _, x := range v.values {
			_ = merged.RecordValues(x, int64((n-i+len(variants)-1)/len(variants)))
		}
	}
	f.Summary = metrics.Summary{Requests: int64(50 * n), Successes: int64(50 * n), DurationS: float64(n), RPS: 50,
		Latency: metrics.LatencyOf(merged, 0), StatusCodes: map[string]int64{"200": int64(50 * n)}, Executor: "constant-vus", Seconds: n,
		Thresholds: []metrics.ThresholdResult{{Expr: "p(95)<500", OK: true}}}
	f.Merged, _ = metrics.EncodeHist(merged)
	return f
}

func encodeFile(t *testing.T, f *metrics.RunFile) string {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A run file uploaded by a tester lands in the history under its plan, tagged cli, with its
// seconds and histograms: the run view, the distribution and compare work on it.
func TestImportRun(t *testing.T) {
	a := newAuthApp(t, true, true)
	admin := a.login("ann", annPW)
	secret, _, err := a.svc.CreateToken(t.Context(), "tom", "ci")
	if err != nil {
		t.Fatal(err)
	}
	tom := cred{bearer: secret}

	a.must(a.login("vic", vicPW), 403, "POST", "/api/runs/import", encodeFile(t, importFile(t, "ci plan", 12, 5, 0.2, 1)))
	first := a.must(tom, 201, "POST", "/api/runs/import", encodeFile(t, importFile(t, "ci plan", 12, 5, 0.2, 1)))
	run := first["run"].(map[string]any)
	if first["plan_created"] != true || run["status"] != "finished" || run["plan_name"] != "ci plan" ||
		!strings.HasPrefix(fmt.Sprint(run["tags"]), "[cli import-") || run["thresholds_ok"] != true || run["requests"] != float64(600) {
		t.Fatalf("first import: %v", first)
	}
	second := a.must(tom, 201, "POST", "/api/runs/import", encodeFile(t, importFile(t, "ci plan", 12, 5, 0.2, 2)))
	if second["plan_created"] != false || second["run"].(map[string]any)["plan_id"] != run["plan_id"] {
		t.Fatalf("second import of the same plan: %v", second)
	}
	id1, id2 := int(run["id"].(float64)), int(second["run"].(map[string]any)["id"].(float64))
	samples := a.must(tom, 200, "GET", fmt.Sprintf("/api/runs/%d/samples", id1), "")
	if items, _ := samples["items"].([]any); len(items) != 12 {
		t.Errorf("samples: %v", samples)
	}
	if d := a.must(tom, 200, "GET", fmt.Sprintf("/api/runs/%d/distribution", id1), ""); d["count"] == float64(0) || d["source"] != "summary" {
		t.Errorf("distribution: %v", d)
	}
	cmp := a.must(tom, 200, "GET", fmt.Sprintf("/api/compare?ids=%d,%d", id1, id2), "")
	if s := fmt.Sprint(cmp["seconds"]); !strings.Contains(s, "usable:10") {
		t.Errorf("compare has no per-second data of the imported runs: %v", cmp["seconds"])
	}
	// by plan id, under another plan than the file names
	other := a.must(tom, 201, "POST", "/api/plans", `{"name":"other","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`)
	third := a.must(tom, 201, "POST", fmt.Sprintf("/api/runs/import?plan_id=%v", other["id"]), encodeFile(t, importFile(t, "ci plan", 3, 5, 0.2, 3)))
	if r := third["run"].(map[string]any); r["plan_id"] != other["id"] || r["plan_name"] != "other" {
		t.Errorf("import by plan id: %v", third)
	}
	log := fmt.Sprint(auditEntries(a, admin))
	if !strings.Contains(log, "run.import") || !strings.Contains(log, "plan_created:true") || !strings.Contains(log, "actor:tom") {
		t.Errorf("audit: %s", log)
	}
}

// Nothing is stored from a file that is wrong anywhere; histograms are decoded with limits.
func TestImportRunRefusesBadFiles(t *testing.T) {
	a := newAuthApp(t, true, false) // loopback, no users: the local admin
	a.must(cred{}, 201, "POST", "/api/runs/import", encodeFile(t, importFile(t, "p", 3, 5, 0.2, 1)))
	zipBomb := func() string { // a V2 histogram in Volley's geometry whose counts inflate to 4 MiB
		raw := make([]byte, 40+4<<20)
		binary.BigEndian.PutUint32(raw[0:], 0x1c849303|0x10)
		binary.BigEndian.PutUint32(raw[4:], 4<<20)
		binary.BigEndian.PutUint32(raw[12:], 3)
		binary.BigEndian.PutUint64(raw[16:], 1)
		binary.BigEndian.PutUint64(raw[24:], 3_600_000_000)
		binary.BigEndian.PutUint64(raw[32:], math.Float64bits(1))
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		head := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 0x1c849304|0x10), uint32(z.Len()))
		return base64.StdEncoding.EncodeToString(append(head, z.Bytes()...))
	}()
	masked := importFile(t, "new plan", 3, 5, 0.2, 1)
	masked.Plan = json.RawMessage(`{"name":"new plan","requests":[{"url":"http://127.0.0.1:9/","headers":{"Authorization":"Bearer abc"}}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`)
	for name, c := range map[string]struct {
		edit   func(*metrics.RunFile)
		body   string
		query  string
		status int
		want   string
	}{
		"negative":         {edit: func(f *metrics.RunFile) { f.Samples[1].Requests = -5 }, status: 400, want: "samples[1].requests"},
		"huge number":      {body: strings.Replace(encodeFile(t, importFile(t, "p", 3, 5, 0.2, 1)), `"rps":50`, `"rps":1e300`, 1), status: 400, want: "out of range"},
		"bad histogram":    {edit: func(f *metrics.RunFile) { f.Samples[0].Hist = zipBomb }, status: 400, want: "decompresses to more than"},
		"bad merged":       {edit: func(f *metrics.RunFile) { f.Merged = "not base64!" }, status: 400, want: "hist"},
		"running":          {edit: func(f *metrics.RunFile) { f.Run.Status = "running" }, status: 400, want: "run.status"},
		"no start":         {edit: func(f *metrics.RunFile) { f.Run.StartedAt = time.Time{} }, status: 400, want: "run.started_at"},
		"end before start": {edit: func(f *metrics.RunFile) { f.Run.EndedAt = f.Run.StartedAt.Add(-time.Second) }, status: 400, want: "run.ended_at"},
		"no plan":          {edit: func(f *metrics.RunFile) { f.Plan = nil }, status: 400, want: "no plan"},
		"bare summary":     {body: `{"requests":1,"rps":1,"latency_ms":{}}`, status: 400, want: "bare summary"},
		"two values":       {body: encodeFile(t, importFile(t, "p", 3, 5, 0.2, 1)) + "{}", status: 400, want: "more than one"},
		"unknown plan id":  {query: "?plan_id=999", status: 404, want: "plan 999"},
		"bad plan id":      {query: "?plan_id=x", status: 400, want: "plan_id"},
		"unknown param":    {query: "?plan=1", status: 400, want: "unknown parameter"},
		"masked new plan":  {body: encodeFile(t, masked), status: 400, want: "masked secret header values"},
		"too large":        {body: `{"samples":[` + strings.Repeat(`{"elapsed_s":1},`, 33<<20/16) + `{}]}`, status: 413, want: "at most 32 MiB"},
	} {
		body := c.body
		if body == "" {
			f := importFile(t, "p", 3, 5, 0.2, 1)
			if c.edit != nil {
				c.edit(f)
			}
			body = encodeFile(t, f)
		}
		st, m, _ := a.do(cred{}, "POST", "/api/runs/import"+c.query, body)
		if st != c.status || !strings.Contains(fmt.Sprint(m), c.want) {
			t.Errorf("%s: %d %v, want %d with %q", name, st, m, c.status, c.want)
		}
		if e, _ := m["error"].(map[string]any); st == 400 || st == 413 {
			if fields, _ := e["fields"].(map[string]any); len(fields) == 0 || fields[""] != nil {
				t.Errorf("%s: the error names no field: %v", name, e)
			}
		}
	}
	if runs := a.must(cred{}, 200, "GET", "/api/runs", ""); runs["total"] != float64(1) {
		t.Errorf("refused imports left runs behind: %v", runs["total"])
	}
	if plans := a.must(cred{}, 200, "GET", "/api/plans", ""); plans["total"] != float64(1) {
		t.Errorf("refused imports left plans behind: %v", plans["total"])
	}
}

// The body bound of an import is above the API's 1 MiB: a run file of 1500 seconds is stored.
func TestImportRunTakesLongRuns(t *testing.T) {
	a := newAuthApp(t, true, false)
	body := encodeFile(t, importFile(t, "long", 1500, 5, 2, 4))
	if len(body) < 1<<20 {
		t.Fatalf("the file is only %d bytes", len(body))
	}
	m := a.must(cred{}, 201, "POST", "/api/runs/import", body)
	if r := m["run"].(map[string]any); r["duration_s"] != float64(1500) {
		t.Errorf("long import: %v", r)
	}
}

func replaceLast(s, old, new string) string {
	i := strings.LastIndex(s, old)
	return s[:i] + new + s[i+len(old):]
}

// importStatus posts body and returns the status, the error's fields and message.
func importStatus(a *authApp, query, body string) (int, map[string]any, string) {
	st, m, _ := a.do(cred{}, "POST", "/api/runs/import"+query, body)
	e, _ := m["error"].(map[string]any)
	fields, _ := e["fields"].(map[string]any)
	msg, _ := e["message"].(string)
	return st, fields, msg
}

// A run file's plan is checked as a new plan is, whether it is stored under plan_id, under the
// plan of its name or as a new plan; its fields are named plan.<path>.
func TestImportRunChecksPlan(t *testing.T) {
	a := newAuthApp(t, true, false)
	a.must(cred{}, 201, "POST", "/api/plans", `{"name":"p","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`)
	deep := strings.Repeat(`{"x":`, 500) + "1" + strings.Repeat("}", 500)
	for name, c := range map[string]struct {
		plan, field string
	}{
		"vus":       {`{"name":"p","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":-3,"duration":"1s"}}`, "plan.load.vus"},
		"url":       {`{"name":"p","requests":[{"url":"ftp://x"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "plan.requests[0].url"},
		"unknown":   {`{"name":"p","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"},"junk":1}`, "plan.junk"},
		"deep":      {`{"name":"p","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"},"junk":` + deep + `}`, "plan"},
		"long name": {`{"name":"` + strings.Repeat("n", 5000) + `","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "plan.name"},
	} {
		for _, query := range []string{"", "?plan_id=1"} {
			f := importFile(t, "p", 3, 5, 0.2, 1)
			f.Plan = json.RawMessage(c.plan)
			st, fields, msg := importStatus(a, query, encodeFile(t, f))
			if st != 400 || fields[c.field] == nil {
				t.Errorf("%s%s: %d %v %s, want 400 naming %s", name, query, st, fields, msg, c.field)
			}
		}
	}
	// a secret header volley run masked is no problem for the plan that exists
	masked := importFile(t, "p", 3, 5, 0.2, 2)
	masked.Plan = json.RawMessage(`{"name":"p","requests":[{"url":"http://127.0.0.1:9/","headers":{"Authorization":"********"}}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`)
	a.must(cred{}, 201, "POST", "/api/runs/import", encodeFile(t, masked))
	masked.Plan = json.RawMessage(strings.Replace(string(masked.Plan), `"p"`, `"new"`, 1))
	if st, fields, _ := importStatus(a, "", encodeFile(t, masked)); st != 400 || fields["plan.requests[0].headers"] == nil {
		t.Errorf("a new plan from masked headers: %d %v", st, fields)
	}
	if runs := a.must(cred{}, 200, "GET", "/api/runs", ""); runs["total"] != float64(1) {
		t.Errorf("runs: %v", runs["total"])
	}
}

// The numbers of a file must agree; decoding errors name the field in words, not in Go's.
func TestImportRunFieldErrors(t *testing.T) {
	a := newAuthApp(t, true, false)
	good := encodeFile(t, importFile(t, "p", 3, 5, 0.2, 1))
	codes := map[string]int64{}
	for i := range 9999 {
		codes[fmt.Sprintf("x%d", i)] = 1
	}
	for name, c := range map[string]struct {
		edit  func(*metrics.RunFile)
		body  string
		field string
		want  string
	}{
		"negative rate":  {edit: func(f *metrics.RunFile) { f.Samples[1].RPS = -1 }, field: "samples[1].rps"},
		"sum of seconds": {edit: func(f *metrics.RunFile) { f.Summary.Requests += 50; f.Summary.Successes += 50 }, field: "requests"},
		"outcomes":       {edit: func(f *metrics.RunFile) { f.Samples[2].Errors = 3 }, field: "samples[2].requests"},
		"beyond the run": {edit: func(f *metrics.RunFile) { f.Run.EndedAt = f.Run.StartedAt }, field: "samples[2].elapsed_s", want: "beyond the run's 0 s"},
		"status key":     {edit: func(f *metrics.RunFile) { f.Samples[0].StatusCodes = map[string]int64{"2000": 50} }, field: "samples[0].status_codes"},
		"many codes":     {edit: func(f *metrics.RunFile) { f.Samples[0].StatusCodes = codes }, field: "samples[0].status_codes", want: "at most 501"},
		"threshold":      {edit: func(f *metrics.RunFile) { f.Thresholds[0].Expr = "fast enough" }, field: "thresholds[0].expr"},
		"huge integer":   {body: strings.Replace(good, `"requests":150`, `"requests":1e300`, 1), field: "requests", want: "must be an integer"},
		"string rate":    {body: replaceLast(good, `"rps":50`, `"rps":"x"`), field: "samples[2].rps", want: "must be a number"},
		"array":          {body: `[]`, field: "body", want: "must be a JSON object"},
		"bad time":       {body: strings.Replace(good, `"ended_at":"`, `"ended_at":"x`, 1), field: "run.ended_at", want: "RFC 3339"},
		"syntax":         {body: replaceLast(good, `"rps":50`, `"rps":50,}`), field: "samples[2].rps", want: "not valid JSON"},
		"cut off":        {body: good[:len(good)/2], field: "body", want: "ends early"},
		"bad hist":       {edit: func(f *metrics.RunFile) { f.Samples[1].Hist = "AAAA" }, field: "samples[1].hist"},
	} {
		body := c.body
		if body == "" {
			f := importFile(t, "p", 3, 5, 0.2, 1)
			c.edit(f)
			body = encodeFile(t, f)
		}
		st, fields, msg := importStatus(a, "", body)
		if st != 400 || fields[c.field] == nil || !strings.Contains(fmt.Sprint(fields[c.field]), c.want) || strings.Contains(msg, "Go ") {
			t.Errorf("%s: %d %v %q, want 400 naming %s with %q", name, st, fields, msg, c.field, c.want)
		}
	}
	if runs := a.must(cred{}, 200, "GET", "/api/runs", ""); runs["total"] != float64(0) {
		t.Errorf("refused imports left runs behind: %v", runs["total"])
	}
}

// Uploading a file again (a CI retry) answers 200 with the run stored the first time, even when
// the uploads run at once; a file with run.id is known by it.
func TestImportRunIdempotent(t *testing.T) {
	a := newAuthApp(t, true, false)
	body := encodeFile(t, importFile(t, "p", 3, 5, 0.2, 1))
	statuses := make(chan int, 3)
	ids := make(chan any, 3)
	for range 3 {
		go func() {
			st, m, _ := a.do(cred{}, "POST", "/api/runs/import", body)
			statuses <- st
			r, _ := m["run"].(map[string]any)
			ids <- r["id"]
		}()
	}
	got := map[int]int{}
	first := <-ids
	for range 3 {
		got[<-statuses]++
	}
	for range 2 {
		if id := <-ids; id != first {
			t.Errorf("run ids %v and %v", first, id)
		}
	}
	if got[201] != 1 || got[200] != 2 {
		t.Errorf("statuses: %v, want one 201 and two 200", got)
	}
	again := a.must(cred{}, 200, "POST", "/api/runs/import", body)
	if again["already_imported"] != true || again["run"].(map[string]any)["id"] != first {
		t.Errorf("again: %v", again)
	}
	// known by run.id: the same run re-encoded is the same run; another run is another
	f := importFile(t, "p", 3, 5, 0.2, 2)
	f.Run.ID = "6f1c2c1e-7b1e-4c4e-9d0e-2a4f7f1b3c5d"
	a.must(cred{}, 201, "POST", "/api/runs/import", encodeFile(t, f))
	b, _ := json.MarshalIndent(f, "", "  ")
	if m := a.must(cred{}, 200, "POST", "/api/runs/import", string(b)); m["already_imported"] != true {
		t.Errorf("same run.id: %v", m)
	}
	f.Run.ID = "0a1c2c1e-7b1e-4c4e-9d0e-2a4f7f1b3c5d"
	a.must(cred{}, 201, "POST", "/api/runs/import", encodeFile(t, f))
	if runs := a.must(cred{}, 200, "GET", "/api/runs", ""); runs["total"] != float64(3) {
		t.Errorf("runs: %v, want 3", runs["total"])
	}
}
