package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/engine"
)

// limitJS is a JetStream whose broker takes messages of at most limit bytes (nats.ErrMaxPayload
// past it) and records the ones it took.
type limitJS struct {
	jetstream.JetStream
	limit int
	mu    sync.Mutex
	took  [][]byte
	got   chan struct{}
}

func (j *limitJS) Publish(_ context.Context, _ string, data []byte, _ ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if len(data) > j.limit {
		return nil, nats.ErrMaxPayload
	}
	j.mu.Lock()
	j.took = append(j.took, data)
	j.mu.Unlock()
	j.got <- struct{}{}
	return &jetstream.PubAck{}, nil
}

// A final the broker refuses as too large is replaced by the same final failed, naming its size:
// the controller loses the agent at once, naming why, instead of waiting for the final until the
// run's end (it was dropped, and a local run hung for its whole end margin, then failed
// "no agent finished"). A second too large is dropped, as before.
func TestFinalTooLargeIsSentAsItsFailure(t *testing.T) {
	js := &limitJS{limit: 4096, got: make(chan struct{}, 4)}
	w := &worker{id: "a", js: js, sp: newSpool(), base: time.Now(), log: quiet()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.publish(ctx) }()
	defer func() { cancel(); <-done }()

	big := &engine.Final{Requests: 3, Aborted: strings.Repeat("x", 8192)}
	w.spoolSnap("", cluster.Snapshot{Run: 7, Agent: "a", Second: 2, Part: &cluster.SecondPart{Hist: strings.Repeat("y", 8192)}}, false)
	w.spoolSnap("", cluster.Snapshot{Run: 7, Agent: "a", Second: 3, StartedUnixNano: 5, Final: &cluster.FinalPart{State: big}}, true)
	select {
	case <-js.got:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing published")
	}
	cancel() // the publisher pops what Publish took before it looks at its context again
	<-done
	js.mu.Lock()
	defer js.mu.Unlock()
	if len(js.took) != 1 {
		t.Fatalf("published %d messages, want the final's stand-in only", len(js.took))
	}
	var s cluster.Snapshot
	if err := json.Unmarshal(js.took[0], &s); err != nil {
		t.Fatal(err)
	}
	if s.Run != 7 || s.Agent != "a" || s.Second != 3 || s.StartedUnixNano != 5 || s.Final == nil || s.Final.State != nil ||
		!strings.Contains(s.Error, "its final message could not be sent") || !strings.Contains(s.Error, "bytes") {
		t.Errorf("published %+v", s)
	}
	if w.sp.len() != 0 {
		t.Errorf("%d snapshots left in the spool", w.sp.len())
	}
}
