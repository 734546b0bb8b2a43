package engine

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// recorder target: remembers what each request carried.
type seen struct {
	mu   sync.Mutex
	reqs []string
}

func (s *seen) add(v string) {
	s.mu.Lock()
	s.reqs = append(s.reqs, v)
	s.mu.Unlock()
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func TestTemplatesAndDataRows(t *testing.T) {
	var got seen
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		var body [256]byte
		n, _ := r.Body.Read(body[:])
		got.add(r.URL.RequestURI() + " | " + r.Header.Get("X-User") + " | " + string(body[:n]))
	})
	js := fmt.Sprintf(`{"name":"t",
		"requests":[{"name":"r","method":"POST","url":"%s/u/{{user}}?vu={{vu}}&it={{iteration}}&n={{random_int 5 7}}",
			"headers":{"X-User":"{{user}}-{{uuid}}"},"body":"{\"pass\":\"{{pass}}\"}"}],
		"data":{"csv":"user,pass\nann,a1\nbob,b2\ncid,c3\n","mode":"per-iteration"},
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":3}}`, tg.URL)
	sum, _ := run(t, mustPlan(t, js))
	if sum.Requests != 6 || sum.Errors != 0 {
		t.Fatalf("requests %d errors %v", sum.Requests, sum.ErrorKinds)
	}
	users := map[string]int{}
	re := regexp.MustCompile(`^/u/(\w+)\?vu=([12])&it=([012])&n=([567]) \| (\w+)-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12} \| \{"pass":"(\w\d)"\}$`)
	for _, line := range got.all() {
		m := re.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("request not rendered as expected: %q", line)
		}
		if m[1] != m[5] || m[6][0] != m[1][0] {
			t.Errorf("one iteration mixed rows: %q", line)
		}
		users[m[1]]++
	}
	// Six iterations over three rows, one shared cursor: each row twice.
	if users["ann"] != 2 || users["bob"] != 2 || users["cid"] != 2 {
		t.Errorf("rows used %v", users)
	}
}

func TestDataPerVU(t *testing.T) {
	var got seen
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		got.add(r.URL.Query().Get("u") + r.URL.Query().Get("vu"))
	})
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":"%s/?u={{user}}&vu={{vu}}"}],
		"data":{"csv":"user\nann\nbob\n","mode":"per-vu"},
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":4}}`, tg.URL)
	run(t, mustPlan(t, js))
	for _, s := range got.all() {
		if s != "ann1" && s != "bob2" {
			t.Fatalf("VU got another VU's row: %q", s)
		}
	}
}

func TestSequenceFlowWithExtraction(t *testing.T) {
	var mu sync.Mutex
	tokens := map[string]bool{}
	var bad int
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			tok := fmt.Sprintf("tok-%d", time.Now().UnixNano())
			mu.Lock()
			tokens[tok] = true
			mu.Unlock()
			w.Header().Set("X-Session", "s-"+tok)
			json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"token": tok}})
		case "/items":
			mu.Lock()
			ok := tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] &&
				r.Header.Get("X-Session") == "s-"+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok {
				bad++
			}
			mu.Unlock()
			if !ok {
				w.WriteHeader(401)
				return
			}
			w.Write([]byte(`{"items":[{"id":41},{"id":42}],"status":"active"} id=42`))
		case "/items/42":
			w.Write([]byte("ok"))
		default:
			w.WriteHeader(404)
		}
	})
	js := fmt.Sprintf(`{"name":"t","flow":"sequence",
		"requests":[
		  {"name":"login","method":"POST","url":"%[1]s/login","extract":[
		    {"var":"token","from":"json","path":"data.token"},{"var":"sess","from":"header","name":"X-Session"}]},
		  {"name":"items","url":"%[1]s/items","headers":{"Authorization":"Bearer {{token}}","X-Session":"{{sess}}"},
		   "extract":[{"var":"id","from":"regex","pattern":"id=(\\d+)"}],
		   "checks":[{"type":"json","path":"status","op":"eq","value":"active"},
		             {"type":"json","path":"items.1.id","op":"eq","value":42},
		             {"type":"body","op":"contains","value":"items"},
		             {"type":"header","name":"Content-Type","op":"contains","value":"text/plain"},
		             {"type":"latency","op":"lt","value":"1s"}]},
		  {"name":"item","url":"%[1]s/items/{{id}}","checks":[{"type":"body","op":"contains","value":"nope"}]}],
		"load":{"executor":"per-vu-iterations","vus":3,"iterations":5}}`, tg.URL)
	sum, _ := run(t, mustPlan(t, js))
	if bad != 0 || sum.Requests != 45 || tg.Requests() != 45 {
		t.Fatalf("bad auth %d, requests %d, target %d, kinds %v", bad, sum.Requests, tg.Requests(), sum.ErrorKinds)
	}
	if sum.ByName["login"].Requests != 15 || sum.ByName["items"].Errors != 0 || sum.ByName["item"].Errors != 15 {
		t.Errorf("by name %+v", sum.ByName)
	}
	if sum.ErrorKinds["check_failed"] != 15 || sum.StatusCodes["200"] != 45 {
		t.Errorf("kinds %v codes %v", sum.ErrorKinds, sum.StatusCodes)
	}
	if len(sum.Checks) != 6 {
		t.Fatalf("checks %+v", sum.Checks)
	}
	for _, c := range sum.Checks[:5] {
		if c.Passes != 15 || c.Fails != 0 {
			t.Errorf("check %+v", c)
		}
	}
	if c := sum.Checks[5]; c.Request != "item" || c.Fails != 15 || c.Passes != 0 {
		t.Errorf("failing check %+v", c)
	}
}

