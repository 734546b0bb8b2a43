package runs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/runner"
	"github.com/volley-load/volley/backend/internal/runs"
	"github.com/volley-load/volley/backend/internal/store"
)

// A run over agents left "running" by a process that died after storing 5 seconds is taken up
// again (Resume) with a drive handing seconds 6-8: the run keeps its id and ends finished with
// seconds 1-8 stored once each; the list columns written with seconds 6-8 are the whole run's
// totals (requests and error rate from second 1); a viewer gets seconds 1-8, each once, then the
// summary with the run's first start; the drive is given the plan snapshot compiled although a
// secret header is masked in it. A second resume while that run goes on is refused (busy) and
// leaves no live topic; an ended run and a missing one cannot be resumed.
func TestResumeGoesOnFromTheStoredSeconds(t *testing.T) {
	var pw *progressWriter
	r := newRig(t, rigConfig{writer: func(st *store.Store) runs.SampleWriter { pw = &progressWriter{Store: st}; return pw }})
	ctx := t.Context()
	p, err := plan.Parse([]byte(strings.Replace(planJSON("http://127.0.0.1:9/", 2, "8s"), `"name":"home",`,
		`"name":"home","headers":{"Authorization":"Bearer {{secret.TOKEN}}","X-Trace":"on"},`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := plan.Marshal(p) // as the API stores a plan: its defaults filled
	pid := r.plan(string(spec))
	snapshot := plan.MaskSpec(spec)
	if !bytes.Contains(snapshot, []byte(plan.Masked)) {
		t.Fatalf("the snapshot %s has no masked header: the test would not test SnapshotPlan", snapshot)
	}
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	left := func() int64 { // a run the dead process left with 5 seconds stored
		run, err := r.st.CreateRun(ctx, pid, "runs test", snapshot, t0)
		if err != nil {
			t.Fatal(err)
		}
		var req, errs int64
		for s := 1; s <= 5; s++ {
			smp := second(s)
			if s == 3 {
				smp.MissingShare = 0.5 // merged without an agent's share before the crash
			}
			req, errs = req+smp.Requests, errs+smp.Errors
			data, _ := json.Marshal(&smp)
			if err := r.st.AppendSample(ctx, run.ID, store.Sample{Second: s, TMs: smp.T, Data: data},
				store.Progress{DurationS: float64(s), Requests: req, ErrorRate: float64(errs) / float64(req)}); err != nil {
				t.Fatal(err)
			}
		}
		return run.ID
	}
	id, other := left(), left()

	release := make(chan struct{})
	var given *plan.Compiled
	drive := func(ctx context.Context, runID int64, c *plan.Compiled, onSample func(metrics.Sample)) (*metrics.Summary, error) {
		given = c
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for s := 6; s <= 8; s++ {
			onSample(second(s))
		}
		return &metrics.Summary{Requests: total(8), DurationS: 8, Seconds: 8, RPS: float64(total(8)) / 8}, nil
	}
	if err := r.svc.Resume(ctx, id, drive); err != nil {
		t.Fatal(err)
	}
	if !r.hub.Active(id) {
		t.Fatal("no live topic once Resume returned")
	}
	var busy *runner.BusyError
	if err := r.svc.Resume(ctx, other, drive); !errors.As(err, &busy) || busy.RunID != id {
		t.Errorf("resuming a second run while the first goes on: %v, want busy with run %d", err, id)
	}
	if r.hub.Active(other) {
		t.Error("a resume that could not begin left its live topic open")
	}
	read := r.follow(id, 20*time.Second)
	close(release)
	live := readAll(read)
	<-r.rn.Done(id)

	var got []string
	for _, m := range live {
		if m.Type != "sample" {
			got = append(got, m.Type)
			continue
		}
		var smp metrics.Sample
		_ = json.Unmarshal(m.Data, &smp)
		got = append(got, fmt.Sprint(smp.ElapsedS))
	}
	if fmt.Sprint(got) != "[1 2 3 4 5 6 7 8 summary]" {
		t.Errorf("live stream %v, want seconds 1-8 once each then the summary", got)
	}
	if sum := live[len(live)-1]; sum.Run["status"] != "finished" || sum.Run["started_at"] != t0.Format(time.RFC3339) {
		t.Errorf("summary run %v, want finished, started at %s", sum.Run, t0.Format(time.RFC3339))
	}

	ended := r.run(id)
	if !ended.Degraded {
		t.Error("run not degraded although its stored second 3 misses an agent's share")
	}
	if ended.Status != store.StatusFinished || ended.Requests != total(8) || !ended.StartedAt.Equal(t0) {
		t.Errorf("run %d: %s, %d requests, started %v; want finished, %d, %v", id, ended.Status, ended.Requests, ended.StartedAt, total(8), t0)
	}
	smps, err := r.st.Samples(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var secs []int
	for _, s := range smps {
		secs = append(secs, s.Second)
	}
	if fmt.Sprint(secs) != "[1 2 3 4 5 6 7 8]" {
		t.Errorf("stored seconds %v, want 1-8 once each", secs)
	}
	pw.mu.Lock()
	for i, p := range pw.prog {
		s := pw.smps[i].Second
		if want := float64(oddSeconds(s)) / float64(total(s)); p.Requests != total(s) || p.ErrorRate != want {
			t.Errorf("second %d: list columns %d requests, error rate %v; want the run's %d, %v", s, p.Requests, p.ErrorRate, total(s), want)
		}
	}
	if len(pw.prog) != 3 {
		t.Errorf("%d seconds written by the resumed run, want 3 (6-8)", len(pw.prog))
	}
	pw.mu.Unlock()
	if given == nil || given.Plan.Name != "runs test" || given.Plan.Requests[0].Headers["X-Trace"] != "on" ||
		given.Plan.Requests[0].Headers["Authorization"] == plan.Masked || given.Plan.Load.Duration.D() != 8*time.Second {
		t.Errorf("the drive was given %+v", given)
	}

	if err := r.svc.Resume(ctx, id, drive); !errors.Is(err, runs.ErrNotResumable) {
		t.Errorf("resuming the ended run: %v, want ErrNotResumable", err)
	}
	if err := r.svc.Resume(ctx, 9999, drive); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("resuming a missing run: %v, want store.ErrNotFound", err)
	}
}

// second is second s of the resumed run: 10 × s requests, one error in every odd second.
func second(s int) metrics.Sample {
	return metrics.Sample{ElapsedS: s, T: int64(1_800_000_000_000 + s*1000), IntervalS: 1,
		Requests: int64(10 * s), RPS: float64(10 * s), Successes: int64(10*s - s%2), Errors: int64(s % 2)}
}

// total is the requests of seconds 1 to s, oddSeconds their errors.
func total(s int) int64      { return int64(10 * s * (s + 1) / 2) }
func oddSeconds(s int) int64 { return int64((s + 1) / 2) }
