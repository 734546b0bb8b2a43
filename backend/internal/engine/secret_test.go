package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// {{secret.NAME}} values reach the target in the URL path, a header and the body; a request
// whose only templated parts are secrets stays static (serialized once); the values appear
// nowhere in the summary, the samples or the engine's request names; the plan is not changed.
func TestSecretsReachTheTargetOnly(t *testing.T) {
	const canary = "cAnArY7f3e9"
	var got seen
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.add(r.URL.Path + "|" + r.Header.Get("Authorization") + "|" + r.Header.Get("X-Key") + "|" + string(b))
	})
	p := mustPlan(t, fmt.Sprintf(`{"name":"s","flow":"sequence","requests":[
		{"url":"%s/p/{{secret.PATH}}?key={{secret.KEY}}","headers":{"Authorization":"Bearer {{secret.KEY}}","X-Key":"{{secret.KEY}}-{{vu}}"},
		 "method":"POST","body":"k={{secret.KEY}}"},
		{"name":"static","url":"%s/s/{{secret.PATH}}","headers":{"Authorization":"Bearer {{secret.KEY}}"}}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":2}}`, tg.URL, tg.URL))
	if _, err := newEngine(p, Options{}); err == nil || !strings.Contains(err.Error(), "requests[0].url") {
		t.Fatalf("missing secrets: %v", err)
	}
	p.Secrets = plan.SecretValues{"KEY": canary, "PATH": "pa" + canary}
	e, err := newEngine(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.reqs[1].wire == nil || e.reqs[0].wire != nil {
		t.Errorf("a request of literals and secrets should be static, a templated one not")
	}
	if p.Requests[0].URL != tg.URL+"/p/{{secret.PATH}}?key={{secret.KEY}}" || p.Requests[1].Headers["Authorization"] != "Bearer {{secret.KEY}}" {
		t.Errorf("the plan was changed: %+v", p.Requests)
	}
	sum, samples := run(t, p)
	if sum.Requests != 8 || sum.Errors != 0 {
		t.Fatalf("requests %d, errors %v", sum.Requests, sum.ErrorKinds)
	}
	want := map[string]bool{
		"/p/pa" + canary + "|Bearer " + canary + "|" + canary + "-1|k=" + canary: true,
		"/p/pa" + canary + "|Bearer " + canary + "|" + canary + "-2|k=" + canary: true,
		"/s/pa" + canary + "|Bearer " + canary + "||":                            true,
	}
	for _, line := range got.all() {
		if !want[line] {
			t.Errorf("the target received %q", line)
		}
	}
	out, _ := json.Marshal(struct {
		S any
		M any
	}{sum, samples})
	if strings.Contains(string(out), canary) {
		t.Errorf("the canary is in the summary or samples")
	}
	if !strings.Contains(string(out), "POST "+tg.URL+"/p/{{secret.PATH}}") {
		t.Errorf("by_name lacks the default name without the query string: %v", sum.ByName)
	}
}
