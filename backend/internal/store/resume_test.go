package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// A run over agents keeps its cluster JSON (SetRunCluster); at start-up ResumableRuns lists the
// running runs that have one, with their masked plan and last stored second; MarkInterrupted
// keeps those it is told to and marks the others; MarkRunInterrupted marks one (a resume that
// could not begin), ending it at its last stored second, and leaves an ended run alone.
func TestResumableRunsAndInterrupting(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "agents")
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	local := mustRun(t, s, p, t0)                    // running, no cluster: never resumable
	over := mustRun(t, s, p, t0.Add(time.Minute))    // running over agents, 5 seconds stored
	fresh := mustRun(t, s, p, t0.Add(2*time.Minute)) // running over agents, nothing stored yet
	ended := mustRun(t, s, p, t0.Add(3*time.Minute)) // over agents, finished
	for sec := 1; sec <= 5; sec++ {
		if err := s.AppendSample(ctx, over.ID, sample(sec, t0), progress(sec)); err != nil {
			t.Fatal(err)
		}
	}
	started := func(id int64) []byte {
		return fmt.Appendf(nil, `{"controller":"ctl-%d","agents":[{"id":"gen-a","weight":2},{"id":"gen-b","weight":1}],"start_at_unix_nano":1,"fence_after_ms":10000}`, id)
	}
	for _, r := range []*Run{over, fresh, ended} {
		if err := s.SetRunCluster(ctx, r.ID, started(r.ID)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishRun(ctx, ended.ID, StatusFinished, t0.Add(time.Hour), progress(1), []byte(`{}`), nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunCluster(ctx, 9999, started(9999)); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetRunCluster of a missing run: %v, want ErrNotFound", err)
	}
	if err := s.SetRunCluster(ctx, local.ID, []byte(`{"controller":`)); err == nil {
		t.Error("SetRunCluster stored JSON that is not valid")
	}

	// The ended run's controller is known; a running one's, a local run's and a missing run's not.
	if c, ok, err := s.EndedRunController(ctx, ended.ID); err != nil || !ok || c != fmt.Sprint("ctl-", ended.ID) {
		t.Errorf("EndedRunController(ended) = %q %v %v", c, ok, err)
	}
	for _, id := range []int64{over.ID, local.ID, 9999} {
		if c, ok, err := s.EndedRunController(ctx, id); err != nil || ok || c != "" {
			t.Errorf("EndedRunController(%d) = %q %v %v, want none", id, c, ok, err)
		}
	}

	rs, err := s.ResumableRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("ResumableRuns: %+v, want runs %d and %d", rs, over.ID, fresh.ID)
	}
	for i, want := range []struct {
		r    *Run
		last int
	}{{over, 5}, {fresh, 0}} {
		got := rs[i]
		if got.ID != want.r.ID || got.PlanID != p.ID || string(got.PlanSpec) != string(p.Spec) ||
			string(got.Cluster) != string(started(want.r.ID)) || got.LastSecond != want.last {
			t.Errorf("resumable %d: %+v (plan %s, cluster %s), want run %d last second %d", i, got, got.PlanSpec, got.Cluster, want.r.ID, want.last)
		}
	}

	now := t0.Add(time.Hour)
	ids, err := s.MarkInterrupted(ctx, now, over.ID, fresh.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != fmt.Sprint([]int64{local.ID}) {
		t.Errorf("MarkInterrupted keeping %d and %d marked %v, want [%d]", over.ID, fresh.ID, ids, local.ID)
	}
	for _, r := range []*Run{over, fresh} {
		if g, _ := s.GetRun(ctx, r.ID); g.Status != StatusRunning || g.EndedAt != nil {
			t.Errorf("kept run %d: %s ended %v, want still running", r.ID, g.Status, g.EndedAt)
		}
	}

	if err := s.MarkRunInterrupted(ctx, over.ID, now); err != nil {
		t.Fatal(err)
	}
	g, _ := s.GetRun(ctx, over.ID)
	if lastEnd := time.UnixMilli(sample(5, t0).TMs); g.Status != StatusInterrupted || g.EndedAt == nil || !g.EndedAt.Equal(lastEnd) ||
		g.Requests != progress(5).Requests {
		t.Errorf("run %d after MarkRunInterrupted: %+v, want interrupted at %v with its totals", over.ID, g, lastEnd)
	}
	if err := s.MarkRunInterrupted(ctx, fresh.ID, now); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.GetRun(ctx, fresh.ID); g.Status != StatusInterrupted || g.EndedAt == nil || !g.EndedAt.Equal(now) {
		t.Errorf("run %d without seconds: %s ended %v, want interrupted at %v", fresh.ID, g.Status, g.EndedAt, now)
	}
	if err := s.MarkRunInterrupted(ctx, ended.ID, now); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.GetRun(ctx, ended.ID); g.Status != StatusFinished || !g.EndedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("finished run touched: %s ended %v", g.Status, g.EndedAt)
	}
	if err := s.MarkRunInterrupted(ctx, 9999, now); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkRunInterrupted of a missing run: %v, want ErrNotFound", err)
	}
	if rs, err := s.ResumableRuns(ctx); err != nil || len(rs) != 0 {
		t.Errorf("ResumableRuns once none is running: %+v, %v", rs, err)
	}
}
