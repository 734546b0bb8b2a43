package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/testutil"
)

func sendBody(planJS string, i int, planID int64) string {
	if planID == 0 {
		return fmt.Sprintf(`{"plan":%s,"request":%d}`, planJS, i)
	}
	return fmt.Sprintf(`{"plan":%s,"request":%d,"plan_id":%d}`, planJS, i, planID)
}

// A test request of an edited plan reaches the target with the stored plan's masked
// Authorization value and the secret store's value, and the answer shows status, headers, body,
// checks and timing; a masked value without plan_id is refused before anything is sent.
func TestSendTestRequest(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Token") != "tok-42" {
			w.WriteHeader(401)
			return
		}
		w.Header().Set("X-Seen", r.URL.Path)
		fmt.Fprint(w, strings.Repeat("é", 3000)) // 6000 bytes of 2-byte characters
	})
	s := newStack(t, stackConfig{})
	a := s.app
	if _, _, err := s.st.PutSecret(t.Context(), "TOKEN", "tok-42"); err != nil {
		t.Fatal(err)
	}
	planJS := func(auth string) string {
		return fmt.Sprintf(`{"name":"send","requests":[{"name":"other","url":"%[1]s/other"},
			{"name":"main","url":"%[1]s/main","headers":{"Authorization":%[2]q,"X-Token":"{{secret.TOKEN}}"},
			 "checks":[{"type":"status","op":"eq","value":200},{"type":"body","op":"contains","value":"é"}]}],
			"load":{"executor":"constant-vus","vus":1,"duration":"1s"},"http":{"timeout":"5s"}}`, tg.URL, auth)
	}
	st, created := a.do("POST", "/api/plans", planJS("Bearer s3cret"))
	if st != 201 {
		t.Fatalf("create: %d %v", st, created)
	}
	id := int64(created["id"].(float64))

	st, m := a.do("POST", "/api/plans/send", sendBody(planJS("********"), 1, id))
	if st != 200 {
		t.Fatalf("send: %d %v", st, m)
	}
	if m["status"] != 200.0 || m["kind"] != "" || m["request"] != "main" {
		t.Fatalf("answer %v", m)
	}
	body := m["body"].(string)
	if m["body_encoding"] != "text" || m["body_truncated"] != true || m["body_bytes"] != 6000.0 || len(body) != 4096 || strings.ContainsRune(body, '\uFFFD') {
		t.Errorf("body %d B %v truncated %v of %v", len(body), m["body_encoding"], m["body_truncated"], m["body_bytes"])
	}
	found := false
	for _, h := range m["headers"].([]any) {
		kv := h.([]any)
		found = found || kv[0] == "X-Seen" && kv[1] == "/main"
	}
	checks := m["checks"].([]any)
	if !found || len(checks) != 2 || checks[0].(map[string]any)["pass"] != true || checks[1].(map[string]any)["pass"] != true {
		t.Errorf("headers %v checks %v", m["headers"], checks)
	}
	tm := m["timing"].(map[string]any)
	if tm["total_ms"].(float64) <= 0 || tm["connect_ms"].(float64) <= 0 || tm["wait_ms"].(float64) <= 0 || tm["tls_ms"] != 0.0 {
		t.Errorf("timing %v", tm)
	}
	if strings.Contains(fmt.Sprint(m), "s3cret") || strings.Contains(fmt.Sprint(m), "tok-42") {
		t.Errorf("a secret value in the answer: %v", m)
	}
	before := tg.Requests()
	st, m = a.do("POST", "/api/plans/send", sendBody(planJS("********"), 1, 0))
	if st != 400 || tg.Requests() != before {
		t.Errorf("masked without plan_id: %d %v, target saw %d more", st, m, tg.Requests()-before)
	}
	for _, bad := range []string{sendBody(planJS("x"), 2, 0), `{"request":0}`, `{"plan":{},"request":0}`, `{"plan":{},"request":0,"x":1}`} {
		if st, m = a.do("POST", "/api/plans/send", bad); st != 400 {
			t.Errorf("%s: %d %v", bad, st, m)
		}
	}
}

