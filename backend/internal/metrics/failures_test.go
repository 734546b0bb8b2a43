package metrics

import (
	"encoding/json"
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

// FuzzRunFileFailures: whatever failure groups a file holds, Check either refuses it or every
// group is within the engine's bounds.
func FuzzRunFileFailures(f *testing.F) {
	f.Add(`[{"request":"a","kind":"status_5xx","status":503,"message":"HTTP 503","count":2,"sample":{"status":503,"headers":[["a","b"]],"body":"x"}}]`)
	f.Add(`[{"kind":"","message":"(other)","count":1}]`)
	f.Fuzz(func(t *testing.T, js string) {
		var g []FailureGroup
		if json.Unmarshal([]byte(js), &g) != nil {
			return
		}
		var total int64
		for _, x := range g {
			total += max(x.Count, 0)
		}
		file := &RunFile{Version: RunFileVersion, Summary: Summary{Requests: total, Errors: total, Failures: g}}
		if total > MaxFileNumber || file.Check() != nil {
			return
		}
		if len(g) > MaxFailureGroups+1 {
			t.Fatalf("%d groups accepted", len(g))
		}
		for _, x := range g {
			if len(x.Message) > MaxFailureMessage || !utf8.ValidString(x.Message) || x.Count < 1 {
				t.Fatalf("group accepted: %+v", x)
			}
			if s := x.Sample; s != nil && (len(s.Headers) > MaxSampleHeaders || len(s.Body) > MaxSampleBody) {
				t.Fatalf("sample accepted: %+v", s)
			}
		}
	})
}
