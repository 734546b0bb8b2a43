package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/volley-load/volley/backend/internal/engine"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// What a Handoff gives the coordinator is what the snapshot stream's JSON gives it, value for
// value (reflect.DeepEqual with the snapshot sent through JSON, as remote agents' travel): every
// second and the final of a real engine's run of two request names, one failing its check, with
// a threshold — but for an empty histogram of the final's state, whose counts JSON gives as
// zeros and memory as nil (engine.Hist: nil when empty; the summary is the same). The agent's
// own values are left as they were.
func TestHandoffGivesWhatTheWireGives(t *testing.T) {
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	c := compile(t, fmt.Sprintf(`{"name":"handoff","think_time":"20ms","requests":[
		{"name":"ok","url":"%s/ok","checks":[{"type":"status","op":"eq","value":200}]},
		{"name":"bad","url":"%s/bad","checks":[{"type":"status","op":"eq","value":200}]}],
		"load":{"executor":"constant-vus","vus":2,"duration":"1500ms"},"http":{"timeout":"2s"},
		"thresholds":[{"expr":"p(99)<2000ms"}]}`, tg.URL, tg.URL))
	var snaps []Snapshot
	e, err := engine.New(c, engine.Options{OnSample: func(s metrics.Sample) {
		snaps = append(snaps, Snapshot{Run: 7, Agent: "local", Second: s.ElapsedS, Part: NewSecondPart(s)})
	}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	snaps = append(snaps, Snapshot{Run: 7, Agent: "local", Second: len(snaps) + 1, StartedUnixNano: 1, Final: NewFinalPart(e, sum)})
	if len(snaps) < 3 || sum.Requests == 0 || len(sum.Checks) != 2 || len(sum.Failures) == 0 || snaps[0].Part.Sample.Hist == "" {
		t.Fatalf("the run: %d snapshots, summary %+v", len(snaps), sum)
	}

	h := NewHandoff()
	ctx := context.Background()
	if err := h.Deliver(ctx, snaps[0]); !errors.Is(err, ErrNoRun) {
		t.Errorf("before the run is taken in: %v, want ErrNoRun", err)
	}
	q, err := h.open(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.open(7); err == nil {
		t.Error("the run opened twice")
	}
	for i, s := range snaps {
		if err := h.Deliver(ctx, s); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		got := <-q.in
		want := *viaJSON(t, &s)
		if got.snap.Final != nil && want.Final != nil {
			emptyHistsNil(reflect.ValueOf(got.snap.Final.State))
			emptyHistsNil(reflect.ValueOf(want.Final.State))
		}
		if got.agent != "local" || !reflect.DeepEqual(got.snap, want) {
			t.Errorf("snapshot %d (second %d) in memory:\n%+v\n%+v\nthrough JSON:\n%+v\n%+v", i, s.Second, got.snap, got.snap.Part, want, want.Part)
		}
	}
	if snaps[0].Part.Sample.Hist == "" || snaps[len(snaps)-1].Final.Summary.Hist == "" {
		t.Error("Deliver changed the agent's own values")
	}

	// Bounded: a full queue makes Deliver wait (here until its context ends); the run's end
	// releases a waiting Deliver, and later ones find no run.
	for range HandoffQueue {
		if err := h.Deliver(ctx, snaps[0]); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := h.Deliver(cctx, snaps[0]); !errors.Is(err, context.Canceled) {
		t.Errorf("a full queue: %v, want the context's end", err)
	}
	waiting := make(chan error)
	go func() { waiting <- h.Deliver(ctx, snaps[0]) }()
	h.close(7, q)
	if err := <-waiting; !errors.Is(err, ErrNoRun) {
		t.Errorf("waiting at the run's end: %v, want ErrNoRun", err)
	}
	if err := h.Deliver(ctx, snaps[1]); !errors.Is(err, ErrNoRun) {
		t.Errorf("after the run's end: %v, want ErrNoRun", err)
	}
}

// emptyHistsNil sets the counts of every engine.Hist in v (a pointer) that holds no value to nil.
func emptyHistsNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			emptyHistsNil(v.Elem())
		}
	case reflect.Struct:
		if h, ok := v.Addr().Interface().(*engine.Hist); ok {
			if !slices.ContainsFunc(h.Counts, func(n int64) bool { return n != 0 }) {
				h.Counts = nil
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				emptyHistsNil(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			emptyHistsNil(v.Index(i))
		}
	}
}
