package metrics

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestValidText(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  string
		cut   bool
	}{
		{"plain", 10, "plain", false},
		{"plain", 3, "pla", true},
		{"a\xffb", 10, "a\uFFFDb", false},
		{"a\xffb", 3, "a", true}, // U+FFFD is 3 bytes: it does not fit after "a"
		{"日本", 4, "日", true},     // never half a rune
		{"", 0, "", false},
	} {
		got, cut := ValidText([]byte(c.in), c.limit)
		if got != c.want || cut != c.cut || !utf8.ValidString(got) || len(got) > c.limit {
			t.Errorf("ValidText(%q, %d) = %q, %v; want %q, %v", c.in, c.limit, got, cut, c.want, c.cut)
		}
	}
}

func TestSortFailures(t *testing.T) {
	g := []FailureGroup{{Message: "b", Count: 2}, {Message: OtherFailures, Count: 9}, {Message: "a", Count: 2}, {Message: "c", Count: 5}}
	SortFailures(g)
	var got []string
	for _, x := range g {
		got = append(got, x.Message)
	}
	if strings.Join(got, ",") != "(other),c,a,b" {
		t.Errorf("order %v", got)
	}
}

// TestRunFileFailureBounds: an imported file's failure groups are held to the bounds the engine
// keeps (POST /api/runs/import takes files from anyone with a token).
func TestRunFileFailureBounds(t *testing.T) {
	valid := func() *RunFile {
		groups := []FailureGroup{
			{Request: "get", Kind: "status_5xx", Status: 503, Message: "HTTP 503 Service Unavailable", Count: 2,
				Sample: &FailureSample{Status: 503, Headers: [][2]string{{"Content-Type", "text/plain"}}, Body: "busy"}},
			{Request: "get", Kind: "connect_refused", Message: "dial tcp 127.0.0.1:1: connect: connection refused", Count: 1},
		}
		return &RunFile{Version: RunFileVersion,
			Summary: Summary{Requests: 4, Successes: 1, Errors: 3, Failures: groups},
			Run:     RunFileRun{Status: "finished", StartedAt: time.Unix(1e9, 0), EndedAt: time.Unix(1e9+1, 0)},
			Samples: []FileSample{{Sample: Sample{ElapsedS: 1, Requests: 4, Successes: 1, Errors: 3, Failures: groups}}}}
	}
	if err := valid().Check(); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	b, _ := json.Marshal(valid())
	var back RunFile
	if err := json.Unmarshal(b, &back); err != nil || back.Check() != nil || back.Failures[0].Sample.Body != "busy" {
		t.Fatalf("round trip: %v %+v", err, back.Failures)
	}
	many := func(n int) []FailureGroup {
		g := make([]FailureGroup, n)
		for i := range g {
			g[i] = FailureGroup{Kind: "other", Message: strings.Repeat("m", i+1), Count: 1}
		}
		return g
	}
	for name, c := range map[string]struct {
		edit func(*RunFile)
		want string
	}{
		"too many groups":      {func(f *RunFile) { f.Failures = many(102) }, "failures: 102 groups, at most 101"},
		"too many a second":    {func(f *RunFile) { f.Samples[0].Failures = many(102) }, "samples[0].failures: 102 groups"},
		"counts beyond errors": {func(f *RunFile) { f.Failures[0].Count = 3 }, "failures: 4 failures counted, but the run has 3 errors"},
		"long message":         {func(f *RunFile) { f.Failures[1].Message = strings.Repeat("x", MaxFailureMessage+1) }, "failures[1].message"},
		"empty message":        {func(f *RunFile) { f.Failures[1].Message = "" }, "failures[1].message"},
		"invalid utf-8":        {func(f *RunFile) { f.Failures[1].Message = "a\xff" }, "failures[1].message"},
		"long request":         {func(f *RunFile) { f.Samples[0].Failures[0].Request = strings.Repeat("r", 300) }, "samples[0].failures[0].request"},
		"unknown kind":         {func(f *RunFile) { f.Failures[0].Kind = "nope" }, `failures[0].kind: "nope" is not an error kind`},
		"bad status":           {func(f *RunFile) { f.Failures[0].Status = 42 }, "failures[0].status"},
		"zero count":           {func(f *RunFile) { f.Failures[1].Count = 0 }, "failures[1].count: 0"},
		"negative count":       {func(f *RunFile) { f.Failures[1].Count = -5 }, "failures[1].count"},
		"duplicate":            {func(f *RunFile) { f.Failures[1] = f.Failures[0]; f.Failures[0].Count, f.Failures[1].Count = 1, 1 }, "failures[1]: the same request"},
		"sample status":        {func(f *RunFile) { f.Failures[0].Sample.Status = 0 }, "failures[0].sample.status"},
		"many headers":         {func(f *RunFile) { f.Failures[0].Sample.Headers = make([][2]string, MaxSampleHeaders+1) }, "sample.headers: 65 headers"},
		"long header":          {func(f *RunFile) { f.Failures[0].Sample.Headers[0][1] = strings.Repeat("v", 257) }, "sample.headers[0]"},
		"long body":            {func(f *RunFile) { f.Failures[0].Sample.Body = strings.Repeat("b", MaxSampleBody+1) }, "sample.body"},
		"body not utf-8":       {func(f *RunFile) { f.Samples[0].Failures[0].Sample.Body = "\xc3" }, "samples[0].failures[0].sample.body"},
		"sample of status 0":   {func(f *RunFile) { f.Failures[1].Sample = &FailureSample{Status: 200} }, "failures[1].sample: a group of status 0"},
		"empty kind":           {func(f *RunFile) { f.Samples[0].Failures[1].Kind = "" }, "samples[0].failures[1].kind: empty"},
		"no (other)":           {func(f *RunFile) { f.Failures = many(101) }, "failures: 101 groups and no (other) group"},
		"second beyond errors": {func(f *RunFile) { f.Samples[0].Failures[1].Count = 2 }, "samples[0].failures: 4 failures counted, but the run has 3 errors"},
		"by_name sum": {func(f *RunFile) { f.ByName = map[string]NameStats{"get": {Requests: 3, Errors: 3}} },
			"by_name: the requests of the rows add up to 3, not the run's 4"},
		"p50 above max": {func(f *RunFile) { f.Timing.Wait = Latency{P50: 5, Max: 4} }, "timing.wait_ms.p50: 5 is above max (4)"},
	} {
		f := valid()
		// the summary's groups and the second's are separate lists
		f.Samples[0].Failures = append([]FailureGroup(nil), f.Failures...)
		s := *f.Failures[0].Sample
		s.Headers = append([][2]string(nil), s.Headers...)
		f.Samples[0].Failures[0].Sample = &s
		c.edit(f)
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestRunFileRawBounds: what a decoded file cannot show — a header that is not a pair of two
// strings, a null by_name row — is refused with its field named.
func TestRunFileRawBounds(t *testing.T) {
	groups := []FailureGroup{{Request: "get", Kind: "status_5xx", Status: 503, Message: "HTTP 503 Service Unavailable", Count: 1,
		Sample: &FailureSample{Status: 503, Headers: [][2]string{{"A", "1"}, {"Content-Type", "text/plain"}}}}}
	f := &RunFile{Version: RunFileVersion,
		Summary: Summary{Requests: 2, Successes: 1, Errors: 1, Failures: groups, ByName: map[string]NameStats{"get": {Requests: 2, Errors: 1}}},
		Run:     RunFileRun{Status: "finished", StartedAt: time.Unix(1e9, 0), EndedAt: time.Unix(1e9+1, 0)},
		Samples: []FileSample{{Sample: Sample{ElapsedS: 1, Requests: 2, Successes: 1, Errors: 1, Failures: groups}}}}
	b, _ := json.Marshal(f)
	good := string(b)
	const pair = `["Content-Type","text/plain"]`
	if strings.Count(good, pair) != 2 {
		t.Fatalf("file %s", good)
	}
	for name, c := range map[string]struct {
		body string
		want string // "" for none
	}{
		"as written":     {good, ""},
		"one string":     {strings.Replace(good, pair, `["Content-Type"]`, 1), "failures[0].sample.headers[1]: must be a [name, value] pair"},
		"three strings":  {strings.Replace(good, pair, `["a","b","c"]`, 2), "failures[0].sample.headers[1]"},
		"null value":     {strings.Replace(good, pair, `["a",null]`, 2), "failures[0].sample.headers[1]"},
		"null pair":      {strings.Replace(good, pair, `null`, 2), "failures[0].sample.headers[1]"},
		"in a second":    {good[:strings.LastIndex(good, pair)] + `[]` + good[strings.LastIndex(good, pair)+len(pair):], "samples[0].failures[0].sample.headers[1]"},
		"null row":       {strings.Replace(good, `"by_name":{"get":{`, `"by_name":{"a":null,"get":{`, 1), "by_name.a: null"},
		"missing header": {strings.Replace(good, `["A","1"],`, ``, 2), ""},
	} {
		var back RunFile
		if err := json.Unmarshal([]byte(c.body), &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err := back.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// FuzzRunFileFailures: whatever failure groups a file holds, Check either refuses it or every
// group is within the engine's bounds. The groups go through the file's JSON, as an import's do.
func FuzzRunFileFailures(f *testing.F) {
	f.Add(`[{"request":"a","kind":"status_5xx","status":503,"message":"HTTP 503","count":2,"sample":{"status":503,"headers":[["a","b"]],"body":"x"}}]`)
	f.Add(`[{"kind":"","message":"(other)","count":1}]`)
	f.Add(`[{"request":"a","kind":"status_5xx","status":503,"message":"HTTP 503","count":2,"sample":{"status":503,"headers":[["a"]],"body":"x"}}]`)
	f.Add(`[{"request":"a","kind":"reset","status":0,"message":"reset","count":1,"sample":{"status":200,"headers":[]}}]`)
	f.Fuzz(func(t *testing.T, js string) {
		var g []FailureGroup
		if json.Unmarshal([]byte(js), &g) != nil {
			return
		}
		var total int64
		for _, x := range g {
			total += max(x.Count, 0)
		}
		if total > MaxFileNumber {
			return
		}
		body := fmt.Sprintf(`{"volley_run_file":1,"requests":%d,"errors":%d,"failures":%s,"run":{"status":"finished"},
			"samples":[{"elapsed_s":1,"requests":%[1]d,"errors":%[1]d}]}`, total, total, js)
		var file RunFile
		if err := json.Unmarshal([]byte(body), &file); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if file.Check() != nil {
			return
		}
		if len(g) > MaxFailureGroups+1 {
			t.Fatalf("%d groups accepted", len(g))
		}
		other := false
		for _, x := range g {
			other = other || x.Message == OtherFailures
			if len(x.Message) > MaxFailureMessage || !utf8.ValidString(x.Message) || x.Count < 1 ||
				x.Kind == "" && x.Message != OtherFailures || x.Status == 0 && x.Sample != nil && x.Message != OtherFailures {
				t.Fatalf("group accepted: %+v", x)
			}
			if s := x.Sample; s != nil && (len(s.Headers) > MaxSampleHeaders || len(s.Body) > MaxSampleBody) {
				t.Fatalf("sample accepted: %+v", s)
			}
		}
		if len(g) > MaxFailureGroups && !other {
			t.Fatalf("%d groups accepted without an (other)", len(g))
		}
		var raw []struct {
			Sample *struct {
				Headers []json.RawMessage `json:"headers"`
			} `json:"sample"`
		}
		_ = json.Unmarshal([]byte(js), &raw)
		for _, r := range raw {
			if r.Sample == nil {
				continue
			}
			for _, h := range r.Sample.Headers { // accepted: every sample's header is a pair of strings
				var pair []*string
				if json.Unmarshal(h, &pair) != nil || len(pair) != 2 || pair[0] == nil || pair[1] == nil {
					t.Fatalf("header %s accepted", h)
				}
			}
		}
	})
}
