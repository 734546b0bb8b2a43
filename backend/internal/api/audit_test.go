package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// auditPlanJSON is a one-request plan for url carrying an Authorization header.
func auditPlanJSON(name, reqName, url, authz, dur string) string {
	return fmt.Sprintf(`{"name":%q,"requests":[{"name":%q,"url":%q,"headers":{"Authorization":%q}}],`+
		`"load":{"executor":"constant-vus","vus":1,"duration":%q},"http":{"timeout":"2s"}}`, name, reqName, url, authz, dur)
}

// auditWaitRun waits until run id is no longer running.
func auditWaitRun(t *testing.T, a *authApp, c cred, id int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := a.must(c, 200, "GET", fmt.Sprintf("/api/runs/%d", id), "")
		if s := r["status"]; s != "running" && s != "stopping" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d still %v", id, r["status"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// auditEntries returns the audit log, oldest first.
func auditEntries(a *authApp, admin cred) []map[string]any {
	log := a.must(admin, 200, "GET", "/api/audit?limit=200", "")
	items := log["items"].([]any)
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it.(map[string]any)
	}
	return out
}

// authSeen is a target that records the Authorization header of the requests it gets.
type authSeen struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (s *authSeen) has(v string) bool { s.mu.Lock(); defer s.mu.Unlock(); return s.seen[v] }

func newAuthSeenTarget(t *testing.T) (*authSeen, string) {
	s := &authSeen{seen: map[string]bool{}}
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen[r.Header.Get("Authorization")] = true
		s.mu.Unlock()
		w.WriteHeader(204)
	})
	return s, tg.URL
}

// Secret, plan and run changes are in the audit log with who made them; no secret value is.
func TestAuditPlanRunAndSecretChanges(t *testing.T) {
	a := newAuthApp(t, false, true)
	ann, tom := a.login("ann", annPW), a.login("tom", tomPW)
	_, url1 := newAuthSeenTarget(t)
	_, url2 := newAuthSeenTarget(t)
	host1, host2 := strings.TrimPrefix(url1, "http://"), strings.TrimPrefix(url2, "http://")
	value, header := canary(t, "SECRET"), canary(t, "HEADER")

	a.must(ann, 201, "PUT", "/api/secrets/API_KEY", fmt.Sprintf(`{"value":%q}`, value))
	a.must(ann, 200, "PUT", "/api/secrets/API_KEY", fmt.Sprintf(`{"value":%q}`, value+"2"))
	p := a.must(tom, 201, "POST", "/api/plans", auditPlanJSON("audited", "r", url1+"/x", "Bearer "+header, "30s"))
	id := int(p["id"].(float64))
	path := fmt.Sprintf("/api/plans/%d", id)
	a.must(tom, 200, "PUT", path, auditPlanJSON("audited", "r", url1+"/y", "Bearer ********", "30s"))
	a.must(tom, 200, "PUT", path, auditPlanJSON("renamed", "r", url2+"/y", "Bearer {{secret.API_KEY}}", "30s"))
	run := a.must(tom, 201, "POST", path+"/runs", "")
	rid := int(run["id"].(float64))
	a.must(tom, 202, "POST", fmt.Sprintf("/api/runs/%d/stop", rid), "")
	auditWaitRun(t, a, tom, rid)
	a.must(tom, 204, "DELETE", fmt.Sprintf("/api/runs/%d", rid), "")
	a.must(tom, 204, "DELETE", path, "")
	a.must(ann, 204, "DELETE", "/api/secrets/API_KEY", "")

	type want struct {
		actor, action, target string
		detail                map[string]any
	}
	plan, runT := fmt.Sprintf("plan %d", id), fmt.Sprintf("run %d", rid)
	fid, frid := float64(id), float64(rid)
	wants := []want{
		{"ann", "secret.set", "secret API_KEY", map[string]any{"created": true}},
		{"ann", "secret.set", "secret API_KEY", map[string]any{"created": false}},
		{"tom", "plan.create", plan, map[string]any{"plan_id": fid, "plan_name": "audited", "hosts": []any{host1}}},
		{"tom", "plan.update", plan, map[string]any{"plan_id": fid, "plan_name": "audited", "hosts": []any{host1}, "hosts_changed": false}},
		{"tom", "plan.update", plan, map[string]any{"plan_id": fid, "plan_name": "renamed", "hosts": []any{host2},
			"hosts_changed": true, "previous_hosts": []any{host1}, "previous_name": "audited"}},
		{"tom", "run.start", runT, nil},
		{"tom", "run.stop", runT, nil},
		{"tom", "run.delete", runT, map[string]any{"run_id": frid, "plan_id": fid, "plan_name": "renamed"}},
		{"tom", "plan.delete", plan, map[string]any{"plan_id": fid, "plan_name": "renamed", "hosts": []any{host2}}},
		{"ann", "secret.delete", "secret API_KEY", nil},
	}
	var got []map[string]any
	for _, e := range auditEntries(a, ann) {
		if e["action"] != "login" {
			got = append(got, e)
		}
	}
	if len(got) != len(wants) {
		t.Fatalf("audit log: %d entries, want %d: %v", len(got), len(wants), got)
	}
	for i, w := range wants {
		e := got[i]
		if e["actor"] != w.actor || e["action"] != w.action || e["target"] != w.target {
			t.Errorf("entry %d: %v %v %v, want %s %s %s", i, e["actor"], e["action"], e["target"], w.actor, w.action, w.target)
		}
		d, _ := e["detail"].(map[string]any)
		for k, v := range w.detail {
			if fmt.Sprint(d[k]) != fmt.Sprint(v) {
				t.Errorf("entry %d (%s): detail %s = %v, want %v", i, w.action, k, d[k], v)
			}
		}
		if _, ok := d["previous_hosts"]; ok && w.detail["previous_hosts"] == nil {
			t.Errorf("entry %d (%s): previous_hosts without a change: %v", i, w.action, d)
		}
	}
	a.checkNoSecrets(value, header, annPW, tomPW)
}

