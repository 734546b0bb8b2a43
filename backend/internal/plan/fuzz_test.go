package plan

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/examples"
)

// Seeds: the example plan, this package's test plans and one of each executor.
func planSeeds() []string {
	seeds := []string{string(examples.Demo), good,
		withRequest(`{"url":"http://127.0.0.1:9/{{random_int 1 10}}?u={{uuid}}&v={{vu}}&i={{iteration}}","headers":{"X":"{{vu}}"},"body":"{{uuid}}",
			"checks":[{"type":"json","path":"a.b","op":"eq","value":[1,{"c":null}]},{"type":"latency","op":"lt","value":"1s"}],
			"extract":[{"var":"t","from":"regex","pattern":"id=(\\d+)"}],"think_time":"1ms-2ms"}`),
		`{"name":"d","flow":"sequence","data":{"csv":"a,b\n1,2\n3,4","mode":"per-vu"},"requests":[{"url":"http://127.0.0.1:9/{{a}}"}],
			"load":{"executor":"ramping-arrival-rate","start_rate":1,"time_unit":"1s","stages":[{"duration":"1s","target":5}],"pre_allocated_vus":1},
			"http":{"hosts":{"x.test:80":"127.0.0.1:9,127.0.0.2:9"},"follow_redirects":true,"max_redirects":3},
			"thresholds":["p(99.9)<1s",{"expr":"error_rate<1%","request":"GET http://127.0.0.1:9/{{a}}","abort_on_fail":true}]}`,
		withLoad(`{"executor":"concurrency-sweep","levels":[1,2],"step_duration":"1s"}`),
		withLoad(`{"executor":"shared-iterations","vus":2,"iterations":10}`),
		withLoad(`{"executor":"ramping-vus","start_vus":1,"stages":[{"duration":"1s","target":3}]}`),
		withLoad(`{"executor":"constant-arrival-rate","rate":9223372036854775807,"duration":"1s","pre_allocated_vus":1}`),
		`[[[[[[[[[[`, `{"name":"\u0000"}`, ``,
	}
	return seeds
}

// FuzzParse: Parse never panics; a plan it accepts validates, and its stored form (Marshal) parses
// back to the same plan.
func FuzzParse(f *testing.F) {
	for _, s := range planSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if _, ok := err.(*ValidationError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse accepted a plan Validate refuses: %v", err)
		}
		b, err := Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(b)
		if err != nil {
			t.Fatalf("the stored form does not parse: %v\n%s", err, b)
		}
		b2, _ := Marshal(q)
		if string(b) != string(b2) {
			t.Fatalf("round trip changed the plan:\n%s\n%s", b, b2)
		}
		_ = EstimateMemory(p)
		_ = (Caps{MaxVUs: 1, MaxRate: 1, MaxDuration: time.Second, MaxRequests: 1, MemoryBudget: 1}).Check(p)
	})
}

// FuzzParseTemplate: templates never panic; a parsed template's parts put back together give the
// text, and random_int's bounds are in range.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"", "plain", "{{vu}}", "a{{ iteration }}b", "{{random_int 1 100}}", "{{random_int -9223372036854775808 9223372036854775807}}",
		"{{uuid}}{{uuid}}", "{{", "}}", "{{}}", "{{ 1x }}", "{{random_int 5 1}}", "{{vu 1}}", "{{{{vu}}}}", "{{random_int 1 2 3}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := ParseTemplate(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Var == "" {
				b.WriteString(p.Lit)
				continue
			}
			if p.Var == "random_int" {
				if len(p.Args) != 2 || p.Args[0] > p.Args[1] || p.Args[0] < -MaxRandomInt || p.Args[1] > MaxRandomInt {
					t.Fatalf("random_int args %v", p.Args)
				}
			}
			b.WriteString("\x00")
		}
		if !strings.Contains(s, "{{") && b.String() != s {
			t.Fatalf("literal %q became %q", s, b.String())
		}
	})
}

// FuzzParseThreshold: thresholds never panic, and an accepted one has a finite value and a known op.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"p(95)<200ms", "p(99.9)<1s", "avg<100ms", "max<2s", "error_rate<1%", "rps>1000", "med<=5us", "min>=1m",
		"p(0)<1ms", "p(100.1)<1ms", "error_rate<1ms", "rps>1s", "p(95)<" + strings.Repeat("9", 400) + "ms", "  avg  <  1  "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseThreshold(s)
		if err != nil {
			return
		}
		switch r.Op {
		case "<", "<=", ">", ">=", "==":
		default:
			t.Fatalf("op %q", r.Op)
		}
		if r.Metric == "p" && (r.Percentile <= 0 || r.Percentile > 100) {
			t.Fatalf("percentile %v", r.Percentile)
		}
		_ = r.Pass(r.Value)
	})
}

// FuzzDuration: durations and think times never panic; accepted think times are in range.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{"30s", "1m30s", "500ms", "", "-1s", "9999999999h", "1s-2s", "2s-1s", "1h-2h", "0-0", "1.5h", "1e9s", " 1s - 2s ", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d Duration
		_ = d.UnmarshalJSON([]byte(strconv.Quote(s)))
		_ = d.UnmarshalJSON([]byte(s))
		if b, err := d.MarshalJSON(); err != nil || !json.Valid(b) {
			t.Fatalf("MarshalJSON of %d: %s %v", d, b, err)
		}
		lo, hi, err := ThinkTime(s).Range()
		if err == nil && (lo < 0 || hi < lo || hi > MaxTimeout) {
			t.Fatalf("think time %q → %s–%s", s, lo, hi)
		}
	})
}

// FuzzDataColumns: CSV data never panics; accepted tables are within their ranges.
func FuzzDataColumns(f *testing.F) {
	for _, s := range []string{"a,b\n1,2\n", "a\n1", "a,b\n1\n", "\"a\nb\",c\n1,2", "a\n\"unterminated", "", "a,a\n1,2", "\ufeffa\n1", "a;b\n1;2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := &Data{CSV: s}
		header, rows, err := d.Columns()
		if err != nil {
			return
		}
		if len(rows) == 0 || len(rows) > MaxCSVRows || len(header) > MaxCSVColumns {
			t.Fatalf("%d columns, %d rows accepted", len(header), len(rows))
		}
	})
}
