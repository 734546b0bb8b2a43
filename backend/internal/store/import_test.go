package store

import (
	"errors"
	"testing"
	"time"
)

// AppendSamples stores all the seconds with the progress, or none of them.
func TestAppendSamplesIsAtomic(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	p := mustPlan(t, s, "import")
	t0 := time.Now()
	r := mustRun(t, s, p, t0)
	if err := s.AppendSamples(ctx, r.ID, []Sample{sample(1, t0), sample(2, t0), sample(2, t0)}, progress(9)); err == nil {
		t.Fatal("a second stored twice was accepted")
	}
	if got, _ := s.GetRun(ctx, r.ID); got.Requests != 0 {
		t.Errorf("a failed AppendSamples changed the run's progress: %+v", got)
	}
	if smps, _ := s.Samples(ctx, r.ID); len(smps) != 0 {
		t.Errorf("a failed AppendSamples stored %d seconds", len(smps))
	}
	if err := s.AppendSamples(ctx, r.ID, []Sample{sample(1, t0), sample(2, t0), sample(3, t0)}, progress(3)); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetRun(ctx, r.ID)
	smps, _ := s.Samples(ctx, r.ID)
	if got.Requests != progress(3).Requests || len(smps) != 3 || smps[2].Second != 3 {
		t.Errorf("after AppendSamples: %+v, %d seconds", got, len(smps))
	}
	if err := s.AppendSamples(ctx, 9999, []Sample{sample(1, t0)}, progress(1)); !errors.Is(err, ErrNotFound) {
		t.Errorf("AppendSamples to a missing run: %v, want ErrNotFound", err)
	}
}
