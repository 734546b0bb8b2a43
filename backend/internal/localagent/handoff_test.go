package localagent

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
)

// A single-machine run's seconds and final reach the merge in memory (cluster.Handoff): nothing
// is published on the runs' snapshot subjects (a subscriber to volley.run.> on the embedded bus
// sees the runs' start broadcasts and no snapshot), the snapshot stream never stored a message,
// and the agent probes no clock (nothing on bus.SubjectTime). The results are the engine's run
// directly (both: the same fields, the counts the target's): a closed model, 2 VUs × 10
// iterations, sends 20 requests both ways; an open model, 40 iterations/s for 3 s, has the same
// iterations due in each second both ways (started + dropped, by due second: 40 each; started
// alone where neither run dropped one).
func TestInProcessRunPublishesNoSnapshot(t *testing.T) {
	tg, l := okTarget(t), startLocal(t)
	var mu sync.Mutex
	subjects := map[string]int{} // "snap", "ctl", "other", "time"
	count := func(m *nats.Msg) {
		kind := "other"
		switch {
		case m.Subject == bus.SubjectTime:
			kind = "time"
		case strings.Contains(m.Subject, ".snap."):
			kind = "snap"
		case strings.HasSuffix(m.Subject, ".ctl"):
			kind = "ctl"
		}
		mu.Lock()
		subjects[kind]++
		mu.Unlock()
	}
	for _, subject := range []string{"volley.run.>", bus.SubjectTime} {
		sub, err := l.ctl.Conn.Subscribe(subject, count)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	if err := l.ctl.Conn.Flush(); err != nil {
		t.Fatal(err)
	}

	closed := compiled(t, fmt.Sprintf(`{"name":"closed","requests":[{"url":%q}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":10}}`, tg.URL))
	direct, local := both(t, l, 1, closed, tg, nil)
	if direct.sent != 20 || local.sent != 20 {
		t.Errorf("closed model: the target saw %d requests directly and %d through the local agent, want 20", direct.sent, local.sent)
	}

	open := compiled(t, fmt.Sprintf(`{"name":"open","requests":[{"url":%q}],
		"load":{"executor":"constant-arrival-rate","rate":40,"duration":"3s","pre_allocated_vus":4,"max_vus":8}}`, tg.URL))
	// Whether an iteration is dropped depends on how busy the machine is (one due while every VU
	// is busy, or started too late), not on the path.
	loadDependent["DroppedIterations"] = true
	defer delete(loadDependent, "DroppedIterations")
	direct, local = both(t, l, 2, open, tg, nil)
	if len(direct.seconds) != len(local.seconds) || len(direct.seconds) < 3 {
		t.Fatalf("open model: %d seconds directly, %d through the local agent", len(direct.seconds), len(local.seconds))
	}
	for i, d := range direct.seconds {
		o := local.seconds[i]
		due, dueLocal := d.StartedIterations+d.DroppedIterations, o.StartedIterations+o.DroppedIterations
		if due != dueLocal || (i < 3 && due != 40) || (d.DroppedIterations == 0 && o.DroppedIterations == 0 && d.StartedIterations != o.StartedIterations) {
			t.Errorf("open model, second %d: started %d + dropped %d directly, %d + %d through the local agent (40 due)",
				d.ElapsedS, d.StartedIterations, d.DroppedIterations, o.StartedIterations, o.DroppedIterations)
		}
	}

	if err := l.ctl.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if subjects["snap"] != 0 || subjects["time"] != 0 || subjects["ctl"] < 2 {
		t.Errorf("messages seen on the bus by kind: %v; want no snapshot and no clock probe, the two runs' starts", subjects)
	}
	mu.Unlock()
	js, err := l.ctl.Conn.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if si, err := js.StreamInfo(cluster.SnapshotStream); err != nil || si.State.LastSeq != 0 {
		t.Errorf("the snapshot stream stored messages: %+v (%v)", si.State, err)
	}
}
