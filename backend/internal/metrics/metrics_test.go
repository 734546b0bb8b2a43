package metrics

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// The atomic recorder must place every value in the same slot as hdrhistogram-go itself, or the
// imported histograms would report wrong percentiles.
func TestCountsIndexMatchesLibrary(t *testing.T) {
	values := []int64{0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 10_000, 123_456, 1_000_000,
		59_999_999, 60_000_000, 3_599_999_999, HighestUs}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		values = append(values, r.Int64N(HighestUs))
		values = append(values, r.Int64N(100_000))
	}
	ours := NewAtomicHist()
	lib := NewHist()
	for _, v := range values {
		ours.Record(v)
		if err := lib.RecordValue(v); err != nil {
			t.Fatalf("library rejected %d: %v", v, err)
		}
	}
	counts := make([]int64, CountsLen)
	ours.AddTo(counts)
	got := HistFromCounts(counts)
	if !got.Equals(lib) {
		want := lib.Export().Counts
		for i := range counts {
			if counts[i] != want[i] {
				t.Fatalf("slot %d: ours %d, library %d", i, counts[i], want[i])
			}
		}
		t.Fatal("histograms differ")
	}
}

func TestOutOfRangeValuesAreClampedNotLost(t *testing.T) {
	h := NewAtomicHist()
	h.Record(-5)
	h.Record(HighestUs * 10)
	counts := make([]int64, CountsLen)
	h.AddTo(counts)
	if n := HistFromCounts(counts).TotalCount(); n != 2 {
		t.Fatalf("total %d, want 2", n)
	}
}

