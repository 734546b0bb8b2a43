package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/volley-load/volley/backend/internal/api"
	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/store"
)

// A change of a run over agents that some agents applied and another did not answers 409
// agents_refused, yet it changed the run's load (the coordinator recorded it): it is audited as
// run.control, as an applied change is, and its answer carries the event and the agents that
// applied it; a change no agent applied is not audited and carries neither.
func TestPartlyAppliedControlIsAudited(t *testing.T) {
	fc := &fakeCluster{handed: make(chan struct{}), stopped: make(chan struct{})}
	var svc *auth.Service
	s := newStack(t, stackConfig{opts: []api.Option{api.WithCluster(fc)}, handler: func(as *api.Server, st *store.Store) http.Handler {
		svc = auth.New(st, auth.Config{Hash: auth.HashParams{MemoryKiB: 64, Time: 1, Threads: 1}})
		a := as.UseAuth(api.AuthConfig{Service: svc, AllowLocal: true}) // no users: the loopback caller is the admin
		return a.Guarded(a.Router())
	}})
	answers := make(chan error, 2)
	s.rn.SetDriveControl(func(id int64, ch runner.Change) (metrics.RunEvent, error) {
		err := <-answers
		var ce *cluster.ControlError
		if e, ok := err.(*cluster.ControlError); ok && len(e.Applied) > 0 {
			ce = e
		}
		if err != nil && ce == nil {
			return metrics.RunEvent{}, err
		}
		return metrics.RunEvent{Kind: "vus", From: 2, To: float64(*ch.VUs), By: ch.By}, err
	})
	id := startOverAgents(t, s, fc)
	control := fmt.Sprintf("/api/runs/%d/control", id)
	answers <- &cluster.ControlError{Agent: "gen-b", Reason: "agent gen-b: it did not answer within 5s", Applied: []string{"gen-a"}}
	answers <- &cluster.ControlError{Agent: "gen-a", Reason: "agent gen-a: it is not connected"}
	for i, body := range []string{`{"vus":4}`, `{"vus":5}`} {
		status, m := s.app.do("POST", control, body)
		e, _ := m["error"].(map[string]any)
		if status != 409 || e["code"] != "agents_refused" {
			t.Errorf("%s: %d %v, want 409 agents_refused", body, status, m)
		}
		// The answer says what changed: the event recorded and the agents that applied it.
		ev, _ := e["event"].(map[string]any)
		if got := fmt.Sprintf("%v %v %v %v", ev["kind"], ev["from"], ev["to"], e["applied"]); i == 0 && got != "vus 2 4 [gen-a]" {
			t.Errorf("%s: event and applied %q, want \"vus 2 4 [gen-a]\" (%v)", body, got, m)
		} else if i == 1 && (e["event"] != nil || e["applied"] != nil) {
			t.Errorf("%s: no agent applied it, yet %v", body, m)
		}
	}
	if status, m := s.app.do("POST", fmt.Sprintf("/api/runs/%d/stop", id), ""); status != 202 {
		t.Fatalf("stop: %d %v", status, m)
	}
	<-fc.stopped
	<-s.rn.Done(id)

	entries, _, err := svc.AuditLog(t.Context(), 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var controls []string
	for _, e := range entries {
		if e.Action == auth.ActRunControl {
			controls = append(controls, fmt.Sprintf("%s %v→%v", e.Target, e.Detail["from"], e.Detail["to"]))
		}
	}
	if want := []string{fmt.Sprintf("run %d 2→4", id)}; fmt.Sprint(controls) != fmt.Sprint(want) {
		t.Errorf("run.control entries %v, want %v (the change gen-a applied, not the one no agent did)", controls, want)
	}
}

// startOverAgents starts a run over fc's two agents through the API and returns its id once fc
// has handed its seconds.
func startOverAgents(t *testing.T, s *stack, fc *fakeCluster) int64 {
	t.Helper()
	status, got := s.app.do("POST", fmt.Sprintf("/api/plans/%d/runs", mustPlanID(t, s.st, "agents")), `{"agents":2}`)
	if status != 201 {
		t.Fatalf("start: %d %v", status, got)
	}
	<-fc.handed
	return int64(got["id"].(float64))
}
