package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// volley serve wires the cluster into the API: with --agents-listen a run over agents reaches the
// registry's Pick (no agent joined: 409 agents_unavailable); without it the answer is 409
// agents_listener_off. Either way no run is created.
func TestServeRunsOverAgentsWiring(t *testing.T) {
	for _, tc := range []struct {
		listen, code string
	}{{"127.0.0.1:0", "agents_unavailable"}, {"", "agents_listener_off"}} {
		opts := defaultServeOpts()
		opts.agentsListen = tc.listen
		db := filepath.Join(t.TempDir(), "volley.db")
		addr := startServe(t, db, opts)
		base := "http://" + addr
		post := func(path, body string) (int, map[string]any) {
			req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(res.Body).Decode(&m)
			return res.StatusCode, m
		}
		st, p := post("/api/plans", `{"name":"p","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"vus":1,"duration":"1s"}}`)
		if st != 201 {
			t.Fatalf("create plan: %d %v", st, p)
		}
		st, m := post(fmt.Sprintf("/api/plans/%v/runs", p["id"]), `{"agents":1}`)
		e, _ := m["error"].(map[string]any)
		if st != 409 || e["code"] != tc.code {
			t.Errorf("--agents-listen %q: %d %v, want 409 %s", tc.listen, st, m, tc.code)
		}
		res, err := http.Get(base + "/api/runs")
		if err != nil {
			t.Fatal(err)
		}
		var l map[string]any
		_ = json.NewDecoder(res.Body).Decode(&l)
		res.Body.Close()
		if l["total"] != 0.0 {
			t.Errorf("--agents-listen %q: %v runs created", tc.listen, l["total"])
		}
	}
}
