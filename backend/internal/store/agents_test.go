package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// A run over agents: FinishRun stores agents and degraded (GetRun and ListRuns return them; a
// local run keeps 0 and false); an agent's second replayed is stored once; AgentSeconds pages by
// whole seconds; deleting the run deletes its agents' seconds.
func TestAgentSecondsAndRunColumns(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "agents")
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	local := mustRun(t, s, p, t0)
	r := mustRun(t, s, p, t0.Add(time.Minute))

	agents := []string{"gen-a", "gen-b", "gen-c"}
	const seconds = 700 // 2100 rows: three pages of at most 1000 rows
	for sec := 1; sec <= seconds; sec++ {
		for _, a := range agents {
			ok, err := s.AppendAgentSecond(ctx, r.ID, a, sec, fmt.Appendf(nil, `{"elapsed_s":%d,"agent":%q}`, sec, a))
			if err != nil || !ok {
				t.Fatalf("second %d of %s: stored %v, %v", sec, a, ok, err)
			}
		}
	}
	// The replay of a second already stored is ignored, its first copy kept.
	if ok, err := s.AppendAgentSecond(ctx, r.ID, "gen-b", 5, []byte(`{"replayed":true}`)); err != nil || ok {
		t.Fatalf("replay: stored %v, %v; want false, nil", ok, err)
	}
	if n := count(t, s, "SELECT count(*) FROM run_agent_seconds WHERE sample LIKE '%replayed%'"); n != 0 {
		t.Errorf("the replay replaced %d rows", n)
	}
	if _, err := s.AppendAgentSecond(ctx, 9999, "gen-a", 1, []byte(`{}`)); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing run: %v, want ErrNotFound", err)
	}

	var got []AgentSecond
	pages := 0
	for from := 1; ; pages++ {
		page, next, err := s.AgentSeconds(ctx, r.ID, from, MinAgentRows)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > MinAgentRows || len(page)%len(agents) != 0 {
			t.Fatalf("page from %d: %d rows, want whole seconds of %d agents within %d", from, len(page), len(agents), MinAgentRows)
		}
		got = append(got, page...)
		if next == 0 {
			break
		}
		if next <= from {
			t.Fatalf("next %d after from %d", next, from)
		}
		from = next
	}
	if pages != 2 || len(got) != seconds*len(agents) {
		t.Fatalf("%d rows in %d pages, want %d in 3", len(got), pages+1, seconds*len(agents))
	}
	for i, a := range got {
		sec, ag := i/len(agents)+1, agents[i%len(agents)]
		if a.Second != sec || a.Agent != ag || string(a.Sample) != fmt.Sprintf(`{"elapsed_s":%d,"agent":%q}`, sec, ag) {
			t.Fatalf("row %d: %s second %d %s, want %s second %d", i, a.Agent, a.Second, a.Sample, ag, sec)
		}
	}
	if page, next, err := s.AgentSeconds(ctx, local.ID, 1, 0); err != nil || len(page) != 0 || next != 0 {
		t.Errorf("local run: %d rows, next %d, %v", len(page), next, err)
	}
	if _, _, err := s.AgentSeconds(ctx, 9999, 1, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing run: %v, want ErrNotFound", err)
	}

	prog := progress(1)
	prog.Agents, prog.Degraded = 3, true
	if err := s.FinishRun(ctx, r.ID, StatusFinished, t0.Add(time.Hour), prog, []byte(`{}`), nil, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, local.ID, StatusFinished, t0.Add(time.Hour), progress(1), []byte(`{}`), nil, ""); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64][2]any{r.ID: {3, true}, local.ID: {0, false}} {
		g, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if g.Agents != want[0] || g.Degraded != want[1] {
			t.Errorf("GetRun %d: agents %d degraded %v, want %v", id, g.Agents, g.Degraded, want)
		}
	}
	list, _, err := s.ListRuns(ctx, RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != r.ID || list[0].Agents != 3 || !list[0].Degraded || list[1].Agents != 0 || list[1].Degraded {
		t.Errorf("ListRuns: %+v", list)
	}

	if err := s.DeleteRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "SELECT count(*) FROM run_agent_seconds"); n != 0 {
		t.Errorf("%d agent seconds left after the run was deleted", n)
	}
}
