package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

const good = `{
  "name": "static page",
  "requests": [{"name": "index", "method": "get", "url": "http://127.0.0.1:8080/index.html",
    "headers": {"Accept": "text/html"}, "checks": [{"type": "status", "op": "eq", "value": 200}]}],
  "load": {"executor": "constant-vus", "vus": 100, "duration": "30s"},
  "http": {"timeout": "2s"},
  "thresholds": ["p(95)<200ms", "error_rate<1%"]
}`

func TestParseFillsDefaults(t *testing.T) {
	p, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Requests[0]
	if r.Method != "GET" || r.Weight != 1 {
		t.Errorf("request defaults: %+v", r)
	}
	if p.Load.Duration.D() != 30*time.Second || p.Load.GracefulStop.D() != DefaultGrace {
		t.Errorf("load: %+v", p.Load)
	}
	if p.HTTP.Timeout.D() != 2*time.Second || !p.HTTP.KeepAliveOn() || p.HTTP.MaxRedirects != DefaultRedirects {
		t.Errorf("http: %+v", p.HTTP)
	}
	// The stored form round-trips to the same plan.
	b, _ := json.Marshal(p)
	q, err := Parse(b)
	if err != nil {
		t.Fatalf("round trip: %v (%s)", err, b)
	}
	b2, _ := json.Marshal(q)
	if string(b) != string(b2) {
		t.Errorf("round trip changed the plan:\n%s\n%s", b, b2)
	}
}

