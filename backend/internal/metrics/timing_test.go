package metrics

import (
	"math"
	"testing"
)

// Every value's slot midpoint is within 1/64 of the value (exact below 32 µs), and slots grow
// with the value.
func TestPhaseSlotsResolution(t *testing.T) {
	prev := -1
	for v := int64(0); v < 1<<phaseMaxExp; v = v + 1 + v/97 {
		i := phaseIndex(v)
		if i < prev || i >= PhaseSlots {
			t.Fatalf("index(%d) = %d after %d", v, i, prev)
		}
		prev = i
		mid := phaseMid(i)
		if math.Abs(mid-float64(v)) > float64(v)/64 {
			t.Fatalf("value %d: slot %d midpoint %.1f is off by more than 1/64", v, i, mid)
		}
	}
	if phaseIndex(-5) != 0 || phaseIndex(math.MaxInt64) != PhaseSlots-1 {
		t.Error("out-of-range values are not clamped")
	}
}

// Connect and TLS count the requests that made no connection as 0; percentiles are nearest-rank.
func TestPhaseTiming(t *testing.T) {
	p := NewPhaseHists()
	for i := int64(1); i <= 100; i++ { // waits of 1..100 ms, receives of 2 ms
		p.Record(i <= 10, false, 3000, 0, i*1000, 2000) // 10 connects of 3 ms
	}
	var c PhaseCounts
	p.AddTo(&c)
	tm := c.Timing()
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want/64+0.001 {
			t.Errorf("%s = %.3f, want %.3f", what, got, want)
		}
	}
	near("wait p50", tm.Wait.P50, 50)
	near("wait p99", tm.Wait.P99, 99)
	near("wait min", tm.Wait.Min, 1)
	near("wait max", tm.Wait.Max, 100)
	near("wait mean", tm.Wait.Mean, 50.5)
	near("receive p95", tm.Receive.P95, 2)
	if tm.Connect.P50 != 0 || tm.Connect.P90 != 0 || tm.Connect.Min != 0 {
		t.Errorf("connect %+v: 90 of 100 requests reused a connection", tm.Connect)
	}
	near("connect p95", tm.Connect.P95, 3)
	near("connect mean", tm.Connect.Mean, 0.3)
	if tm.TLS != (Latency{}) {
		t.Errorf("tls %+v, want zeros", tm.TLS)
	}
	var empty PhaseCounts
	if empty.Timing() != (Timing{}) {
		t.Error("an empty histogram has figures")
	}
	var sum PhaseCounts
	sum.Add(&c)
	sum.Add(&c)
	if got := sum.Timing(); got.Wait.P50 != tm.Wait.P50 || got.Connect.P95 != tm.Connect.P95 {
		t.Errorf("merged %+v, want %+v", got, tm)
	}
}

func BenchmarkPhaseRecord(b *testing.B) {
	p := NewPhaseHists()
	for i := range b.N {
		p.Record(false, false, 0, 0, int64(i&4095)+200, 40)
	}
}
