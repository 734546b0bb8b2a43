package metrics

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Counts by due second land in their second's take, those for a second whose slot is not yet (or
// no longer) theirs in the next take's late counts, and none is taken twice.
func TestTakeDueBySecond(t *testing.T) {
	r := NewRecorder(3)
	r.Shard(0).StartedDue(1)
	r.Shard(1).StartedDue(1)
	r.Shard(2).DroppedDue(1)
	r.DroppedDueN(2, 5)
	r.Shard(1).StartedDue(2)
	if s, d := r.TakeDue(1, 1); s != 2 || d != 1 {
		t.Fatalf("second 1: %d started, %d dropped; want 2, 1", s, d)
	}
	r.Shard(0).StartedDue(1)            // after its second was taken: late
	r.Shard(2).DroppedDue(2 + DueSlots) // slot 2 still holds second 2: late
	r.Shard(1).StartedDue(1 + DueSlots) // slot 1 holds second 1 + DueSlots now: on time
	if s, d := r.TakeDue(2, 2); s != 2 || d != 6 {
		t.Fatalf("second 2 with the late counts: %d started, %d dropped; want 2, 6", s, d)
	}
	if s, d := r.TakeDue(3, 1+DueSlots); s != 1 || d != 0 {
		t.Fatalf("seconds 3 … %d: %d started, %d dropped; want 1, 0", 1+DueSlots, s, d)
	}
	if s, d := r.TakeDue(2+DueSlots, 100); s != 0 || d != 0 {
		t.Fatalf("nothing left, took %d started, %d dropped", s, d)
	}
}

// Counting while the collector takes, some writers a second behind the others: every count is
// taken exactly once, in some take.
func TestTakeDueConcurrentExactlyOnce(t *testing.T) {
	r := NewRecorder(4)
	const writers, per, perSec = 4, 20000, 500
	var progress atomic.Int64 // writer 0's count so far
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			s := r.Shard(w)
			for i := range per {
				if w == 0 {
					progress.Store(int64(i))
				}
				sec := int64(i/perSec + 1)
				if i%3 == 0 {
					s.DroppedDue(sec)
				} else {
					s.StartedDue(sec)
				}
			}
			if w == 0 {
				progress.Store(per)
			}
		})
	}
	var started, dropped int64
	for sec := int64(1); sec <= per/perSec; {
		if progress.Load()/perSec+1 > sec { // writer 0 is in a later second; others may not be
			s, d := r.TakeDue(sec, sec)
			started, dropped = started+s, dropped+d
			sec++
		} else {
			runtime.Gosched()
		}
	}
	wg.Wait()
	s, d := r.TakeDue(per/perSec+1, per/perSec+1+DueSlots) // what raced with a take
	started, dropped = started+s, dropped+d
	wantDropped := int64(writers * ((per + 2) / 3))
	if started+dropped != writers*per || dropped != wantDropped {
		t.Fatalf("took %d started + %d dropped, want %d + %d", started, dropped, writers*per-wantDropped, wantDropped)
	}
}

// Counting by due second allocates nothing.
func TestDueCountsDoNotAllocate(t *testing.T) {
	r := NewRecorder(1)
	s := r.Shard(0)
	if n := testing.AllocsPerRun(1000, func() { s.StartedDue(1); s.DroppedDue(2); s.StartedDue(9) }); n != 0 {
		t.Fatalf("%v allocations per count", n)
	}
}
