package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/store"
)

type fakeAgents struct{}

func (fakeAgents) List() []cluster.Agent {
	return []cluster.Agent{{ID: "gen-1", Host: "h1", Cores: 4, Version: "v", Labels: map[string]string{"zone": "a"}, Weight: 4,
		State: "idle", CPUPercent: 12.5, RSSBytes: 1 << 20, LastSeen: time.Unix(1_800_000_000, 0).UTC()}}
}
func (fakeAgents) JoinToken() string { return "vly1.secret.fp" }
func (fakeAgents) URL() string       { return "nats://127.0.0.1:4222" }

// agentsApp is an authenticated server (admin ann, viewer vic) with opts.
func agentsApp(t *testing.T, opts ...api.Option) *authApp {
	t.Helper()
	var svc *auth.Service
	a := newStack(t, stackConfig{opts: opts, handler: func(s *api.Server, st *store.Store) http.Handler {
		svc = auth.New(st, auth.Config{Hash: auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1}})
		for _, u := range []struct {
			name string
			role auth.Role
			pw   string
		}{{"ann", auth.Admin, annPW}, {"vic", auth.Viewer, vicPW}} {
			if _, err := svc.AddUser(t.Context(), u.name, u.role, u.pw); err != nil {
				t.Fatal(err)
			}
		}
		return s.UseAuth(api.AuthConfig{Service: svc}).Handler()
	}}).app
	return &authApp{t: t, url: a.url, svc: svc, answers: &syncBuf{}}
}

// GET /api/agents is a viewer's; the join token an admin's; without a listener the list is empty
// and the token a 409 that says how to turn the listener on.
func TestAgentsEndpoints(t *testing.T) {
	a := agentsApp(t, api.WithAgents(fakeAgents{}))
	ann, vic := a.login("ann", annPW), a.login("vic", vicPW)
	m := a.must(vic, 200, "GET", "/api/agents", "")
	list, _ := m["agents"].([]any)
	if m["listening"] != true || len(list) != 1 {
		t.Fatalf("agents: %v", m)
	}
	ag := list[0].(map[string]any)
	for k, want := range map[string]any{"id": "gen-1", "host": "h1", "cores": 4.0, "version": "v", "weight": 4.0, "state": "idle",
		"cpu_percent": 12.5, "rss_bytes": float64(1 << 20), "last_seen": "2027-01-15T08:00:00Z"} {
		if ag[k] != want {
			t.Errorf("%s = %v, want %v", k, ag[k], want)
		}
	}
	if st, m, _ := a.do(vic, "GET", "/api/agents/token", ""); st != 403 || errCode(m) != "forbidden" {
		t.Errorf("viewer token: %d %v", st, m)
	}
	if m := a.must(ann, 200, "GET", "/api/agents/token", ""); m["token"] != "vly1.secret.fp" || m["url"] != "nats://127.0.0.1:4222" {
		t.Errorf("token: %v", m)
	}

	off := agentsApp(t)
	ann = off.login("ann", annPW)
	if m := off.must(ann, 200, "GET", "/api/agents", ""); m["listening"] != false || len(m["agents"].([]any)) != 0 {
		t.Errorf("no listener: %v", m)
	}
	if st, m, _ := off.do(ann, "GET", "/api/agents/token", ""); st != 409 || errCode(m) != "agents_listener_off" {
		t.Errorf("no listener token: %d %v", st, m)
	}
}