// A saved plan's masked header value is never sent to a target its request was re-pointed at:
// the PUT is refused and the stored value stays; a PUT on the same origin keeps it.
func TestMaskedHeaderNotKeptForANewTarget(t *testing.T) {
	a := newAuthApp(t, false, true)
	tom := a.login("tom", tomPW)
	seen1, url1 := newAuthSeenTarget(t)
	seen2, url2 := newAuthSeenTarget(t)
	header := "Bearer " + canary(t, "HEADER")
	p := a.must(tom, 201, "POST", "/api/plans", auditPlanJSON("p", "r", url1+"/x", header, "300ms"))
	path := fmt.Sprintf("/api/plans/%d", int(p["id"].(float64)))
	shown := a.must(tom, 200, "GET", path, "")
	if !strings.Contains(fmt.Sprint(shown["plan"]), "********") {
		t.Fatalf("not masked: %v", shown)
	}

	for name, body := range map[string]string{
		"by name":     auditPlanJSON("p", "r", url2+"/x", "********", "300ms"),
		"by position": auditPlanJSON("p", "other name", url2+"/x", "********", "300ms"),
		"by scheme":   auditPlanJSON("p", "r", strings.Replace(url1, "http:", "https:", 1)+"/x", "********", "300ms"),
	} {
		st, m, _ := a.do(tom, "PUT", path, body)
		e, _ := m["error"].(map[string]any)
		f, _ := e["fields"].(map[string]any)
		msg, _ := f["requests[0].headers"].(string)
		if st != 400 || errCode(m) != "invalid_plan" || !strings.Contains(msg, `"Authorization"`) ||
			!strings.Contains(msg, "target changed") || !strings.Contains(msg, "enter its value again") {
			t.Errorf("%s: re-targeting PUT: %d %v", name, st, m)
		}
	}
	run := func() {
		t.Helper()
		r := a.must(tom, 201, "POST", path+"/runs", "")
		auditWaitRun(t, a, tom, int(r["id"].(float64)))
	}
	run()
	if !seen1.has(header) || seen2.has(header) || len(seen2.seen) > 0 {
		t.Fatalf("after the refused PUTs: first target got the value %v, second target got %v", seen1.has(header), seen2.seen)
	}
	// Same origin, another path: the placeholder keeps the value.
	a.must(tom, 200, "PUT", path, auditPlanJSON("p", "r", url1+"/other?q=1", "********", "300ms"))
	seen1.mu.Lock()
	seen1.seen = map[string]bool{}
	seen1.mu.Unlock()
	run()
	if !seen1.has(header) {
		t.Errorf("same-origin PUT lost the value: %v", seen1.seen)
	}
	// Re-entered for the new target, it goes there.
	a.must(tom, 200, "PUT", path, auditPlanJSON("p", "r", url2+"/x", "Bearer new", "300ms"))
	run()
	if !seen2.has("Bearer new") || seen2.has(header) {
		t.Errorf("second target: %v", seen2.seen)
	}
	a.checkNoSecrets(header)
}

// Testers read the secrets' names (to use them in plans), never values; only an admin sets or
// deletes one. Viewers see none.
func TestTesterListsSecretNamesOnly(t *testing.T) {
	a := newAuthApp(t, false, true)
	ann, tom, vic := a.login("ann", annPW), a.login("tom", tomPW), a.login("vic", vicPW)
	value := canary(t, "SECRET")
	a.must(ann, 201, "PUT", "/api/secrets/API_KEY", fmt.Sprintf(`{"value":%q}`, value))

	l := a.must(tom, 200, "GET", "/api/secrets", "")
	items, _ := l["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["name"] != "API_KEY" {
		t.Errorf("tester's list: %v", l)
	}
	for k := range items[0].(map[string]any) {
		if k != "name" && k != "created_at" && k != "updated_at" {
			t.Errorf("list shows %q", k)
		}
	}
	for _, mp := range [][3]string{
		{"PUT", "/api/secrets/API_KEY", `{"value":"x"}`}, {"PUT", "/api/secrets/NEW", `{"value":"x"}`},
		{"DELETE", "/api/secrets/API_KEY", ""},
	} {
		if st, m, _ := a.do(tom, mp[0], mp[1], mp[2]); st != 403 || errCode(m) != "forbidden" {
			t.Errorf("tester %s %s: %d %v, want 403", mp[0], mp[1], st, m)
		}
	}
	for _, mp := range [][3]string{{"GET", "/api/secrets", ""}, {"DELETE", "/api/secrets/API_KEY", ""}} {
		if st, m, _ := a.do(vic, mp[0], mp[1], mp[2]); st != 403 {
			t.Errorf("viewer %s %s: %d %v, want 403", mp[0], mp[1], st, m)
		}
	}
	// Still there, unchanged, and nobody but ann changed it.
	if l := a.must(ann, 200, "GET", "/api/secrets", ""); l["total"].(float64) != 1 {
		t.Errorf("after the refused changes: %v", l)
	}
	for _, e := range auditEntries(a, ann) {
		if strings.HasPrefix(e["action"].(string), "secret.") && e["actor"] != "ann" {
			t.Errorf("audit: %v", e)
		}
	}
	a.checkNoSecrets(value)
}