// Readings taken while writers run must partition the records: the deltas add up to the total,
// each record counted once.
func TestReadingsPartitionConcurrentRecords(t *testing.T) {
	rec := NewRecorder(4)
	const writers, per = 8, 20000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var deltas []int64
	var histTotal int64
	negative := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		cur, prev, d := NewCounts(), NewCounts(), NewCounts()
		for {
			select {
			case <-stop:
				rec.Read(cur)
				d.Sub(cur, prev)
				deltas = append(deltas, d.Requests)
				histTotal += HistFromCounts(d.Lat).TotalCount()
				return
			default:
			}
			rec.Read(cur)
			d.Sub(cur, prev)
			deltas = append(deltas, d.Requests)
			if d.Errors() < 0 || d.Successes < 0 {
				negative = true
			}
			histTotal += HistFromCounts(d.Lat).TotalCount()
			cur, prev = prev, cur
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := rec.Shard(w)
			for i := 0; i < per; i++ {
				o := Outcome{Status: 200, LatencyUs: int64(i%5000 + 1), ServiceUs: 1}
				if i%3 == 0 {
					o.Status, o.Kind = 503, Status5xx
				}
				s.Record(o)
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	<-done
	var sum int64
	for _, d := range deltas {
		if d < 0 {
			t.Fatalf("negative delta %d", d)
		}
		sum += d
	}
	if sum != writers*per || histTotal != writers*per {
		t.Fatalf("deltas add to %d requests and %d latencies, want %d", sum, histTotal, writers*per)
	}
	if negative {
		t.Fatal("a reading between two counter updates produced a negative error or success delta")
	}
	if len(deltas) < 2 {
		t.Logf("only %d readings; the partition was barely exercised", len(deltas))
	}
}

func TestOutcomeAccounting(t *testing.T) {
	rec := NewRecorder(2)
	s := rec.Shard(0)
	s.Record(Outcome{Status: 200, LatencyUs: 1000, ServiceUs: 900, BodyBytes: 10})
	s.Record(Outcome{Status: 503, Kind: Status5xx, LatencyUs: 2000, ServiceUs: 2000})
	rec.Shard(1).Record(Outcome{Kind: ConnectRefused})
	rec.Shard(1).Interrupted()
	rec.Dropped()
	c := NewCounts()
	rec.Read(c)
	if c.Requests != 3 || c.Successes != 1 || c.Errors() != 2 || c.Interrupted != 1 || c.Dropped != 1 {
		t.Fatalf("counts %+v", c)
	}
	if m := c.StatusMap(); m["200"] != 1 || m["503"] != 1 || len(m) != 2 {
		t.Fatalf("status %v", m)
	}
	if m := c.KindMap(); m["status_5xx"] != 1 || m["connect_refused"] != 1 || len(m) != 2 {
		t.Fatalf("kinds %v", m)
	}
	// A refused request has no response, so no latency; the 5xx has one.
	if n := HistFromCounts(c.Lat).TotalCount(); n != 2 {
		t.Fatalf("latency count %d, want 2", n)
	}
	if n := HistFromCounts(c.LatOK).TotalCount(); n != 1 {
		t.Fatalf("success latency count %d, want 1", n)
	}
	l := LatencyOf(HistFromCounts(c.Lat), c.LatSum)
	if l.Mean != 1.5 || l.Min != 1 || l.Max < 1.999 || l.Max > 2.002 {
		t.Fatalf("latency %+v", l)
	}
}

// Percentiles of merged per-second histograms equal those of one histogram of all values, and
// differ from the average of per-second percentiles (why Volley never averages percentiles).
func TestMergedPercentilesAreExact(t *testing.T) {
	all := NewHist()
	merged := NewHist()
	var p99s []float64
	for sec := 0; sec < 10; sec++ {
		h := NewHist()
		for i := 0; i < 1000; i++ {
			v := int64(1000)
			if sec == 9 {
				v = 500_000 // one slow second
			}
			h.RecordValue(v)
			all.RecordValue(v)
		}
		p99s = append(p99s, Percentile(h, 99))
		enc, err := EncodeHist(h)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeHist(enc)
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(back)
	}
	if !merged.Equals(all) {
		t.Fatal("merged histogram differs from the histogram of all values")
	}
	var avg float64
	for _, p := range p99s {
		avg += p / 10
	}
	if got := Percentile(merged, 99); got < 499 || got > 501 || avg > 60 {
		t.Fatalf("merged p99 %.1f ms (want ~500), averaged p99 %.1f", got, avg)
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	if _, err := DecodeHist("not base64 !"); err == nil {
		t.Fatal("garbage decoded")
	}
}

func BenchmarkShardRecord(b *testing.B) {
	rec := NewRecorder(4)
	s := rec.Shard(0)
	o := Outcome{Status: 200, LatencyUs: 1234, ServiceUs: 1200, BodyBytes: 615}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		o.LatencyUs = int64(i & 0xffff)
		s.Record(o)
	}
}

func BenchmarkShardRecordParallel(b *testing.B) {
	rec := NewRecorder(8)
	var next int
	var mu sync.Mutex
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		s := rec.Shard(next)
		next++
		mu.Unlock()
		o := Outcome{Status: 200, LatencyUs: 1234, ServiceUs: 1200}
		for pb.Next() {
			s.Record(o)
		}
	})
}

// The per-second collection is O(buckets), independent of how many requests were recorded.
func BenchmarkReadAndSub(b *testing.B) {
	rec := NewRecorder(8)
	for i := 0; i < 100000; i++ {
		rec.Shard(i).Record(Outcome{Status: 200, LatencyUs: int64(i)})
	}
	cur, prev, d := NewCounts(), NewCounts(), NewCounts()
	b.ReportAllocs()
	for b.Loop() {
		rec.Read(cur)
		d.Sub(cur, prev)
		cur, prev = prev, cur
	}
}

func BenchmarkMergeSecond(b *testing.B) {
	h := NewHist()
	for i := 0; i < 50000; i++ {
		h.RecordValue(int64(i%20000 + 100))
	}
	total := NewHist()
	b.ReportAllocs()
	for b.Loop() {
		total.Merge(h)
	}
}
