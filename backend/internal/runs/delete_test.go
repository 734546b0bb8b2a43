package runs_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

// heldRunner is a runner that still holds run id as active until release is closed.
type heldRunner struct {
	id      int64
	release chan struct{}
}

func (h *heldRunner) Start(*plan.Compiled, func(time.Time) (int64, error)) (int64, error) {
	return 0, errors.New("not in this test")
}
func (h *heldRunner) Stop(int64) error { return nil }
func (h *heldRunner) Active() (int64, bool) {
	select {
	case <-h.release:
		return 0, false
	default:
		return h.id, true
	}
}
func (h *heldRunner) Done(int64) <-chan struct{} { return h.release }

// A run whose end is stored (the list shows it stopped) while the runner has not let it go yet
// is deleted once the runner does, not refused as running; a run still running is refused at
// once; one the runner holds past the grace is refused.
func TestDeleteWaitsForAnEndedRunToBeLetGo(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "volley.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	p, err := st.CreatePlan(ctx, "p", []byte(`{"name":"p"}`))
	if err != nil {
		t.Fatal(err)
	}
	newRun := func(ended bool) int64 {
		r, err := st.CreateRun(ctx, p.ID, p.Name, p.Spec, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if ended {
			if err := st.FinishRun(ctx, r.ID, store.StatusStopped, time.Now(), store.Progress{}, nil, nil, ""); err != nil {
				t.Fatal(err)
			}
		}
		return r.ID
	}
	var active *runs.ActiveError

	running := newRun(false)
	svc := runs.New(st, &heldRunner{id: running, release: make(chan struct{})}, nil)
	if _, err := svc.Delete(ctx, running); !errors.As(err, &active) {
		t.Fatalf("deleting a running run: %v", err)
	}

	synctest.Test(t, func(t *testing.T) {
		ended := newRun(true)
		h := &heldRunner{id: ended, release: make(chan struct{})}
		svc := runs.New(st, h, nil)
		go func() {
			time.Sleep(300 * time.Millisecond) // the runner lets it go a moment after its end is stored
			close(h.release)
		}()
		if was, err := svc.Delete(ctx, ended); err != nil || was.ID != ended {
			t.Fatalf("deleting a stopped run the runner still held: %v", err)
		}
		if _, err := st.GetRun(ctx, ended); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("not deleted: %v", err)
		}
		stuck := newRun(true)
		svc = runs.New(st, &heldRunner{id: stuck, release: make(chan struct{})}, nil)
		if _, err := svc.Delete(ctx, stuck); !errors.As(err, &active) {
			t.Fatalf("deleting a run the runner never lets go: %v", err)
		}
	})
}
