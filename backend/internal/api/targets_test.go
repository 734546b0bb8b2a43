package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// newPolicyApps serves one SQLite file through two servers: one with the default target
// policy, one whose administrator denies loopback (as after a policy change).
func newPolicyApps(t *testing.T) (lax, strict *app) {
	t.Helper()
	deny, err := netpolicy.New([]string{"10.9.0.0/16"}, []string{"127.0.0.0/8", "*.corp.test"})
	if err != nil {
		t.Fatal(err)
	}
	l := newStack(t, stackConfig{})
	return l.app, newStack(t, stackConfig{store: l.st, policy: deny}).app
}

func fieldOf(m map[string]any, name string) string {
	e, _ := m["error"].(map[string]any)
	f, _ := e["fields"].(map[string]any)
	s, _ := f[name].(string)
	return s
}

func TestTargetPolicyAtValidation(t *testing.T) {
	lax, _ := newPolicyApps(t)
	for _, c := range []struct{ url, hosts, field, want string }{
		{"http://169.254.169.254/latest/meta-data/", "", "requests[0].url", "169.254.169.254 is denied by the server's target policy (link-local / cloud metadata)"},
		{"http://0xA9FEA9FE/", "", "requests[0].url", "0xA9FEA9FE (169.254.169.254) is denied"},
		{"http://2852039166:80/", "", "requests[0].url", "(169.254.169.254) is denied"},
		{"http://0251.0376.0251.0376/", "", "requests[0].url", "cloud metadata"},
		{"http://[::ffff:169.254.169.254]/", "", "requests[0].url", "cloud metadata"},
		{"http://[fd00:ec2::254]/", "", "requests[0].url", "cloud metadata"},
		{"http://metadata.google.internal./computeMetadata/v1/", "", "requests[0].url", "metadata.google.internal. is denied"},
		{"http://[fe80::1%25eth0]:8080/", "", "requests[0].url", "link-local"},
		{"http://0.0.0.0:8080/", "", "requests[0].url", "unspecified"},
		{"http://224.0.0.1/", "", "requests[0].url", "multicast"},
		{"http://255.255.255.255/", "", "requests[0].url", "broadcast"},
		{"http://svc.test/", `"svc.test":"127.0.0.1:9000, 169.254.169.254:80"`, "http.hosts", `"svc.test" → 169.254.169.254 is denied`},
		{"http://svc.test/", `"svc.test":"[fd00:ec2::254]"`, "http.hosts", "cloud metadata"},
		{"http://127.0.0.1:9/", `proxy:http://169.254.169.254:3128`, "http.proxy", "169.254.169.254 is denied by the server's target policy (link-local / cloud metadata)"},
	} {
		hosts := ""
		if proxy, ok := strings.CutPrefix(c.hosts, "proxy:"); ok {
			hosts = `,"proxy":"` + proxy + `"`
		} else if c.hosts != "" {
			hosts = `,"hosts":{` + c.hosts + `}`
		}
		body := `{"name":"p","requests":[{"url":"` + c.url + `"}],"load":{"vus":1,"duration":"1s"},"http":{"timeout":"1s"` + hosts + `}}`
		status, m := lax.do("POST", "/api/plans", body)
		if status != http.StatusBadRequest || !strings.Contains(fieldOf(m, c.field), c.want) {
			t.Errorf("%s %s: status %d, %s = %q; want 400 with %q", c.url, c.hosts, status, c.field, fieldOf(m, c.field), c.want)
		}
	}
	// allowed: loopback and private, whatever the spelling
	for _, u := range []string{"http://127.0.0.1:9/", "http://2130706433:9/", "http://[::1]:9/", "http://10.1.2.3:9/"} {
		if status, m := lax.do("POST", "/api/plans", planJSON(u, 1, "1s")); status != http.StatusCreated {
			t.Errorf("%s: %d %v", u, status, m)
		}
	}
}

// A plan saved under one policy and started under a stricter one is refused with the field
// named, and no run is created or sent; updates are refused the same way.
func TestRunAgainstDeniedTargetIsRefused(t *testing.T) {
	lax, strict := newPolicyApps(t)
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	if status, m := lax.do("POST", "/api/plans", planJSON(tg.URL+"/", 1, "1s")); status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, m)
	}
	status, m := strict.do("POST", "/api/plans/1/runs", "")
	if status != http.StatusBadRequest || !strings.Contains(fieldOf(m, "requests[0].url"), "denied by rule 127.0.0.0/8") {
		t.Fatalf("start: %d %v", status, m)
	}
	if _, m := strict.do("GET", "/api/runs", ""); m["total"] != float64(0) {
		t.Errorf("a run was created: %v", m)
	}
	if tg.Requests() != 0 {
		t.Errorf("the target received %d requests", tg.Requests())
	}
	status, m = strict.do("PUT", "/api/plans/1", planJSON("http://app.corp.test:8080/", 1, "1s"))
	if status != http.StatusBadRequest || !strings.Contains(fieldOf(m, "requests[0].url"), "denied by rule *.corp.test") {
		t.Errorf("update: %d %v", status, m)
	}
	if _, m := strict.do("GET", "/api/plans/1", ""); !strings.Contains(m["plan"].(map[string]any)["requests"].([]any)[0].(map[string]any)["url"].(string), "127.0.0.1") {
		t.Errorf("the refused update changed the plan: %v", m)
	}
	// the lax server runs it
	if status, m := lax.do("POST", "/api/plans/1/runs", ""); status != http.StatusCreated {
		t.Errorf("start under the default policy: %d %v", status, m)
	}
}

func TestTargetPolicySettings(t *testing.T) {
	lax, strict := newPolicyApps(t)
	status, m := strict.do("GET", "/api/settings/target-policy", "")
	if status != http.StatusOK {
		t.Fatalf("%d %v", status, m)
	}
	deny, _ := m["deny"].([]any)
	allow, _ := m["allow"].([]any)
	builtin, _ := m["builtin_deny"].([]any)
	if len(deny) != 2 || deny[0] != "127.0.0.0/8" || len(allow) != 1 || allow[0] != "10.9.0.0/16" || len(builtin) < 10 || m["deny_all"] != false {
		t.Errorf("policy %v", m)
	}
	first, _ := builtin[0].(map[string]any)
	if first["target"] == "" || first["reason"] == "" {
		t.Errorf("built-in rule %v", first)
	}
	status, m = lax.do("GET", "/api/settings/target-policy", "")
	if status != http.StatusOK || len(m["deny"].([]any)) != 0 {
		t.Errorf("default: %d %v", status, m)
	}
	if status, _ := lax.do("PUT", "/api/settings/target-policy", "{}"); status != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d, want 405 (read-only)", status)
	}
}
