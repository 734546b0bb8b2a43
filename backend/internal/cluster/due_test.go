package cluster

import (
	"fmt"
	"net/http"
	"testing"

	seg "github.com/volley-load/volley/backend/internal/segment"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// Must-hold 4 of issue 14 in one process: constant-arrival-rate 1000/s for 2 s as three agents'
// engines weighted 2:1:1, their seconds sent through JSON as SecondParts: each merged second
// holds exactly the 1000 iterations due in it (started + dropped, counted by due second), and
// the merged seconds add up to the merged summary.
func TestMergedSecondsCountByDueSecond(t *testing.T) {
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	c := compile(t, fmt.Sprintf(`{"name":"due","requests":[{"url":"%s/"}],
		"load":{"executor":"constant-arrival-rate","rate":1000,"duration":"2s","pre_allocated_vus":10,"max_vus":100},
		"http":{"timeout":"2s"}}`, tg.URL))
	agents, weights := []string{"a", "b", "c"}, []int{2, 1, 1}
	sq, err := seg.New(weights...)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMerger(c, agents, weights)
	seconds, finals := runParts(t, c, sq, agents)
	if t.Failed() {
		return
	}
	sum, err := m.Summary(finals)
	if err != nil {
		t.Fatal(err)
	}
	var started, dropped int64
	var per []string
	for k := range seconds[0] {
		parts := make([]*SecondPart, len(agents))
		for j := range agents {
			if k >= len(seconds[j]) {
				t.Fatalf("agent %s has %d seconds, agent a %d", agents[j], len(seconds[j]), len(seconds[0]))
			}
			if err := m.CheckPart(j, seconds[j][k]); err != nil {
				t.Fatalf("agent %s, second %d: %v", agents[j], k+1, err)
			}
			parts[j] = seconds[j][k]
		}
		s := m.Second(k+1, parts)
		if n := s.StartedIterations + s.DroppedIterations; n != 1000 {
			t.Errorf("merged second %d: %d started + %d dropped = %d, want the 1000 due in it",
				s.ElapsedS, s.StartedIterations, s.DroppedIterations, n)
		}
		started, dropped = started+s.StartedIterations, dropped+s.DroppedIterations
		per = append(per, fmt.Sprintf("%d+%d", s.StartedIterations, s.DroppedIterations))
	}
	t.Logf("merged seconds (started+dropped): %v", per)
	if n := tg.Requests(); len(per) != 2 || started != sum.Requests+sum.Interrupted || dropped != sum.DroppedIterations ||
		n < sum.Successes || n > sum.Requests {
		t.Errorf("%d merged seconds: %d started, %d dropped; summary %d sent + %d interrupted, %d dropped; target %d",
			len(per), started, dropped, sum.Requests, sum.Interrupted, sum.DroppedIterations, tg.Requests())
	}
}