func TestThinkTime(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	js := fmt.Sprintf(`{"name":"t","requests":[{"url":%q}],"think_time":"200ms-300ms","load":{"vus":2,"duration":"2s"}}`, tg.URL)
	probe := testutil.StartSchedProbe(t)
	sum, _ := run(t, mustPlan(t, js))
	d := probe.Stop()
	t.Log(d)
	// 2 VUs for 2 s at 250 ms a think time: 16 requests, 12-18 with the 200-300 ms spread. Each
	// iteration's think timer, send and answer wake late on a busy machine (3 wakeups).
	perVU := 2000 / (300 + 3*ms(d.P99))
	between(t, "requests with 250 ms think time", float64(sum.Requests), min(12, float64(2*int(perVU))), 18)
}

func TestAbortOnFail(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	js := fmt.Sprintf(`{"name":"t","requests":[{"name":"home","url":%q}],"load":{"vus":2,"duration":"30s"},
		"thresholds":[{"expr":"error_rate<10%%","abort_on_fail":true},{"expr":"p(95)<10s","request":"home"}]}`, tg.URL)
	probe := testutil.StartSchedProbe(t)
	start := time.Now()
	sum, _ := run(t, mustPlan(t, js))
	if took, limit := time.Since(start), 4*time.Second+probe.Stop().Slack(testutil.StopChain); took > limit {
		t.Errorf("run was not aborted: %v (limit %v)", took, limit)
	}
	if !strings.Contains(sum.Aborted, "error_rate<10%") || sum.ThresholdsOK() {
		t.Errorf("aborted %q, thresholds %+v", sum.Aborted, sum.Thresholds)
	}
	if sum.Thresholds[1].Expr != "home: p(95)<10s" || !sum.Thresholds[1].OK {
		t.Errorf("per-request threshold %+v", sum.Thresholds[1])
	}
}

func TestPerRequestThresholds(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(30 * time.Millisecond)
		}
	})
	js := fmt.Sprintf(`{"name":"t","requests":[{"name":"fast","url":"%[1]s/"},{"name":"slow","url":"%[1]s/slow"}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":30},
		"thresholds":[{"expr":"p(95)<20ms","request":"fast"},{"expr":"p(95)<20ms","request":"slow"},"p(95)<1s"]}`, tg.URL)
	sum, _ := run(t, mustPlan(t, js))
	got := map[string]bool{}
	for _, th := range sum.Thresholds {
		got[th.Expr] = th.OK
	}
	if !got["fast: p(95)<20ms"] || got["slow: p(95)<20ms"] || !got["p(95)<1s"] {
		t.Errorf("thresholds %+v", sum.Thresholds)
	}
}
