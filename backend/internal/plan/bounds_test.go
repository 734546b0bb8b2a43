package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func withLoad(load string) string {
	return `{"name":"b","requests":[{"url":"http://127.0.0.1:9/"}],"load":` + load + `}`
}

func withRequest(req string) string {
	return `{"name":"b","requests":[` + req + `],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`
}

// Every out-of-range number is a field error naming the field and its range.
func TestRangesAreFieldErrors(t *testing.T) {
	many := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return strings.Join(parts, ",")
	}
	cases := []struct {
		name, plan, field, want string
	}{
		{"weights of 2^62", withRequest(`{"url":"http://127.0.0.1:9/a","weight":4611686018427387904},{"url":"http://127.0.0.1:9/b","weight":4611686018427387904}`),
			"requests[0].weight", "1–1000000"},
		{"random_int at the int64 bounds", withRequest(`{"url":"http://127.0.0.1:9/{{random_int -9223372036854775808 9223372036854775807}}"}`),
			"requests[0].url", "10^18"},
		{"20 000 requests", withRequest(many(20000, func(i int) string { return fmt.Sprintf(`{"name":"n%d","url":"http://127.0.0.1:9/"}`, i) })),
			"requests", "at most 1000"},
		{"rate 2^63-1", withLoad(`{"executor":"constant-arrival-rate","rate":9223372036854775807,"duration":"10s","pre_allocated_vus":1}`),
			"load.rate", "iterations/s"},
		{"rate 1e308", withLoad(`{"executor":"constant-arrival-rate","rate":1e308,"duration":"10s","pre_allocated_vus":1}`),
			"load.rate", "is too large: 1e308"},
		{"VUs 2.0", withLoad(`{"executor":"constant-vus","vus":2.0,"duration":"1s"}`), "load.vus", "must be a whole number"},
		{"VUs 1e3", withLoad(`{"executor":"constant-vus","vus":1e3,"duration":"1s"}`), "load.vus", "must be a whole number"},
		{"VUs -1e308", withLoad(`{"executor":"constant-vus","vus":-1e308,"duration":"1s"}`), "load.vus", "is too large: -1e308"},
		{"VUs 2^63", withLoad(`{"executor":"constant-vus","vus":9223372036854775808,"duration":"1s"}`), "load.vus", "is too large"},
		{"rate per ms", withLoad(`{"executor":"constant-arrival-rate","rate":2000,"time_unit":"1ms","duration":"10s","pre_allocated_vus":1}`),
			"load.rate", "at most 1000 per time_unit"},
		{"time unit under 1ms", withLoad(`{"executor":"constant-arrival-rate","rate":1,"time_unit":"1us","duration":"10s","pre_allocated_vus":1}`),
			"load.time_unit", "1ms"},
		{"ramp target rate", withLoad(`{"executor":"ramping-arrival-rate","stages":[{"duration":"1s","target":2000000}],"pre_allocated_vus":1}`),
			"load.stages[0].target", "iterations/s"},
		{"stage durations overflowing", withLoad(`{"executor":"ramping-vus","stages":[{"duration":"2562047h","target":1},{"duration":"2562047h","target":1}]}`),
			"load.stages[0].duration", "24h"},
		{"stages summing over 24h", withLoad(`{"executor":"ramping-vus","stages":[{"duration":"20h","target":1},{"duration":"20h","target":1}]}`),
			"load.stages", "24h"},
		{"sweep longer than 24h", withLoad(`{"executor":"concurrency-sweep","levels":[1,2,3],"step_duration":"9h"}`),
			"load.step_duration", "24h"},
		{"too many levels", withLoad(`{"executor":"concurrency-sweep","levels":[` + many(101, func(int) string { return "1" }) + `],"step_duration":"1s"}`),
			"load.levels", "at most 100"},
		{"VUs", withLoad(`{"executor":"constant-vus","vus":100001,"duration":"1s"}`), "load.vus", "100000"},
		{"iterations", withLoad(`{"executor":"shared-iterations","vus":1,"iterations":1000000001}`), "load.iterations", "1000000000"},
		{"graceful stop", withLoad(`{"executor":"constant-vus","vus":1,"duration":"1s","graceful_stop":"11m"}`), "load.graceful_stop", "10m"},
		{"duration", withLoad(`{"executor":"constant-vus","vus":1,"duration":"25h"}`), "load.duration", "24h"},
		{"timeout", `{"name":"b","requests":[{"url":"http://127.0.0.1:9/"}],"http":{"timeout":"2h"},"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "http.timeout", "1h"},
		{"connect timeout", `{"name":"b","requests":[{"url":"http://127.0.0.1:9/"}],"http":{"connect_timeout":"2h"},"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "http.connect_timeout", "1h"},
		{"redirects", `{"name":"b","requests":[{"url":"http://127.0.0.1:9/"}],"http":{"max_redirects":51},"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "http.max_redirects", "0–50"},
		{"think time", withRequest(`{"url":"http://127.0.0.1:9/","think_time":"2h"}`), "requests[0].think_time", "1h"},
		{"headers count", withRequest(`{"url":"http://127.0.0.1:9/","headers":{` + many(101, func(i int) string { return fmt.Sprintf(`"H%d":"v"`, i) }) + `}}`), "requests[0].headers", "at most 100"},
		{"header value", withRequest(`{"url":"http://127.0.0.1:9/","headers":{"X":"` + strings.Repeat("v", 9000) + `"}}`), "requests[0].headers", "8192"},
		{"body", withRequest(`{"url":"http://127.0.0.1:9/","body":"` + strings.Repeat("b", MaxBodyBytes+1) + `"}`), "requests[0].body", "1 MiB"},
		{"url", withRequest(`{"url":"http://127.0.0.1:9/` + strings.Repeat("u", MaxURLBytes) + `"}`), "requests[0].url", "8192"},
		{"csv rows", `{"name":"b","requests":[{"url":"http://127.0.0.1:9/{{a}}"}],"data":{"csv":"a\n` + strings.Repeat("1\\n", MaxCSVRows+1) + `"},"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "data.csv", "at most 100000"},
		{"csv columns", `{"name":"b","requests":[{"url":"http://127.0.0.1:9/"}],"data":{"csv":"` + many(101, func(i int) string { return fmt.Sprintf("c%d", i) }) + `\n` + many(101, func(int) string { return "1" }) + `"},"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "data.csv", "at most 100"},
		{"thresholds", `{"name":"b","requests":[{"url":"http://127.0.0.1:9/"}],"thresholds":[` + many(101, func(int) string { return `"avg<1s"` }) + `],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "thresholds", "at most 100"},
		{"nesting 1000 deep", withRequest(`{"url":"http://127.0.0.1:9/","checks":[{"type":"json","path":"a","op":"eq","value":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}]}`), "", "more than 32 deep"},
		{"threshold on a name without statistics", `{"name":"b","requests":[` + many(150, func(i int) string { return fmt.Sprintf(`{"name":"n%d","url":"http://127.0.0.1:9/"}`, i) }) +
			`],"thresholds":[{"expr":"avg<1s","request":"n120"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, "thresholds[0].request", "first 99"},
		{"plan size", `{"name":"` + strings.Repeat("x", MaxPlanBytes) + `"}`, "", "8 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.plan))
			ve, ok := err.(*ValidationError)
			if !ok {
				t.Fatalf("err = %v, want a validation error", err)
			}
			if msg, ok := ve.Fields[c.field]; !ok || !strings.Contains(msg, c.want) {
				t.Errorf("fields[%q] = %q, want it to say %q; all: %v", c.field, msg, c.want, clipAll(ve.Fields))
			}
		})
	}
}

func clipAll(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if len(out) > 5 {
			break
		}
		out[k] = clip(v)
	}
	return out
}

// The widest values inside the ranges are accepted.
func TestRangeEdgesAreAccepted(t *testing.T) {
	for _, js := range []string{
		withRequest(`{"url":"http://127.0.0.1:9/{{random_int -1000000000000000000 1000000000000000000}}","weight":1000000}`),
		withLoad(`{"executor":"constant-arrival-rate","rate":1000000,"duration":"24h","pre_allocated_vus":1,"graceful_stop":"10m"}`),
		withLoad(`{"executor":"constant-arrival-rate","rate":1000,"time_unit":"1ms","duration":"1s","pre_allocated_vus":1}`),
		withLoad(`{"executor":"ramping-vus","stages":[{"duration":"12h","target":100000},{"duration":"12h","target":0}]}`),
		withLoad(`{"executor":"concurrency-sweep","levels":[1,2,3],"step_duration":"8h"}`),
	} {
		if _, err := Parse([]byte(js)); err != nil {
			t.Errorf("%.120s: %v", js, err)
		}
	}
}

func TestDepthCountsOnlyStructure(t *testing.T) {
	deepInString := `{"name":"` + strings.Repeat("[{", 500) + `\"` + `","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`
	if _, err := Parse([]byte(deepInString)); err != nil && strings.Contains(err.Error(), "deep") {
		t.Errorf("brackets inside a string counted as nesting: %v", err)
	}
	if _, deep := checkDepth([]byte(strings.Repeat("[", 32)+strings.Repeat("]", 32)), MaxDepth); deep {
		t.Error("32 levels refused")
	}
	if _, deep := checkDepth([]byte(strings.Repeat("[", 33)), MaxDepth); !deep {
		t.Error("33 levels accepted")
	}
}

func TestCaps(t *testing.T) {
	p, err := Parse([]byte(withLoad(`{"executor":"constant-arrival-rate","rate":500,"duration":"2h","pre_allocated_vus":10,"max_vus":3000}`)))
	if err != nil {
		t.Fatal(err)
	}
	err = Caps{MaxVUs: 1000, MaxRate: 100, MaxDuration: time.Hour, MaxRequests: 1, MemoryBudget: 1 << 20}.Check(p)
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("err = %v", err)
	}
	for field, want := range map[string]string{"load.max_vus": "--max-vus", "load.rate": "--max-rate", "load.duration": "--max-duration"} {
		if !strings.Contains(ve.Fields[field], want) {
			t.Errorf("fields[%q] = %q, want %s", field, ve.Fields[field], want)
		}
	}
	if m := ve.Fields["load.max_vus"]; !strings.Contains(m, "memory budget of 1 MiB") || !strings.Contains(m, "3000 VUs") {
		t.Errorf("memory: %q", m)
	}
	if err := (Caps{MaxVUs: 3000, MaxRate: 500, MaxDuration: 2 * time.Hour, MaxRequests: 1, MemoryBudget: 1 << 30}).Check(p); err != nil {
		t.Errorf("within the caps: %v", err)
	}
	if err := (Caps{}).Check(p); err != nil {
		t.Errorf("no caps: %v", err)
	}
}

// The estimate grows with what each VU holds: templated requests cost per VU, static ones once.
func TestEstimateMemory(t *testing.T) {
	static := `{"url":"http://127.0.0.1:9/","body":"` + strings.Repeat("b", 10000) + `"}`
	templated := `{"url":"http://127.0.0.1:9/{{vu}}","body":"` + strings.Repeat("b", 3000) + `"}`
	es := EstimateMemory(mustParse(t, withRequest(static)))
	et := EstimateMemory(mustParse(t, withRequest(templated)))
	if es.PerVU < PerVUBase || es.PerVU > PerVUBase+1024 {
		t.Errorf("static per VU %d", es.PerVU)
	}
	if et.PerVU < es.PerVU+6000 {
		t.Errorf("templated per VU %d, static %d", et.PerVU, es.PerVU)
	}
	// 2000 VUs × 1000 templated 3 kB requests: ~16 GiB, refused by any sane budget
	var reqs []string
	for range 1000 {
		reqs = append(reqs, templated)
	}
	big := mustParse(t, `{"name":"b","requests":[`+strings.Join(reqs, ",")+`],"load":{"executor":"constant-vus","vus":2000,"duration":"1s"}}`)
	if e := EstimateMemory(big); e.Total < 10<<30 {
		t.Errorf("2000 VUs × 1000 templated requests: %d bytes", e.Total)
	}
}

func mustParse(t *testing.T, js string) *Plan {
	t.Helper()
	p, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