func TestParseNamesEveryProblem(t *testing.T) {
	bad := `{
	  "name": "",
	  "requests": [
	    {"method": "FETCH", "url": "ftp://x/", "headers": {"Bad Name": "v"}, "weight": -1},
	    {"url": "http://", "checks": [{"type": "bogus", "op": "like", "value": 1}, {"type": "status", "op": "like", "value": 200}]}
	  ],
	  "load": {"executor": "constant-vus", "vus": 0, "duration": "soon", "vuz": 3},
	  "http": {"timeout": "-1s", "keep_alive": "yes"},
	  "thresholds": ["p(95)<<1", "rps>10"],
	  "colour": "blue"
	}`
	_, err := Parse([]byte(bad))
	ve, ok := err.(*ValidationError)
	if !ok {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	// Shape problems (types, unknown fields) and value problems come in one answer.
	for _, f := range []string{"load.duration", "load.vuz", "http.keep_alive", "colour", "name", "load.vus", "requests[0].url", "thresholds[0]"} {
		if ve.Fields[f] == "" {
			t.Errorf("shape problem %q not named; got %v", f, ve.Fields)
		}
	}
	fixed := strings.NewReplacer(`"soon"`, `"30s"`, `, "vuz": 3`, ``, `"yes"`, `true`, `,
	  "colour": "blue"`, ``).Replace(bad)
	_, err = Parse([]byte(fixed))
	ve, ok = err.(*ValidationError)
	if !ok {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	for _, f := range []string{"name", "requests[0].method", "requests[0].url", "requests[0].headers",
		"requests[0].weight", "requests[1].url", "requests[1].checks[0].type", "requests[1].checks[1].op",
		"load.vus", "http.timeout", "thresholds[0]"} {
		if ve.Fields[f] == "" {
			t.Errorf("value problem %q not named; got %v", f, ve.Fields)
		}
	}
	if ve.Fields["thresholds[1]"] != "" {
		t.Errorf("valid threshold flagged: %v", ve.Fields["thresholds[1]"])
	}
}

func TestParseRejectsNonObjects(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `{"name":`} {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestExecutorFields(t *testing.T) {
	p := `{"name":"x","requests":[{"url":"http://127.0.0.1/"}],"load":{"executor":"per-vu-iterations","vus":2,"iterations":0,"duration":"1s"}}`
	_, err := Parse([]byte(p))
	ve, _ := err.(*ValidationError)
	if ve == nil || ve.Fields["load.iterations"] == "" || ve.Fields["load.duration"] == "" {
		t.Fatalf("got %v", err)
	}
	p = `{"name":"x","requests":[{"url":"http://127.0.0.1/"}],"load":{"executor":"ramping-sideways","vus":2}}`
	_, err = Parse([]byte(p))
	ve, _ = err.(*ValidationError)
	if ve == nil || !strings.Contains(ve.Fields["load.executor"], "ramping-sideways") {
		t.Fatalf("got %v", err)
	}
}

func TestThresholds(t *testing.T) {
	cases := []struct {
		expr   string
		metric string
		pct    float64
		op     string
		value  float64
	}{
		{"p(95)<200ms", "p", 95, "<", 200},
		{"p(99.9) < 1s", "p", 99.9, "<", 1000},
		{"avg<=500us", "avg", 0, "<=", 0.5},
		{"error_rate<1%", "error_rate", 0, "<", 0.01},
		{"error_rate<0.05", "error_rate", 0, "<", 0.05},
		{"rps>1000", "rps", 0, ">", 1000},
		{"p(95)<200", "p", 95, "<", 200}, // k6: a bare latency is in ms
		{"max<2m", "max", 0, "<", 120000},
	}
	for _, c := range cases {
		th, err := ParseThreshold(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if th.Metric != c.metric || th.Percentile != c.pct || th.Op != c.op || th.Value != c.value {
			t.Errorf("%s parsed as %+v", c.expr, th)
		}
	}
	for _, bad := range []string{"p(0)<1ms", "p(101)<1ms", "rps>10ms", "error_rate<1s", "latency<1ms", ""} {
		if _, err := ParseThreshold(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	th, _ := ParseThreshold("p(95)<200ms")
	if !th.Pass(199.9) || th.Pass(200) {
		t.Error("< compares wrongly")
	}
}

func TestParseRejectsTrailingDataZeroTimeoutAndSchemelessURLs(t *testing.T) {
	base := `{"name":"x","requests":[{"url":"http://127.0.0.1/"}],"load":{"vus":1,"duration":"1s"}}`
	if _, err := Parse([]byte(base + ` xyz`)); err == nil {
		t.Error("trailing data accepted")
	}
	_, err := Parse([]byte(strings.Replace(base, `}}`, `},"http":{"timeout":"0s"}}`, 1)))
	if ve, _ := err.(*ValidationError); ve == nil || ve.Fields["http.timeout"] == "" {
		t.Errorf("zero timeout: %v", err)
	}
	_, err = Parse([]byte(strings.Replace(base, "http://127.0.0.1/", "127.0.0.1:8090/", 1)))
	if ve, _ := err.(*ValidationError); ve == nil || !strings.Contains(ve.Fields["requests[0].url"], "http://") {
		t.Errorf("schemeless URL: %v", err)
	}
}

// An explicit zero graceful stop used to become the 5 s default silently; it is refused instead.
func TestZeroGracefulStopIsRefused(t *testing.T) {
	_, err := Parse([]byte(`{"name":"t","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"vus":1,"duration":"1s","graceful_stop":"0s"}}`))
	ve, ok := err.(*ValidationError)
	if !ok || ve.Fields["load.graceful_stop"] == "" {
		t.Fatalf("want a load.graceful_stop error, got %v", err)
	}
	p, err := Parse([]byte(`{"name":"t","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"vus":1,"duration":"1s","graceful_stop":"1ms"}}`))
	if err != nil || p.Load.GracefulStop.D() != time.Millisecond {
		t.Fatalf("1ms: %v %v", p, err)
	}
}

// An explicit zero for a load field that has a default is refused, not silently replaced by it.
func TestZeroDurationsWithDefaultsAreRefused(t *testing.T) {
	for field, load := range map[string]string{
		"load.step_duration": `{"executor":"concurrency-sweep","levels":[1,2],"step_duration":"0s"}`,
		"load.time_unit":     `{"executor":"constant-arrival-rate","rate":5,"duration":"1s","pre_allocated_vus":1,"time_unit":"0s"}`,
		"load.max_duration":  `{"executor":"per-vu-iterations","vus":1,"iterations":1,"max_duration":"0s"}`,
	} {
		_, err := Parse([]byte(`{"name":"t","requests":[{"url":"http://127.0.0.1:1/"}],"load":` + load + `}`))
		ve, ok := err.(*ValidationError)
		if !ok || !strings.Contains(ve.Fields[field], "must be positive") {
			t.Errorf("%s: want a %s error, got %v", load, field, err)
		}
	}
}

// http.max_body: absent means the default; out of its range is an error naming the field; it is
// not written back when absent, so existing plans read and store as before.
func TestMaxBody(t *testing.T) {
	base := `{"name":"t","requests":[{"url":"http://127.0.0.1:1/"}],"load":{"vus":1,"duration":"1s"}%s}`
	p, err := Parse([]byte(fmt.Sprintf(base, "")))
	if err != nil || p.HTTP.MaxBody != 0 || p.HTTP.MaxBodyOrDefault() != DefaultMaxBody {
		t.Fatalf("absent: %v, max_body %d → %d", err, p.HTTP.MaxBody, p.HTTP.MaxBodyOrDefault())
	}
	if b, _ := json.Marshal(p); strings.Contains(string(b), "max_body") {
		t.Errorf("an absent max_body is written back: %s", b)
	}
	for _, v := range []string{"-1", "1023", "1073741825", "\"1MB\"", "1.5"} {
		_, err := Parse([]byte(fmt.Sprintf(base, `,"http":{"max_body":`+v+`}`)))
		if ve, _ := err.(*ValidationError); ve == nil || !strings.Contains(ve.Error(), "max_body") {
			t.Errorf("max_body %s: %v", v, err)
		}
	}
	for _, v := range []int{MinMaxBody, 65536, MaxMaxBody} {
		p, err := Parse([]byte(fmt.Sprintf(base, fmt.Sprintf(`,"http":{"max_body":%d}`, v))))
		if err != nil || p.HTTP.MaxBodyOrDefault() != v {
			t.Errorf("max_body %d: %v", v, err)
		}
	}
}