// Transport failures are answers (200) that name the error kind: connect_refused for a dead
// port, blocked_target for a name the target policy denies once resolved, without a connection
// (an address it denies as written is refused with the plan, 400).
func TestSendTestRequestErrors(t *testing.T) {
	pol, err := netpolicy.New(nil, []string{"127.0.0.0/8", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	a := newApp(t)
	one := func(url, extra string) string {
		return fmt.Sprintf(`{"name":"e","requests":[{"url":%q}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"},"http":{"timeout":"2s"%s}}`, url, extra)
	}
	st, m := a.do("POST", "/api/plans/send", sendBody(one("http://"+testutil.ClosedPort(t)+"/", ""), 0, 0))
	if st != 200 || m["kind"] != "connect_refused" || m["status"] != 0.0 || m["message"] == "" {
		t.Errorf("dead port: %d %v", st, m)
	}
	a = newStack(t, stackConfig{policy: pol}).app
	port := tg.URL[strings.LastIndex(tg.URL, ":")+1:]
	st, m = a.do("POST", "/api/plans/send", sendBody(one("http://svc.test:"+port+"/", `,"hosts":{"svc.test":"127.0.0.2"}`), 0, 0))
	if st != 400 || errCode(m) != "invalid_plan" || tg.Conns() != 0 {
		t.Errorf("denied http.hosts address: %d %v", st, m)
	}
	st, m = a.do("POST", "/api/plans/send", sendBody(one("http://localhost:"+port+"/", ""), 0, 0))
	if st != 200 || m["kind"] != "blocked_target" || m["status"] != 0.0 || tg.Conns() != 0 {
		t.Errorf("denied once resolved: %d %v, target saw %d connections", st, m, tg.Conns())
	}
}

// At most two test requests are in flight; a third is 429 too_many_sends.
func TestSendTestRequestIsBounded(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	a := newStack(t, stackConfig{}).app
	body := sendBody(fmt.Sprintf(`{"name":"b","requests":[{"url":%q}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"},"http":{"timeout":"20s"}}`, tg.URL+"/"), 0, 0)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Go(func() { codes[i], _ = a.do("POST", "/api/plans/send", body) })
	}
	for deadline := time.Now().Add(10 * time.Second); tg.Requests() < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the target saw %d requests", tg.Requests())
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, m := a.do("POST", "/api/plans/send", body)
	once.Do(func() { close(release) })
	wg.Wait()
	if st != 429 || m["error"].(map[string]any)["code"] != "too_many_sends" || codes[0] != 200 || codes[1] != 200 {
		t.Errorf("third: %d %v; first two %v", st, m, codes)
	}
	if st, _ := a.do("POST", "/api/plans/send", body); st != 200 {
		t.Errorf("after: %d", st)
	}
}

// A test request is a tester's, and leaves an audit entry naming its target.
func TestSendTestRequestRoleAndAudit(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	a := newAuthApp(t, false, true)
	ann, tom, vic := a.login("ann", annPW), a.login("tom", tomPW), a.login("vic", vicPW)
	body := sendBody(fmt.Sprintf(`{"name":"r","requests":[{"url":%q}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, tg.URL+"/"), 0, 0)
	if st, m, _ := a.do(vic, "POST", "/api/plans/send", body); st != 403 || tg.Requests() != 0 {
		t.Errorf("viewer: %d %v", st, m)
	}
	a.must(tom, 200, "POST", "/api/plans/send", body)
	var last map[string]any
	for _, e := range auditEntries(a, ann) {
		if e["action"] == "plan.send" {
			last = e
		}
	}
	d, _ := json.Marshal(last)
	if last == nil || last["actor"] != "tom" || !strings.Contains(string(d), `"host":"`+tg.URL+`"`) || !strings.Contains(string(d), `"outcome":"sent"`) {
		t.Errorf("audit entry %s", d)
	}

	// A send the target policy refuses is audited too, with its outcome and why.
	metadata := sendBody(`{"name":"r","requests":[{"name":"meta","url":"http://169.254.169.254/latest"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`, 0, 0)
	if st, m, _ := a.do(tom, "POST", "/api/plans/send", metadata); st != 400 {
		t.Fatalf("a send to the cloud metadata address: %d %v", st, m)
	}
	last = nil
	for _, e := range auditEntries(a, ann) {
		if e["action"] == "plan.send" {
			last = e
		}
	}
	d, _ = json.Marshal(last)
	if last == nil || last["actor"] != "tom" || !strings.Contains(string(d), `"outcome":"refused"`) ||
		!strings.Contains(string(d), `"request":"meta"`) || !strings.Contains(string(d), `"error":"`) {
		t.Errorf("refused send's audit entry %s", d)
	}
}

// A send refused for too many at once (429) is audited with its outcome, like one that was sent.
func TestSendTestRequestRefusedIsAudited(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	a := newAuthApp(t, false, true)
	ann, tom := a.login("ann", annPW), a.login("tom", tomPW)
	body := sendBody(fmt.Sprintf(`{"name":"b","requests":[{"name":"slow","url":%q}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"},"http":{"timeout":"20s"}}`, tg.URL+"/"), 0, 0)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { a.do(tom, "POST", "/api/plans/send", body) })
	}
	for deadline := time.Now().Add(10 * time.Second); tg.Requests() < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the target saw %d requests", tg.Requests())
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, _, _ := a.do(tom, "POST", "/api/plans/send", body)
	once.Do(func() { close(release) })
	wg.Wait()
	if st != http.StatusTooManyRequests {
		t.Fatalf("third send: %d", st)
	}
	var sent, refused int
	for _, e := range auditEntries(a, ann) {
		if e["action"] != "plan.send" {
			continue
		}
		d, _ := json.Marshal(e)
		switch {
		case strings.Contains(string(d), `"outcome":"sent"`):
			sent++
		case strings.Contains(string(d), `"outcome":"refused"`) && strings.Contains(string(d), "test requests are being sent") && strings.Contains(string(d), `"request":"slow"`):
			refused++
		default:
			t.Errorf("audit entry %s", d)
		}
	}
	if sent != 2 || refused != 1 {
		t.Errorf("audited %d sent and %d refused sends, want 2 and 1", sent, refused)
	}
}

// The request index is required: a body without it is a 400 naming the field, not request 0.
func TestSendTestRequestNeedsItsIndex(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {})
	a := newApp(t)
	st, m := a.do("POST", "/api/plans/send", fmt.Sprintf(`{"plan":{"name":"r","requests":[{"url":%q}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}}`, tg.URL+"/"))
	fields, _ := m["error"].(map[string]any)["fields"].(map[string]any)
	if st != 400 || fields["request"] != "required" || tg.Requests() != 0 {
		t.Errorf("no request index: %d %v, target saw %d requests", st, m, tg.Requests())
	}
}
