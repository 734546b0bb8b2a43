package metrics

import (
	"sync/atomic"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// MaxNames caps the distinct request names that get statistics of their own; further names share
// the OtherName bucket, so a plan cannot explode memory (each name holds a few histograms).
const (
	MaxNames  = 100
	OtherName = "(other)"
)

// NameBlock counts one request name in one shard, lock-free like Shard.
type NameBlock struct {
	successes atomic.Uint64
	errors    atomic.Uint64
	lat       *AtomicHist
	phases    PhaseHists // the name's phases in this shard (Phases)
	_         [64]byte
}

// Phases returns the block's phase histograms (connect, TLS, wait, receive).
func (b *NameBlock) Phases() *PhaseHists { return &b.phases }

// Record counts one finished request of this name.
func (b *NameBlock) Record(o Outcome) {
	if o.Kind == KindNone {
		b.successes.Add(1)
	} else {
		b.errors.Add(1)
	}
	if o.Status > 0 {
		b.lat.Record(o.LatencyUs)
	}
}

// NameSet holds per-name statistics in a few shards: names × shards blocks of ~222 KB each (a
// latency AtomicHist, ~190 KB, and the PhaseHists, PhaseHistsBytes = 32 KB).
type NameSet struct {
	Names  []string
	blocks [][]*NameBlock // [shard][name]
}

// NewNameSet makes blocks for names (at most MaxNames; see Index) in n shards.
func NewNameSet(names []string, n int) *NameSet {
	s := &NameSet{Names: names, blocks: make([][]*NameBlock, max(n, 1))}
	for i := range s.blocks {
		s.blocks[i] = make([]*NameBlock, len(names))
		for j := range names {
			s.blocks[i][j] = &NameBlock{lat: NewAtomicHist()}
		}
	}
	return s
}

// Block returns the block of name index j for worker i.
func (s *NameSet) Block(i, j int) *NameBlock { return s.blocks[i%len(s.blocks)][j] }

// NameCount is one name's cumulative count.
type NameCount struct{ Successes, Errors int64 }

// Read fills dst (len(Names)) with cumulative counts.
func (s *NameSet) Read(dst []NameCount) {
	clear(dst)
	for _, shard := range s.blocks {
		for j, b := range shard {
			dst[j].Successes += int64(b.successes.Load())
			dst[j].Errors += int64(b.errors.Load())
		}
	}
}

// ReadName returns name j's cumulative count. Read right before LatencyCounts(j, …), the two are of
// one moment: the histogram holds at most the count plus one latency per VU recording (a latency
// is recorded a moment before its request's count).
func (s *NameSet) ReadName(j int) NameCount {
	var c NameCount
	for _, shard := range s.blocks {
		c.Successes += int64(shard[j].successes.Load())
		c.Errors += int64(shard[j].errors.Load())
	}
	return c
}

// Latency returns name j's cumulative latency distribution.
func (s *NameSet) Latency(j int) Latency {
	counts := make([]int64, CountsLen)
	var sum uint64
	for _, shard := range s.blocks {
		sum += shard[j].lat.AddTo(counts)
	}
	return LatencyOf(HistFromCounts(counts), sum)
}

// LatencyCounts fills dst (len CountsLen) with name j's cumulative latency counts and returns
// their exact µs sum, without allocating.
func (s *NameSet) LatencyCounts(j int, dst []int64) uint64 {
	clear(dst)
	var sum uint64
	for _, shard := range s.blocks {
		sum += shard[j].lat.AddTo(dst)
	}
	return sum
}

// ReadPhases fills dst with name j's cumulative phase counts.
func (s *NameSet) ReadPhases(j int, dst *PhaseCounts) {
	*dst = PhaseCounts{}
	for _, shard := range s.blocks {
		shard[j].phases.AddTo(dst)
	}
}

// Hist returns name j's cumulative latency histogram.
func (s *NameSet) Hist(j int) *hdr.Histogram {
	counts := make([]int64, CountsLen)
	for _, shard := range s.blocks {
		shard[j].lat.AddTo(counts)
	}
	return HistFromCounts(counts)
}

// NameSample is one name's figures in a Sample: counts of the second, percentiles, checks and
// timing since the run's start (as Locust's statistics table).
type NameSample struct {
	Requests int64   `json:"requests"` // in this second
	Errors   int64   `json:"errors"`   // in this second
	RPS      float64 `json:"rps"`      // requests of this second / its interval
	// P50, P95 and P99 are the name's latency percentiles (ms) from the run's start to the end of
	// this second; 0 before its first response.
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	// ChecksPassed and ChecksFailed are the name's check outcomes since the run's start.
	ChecksPassed int64 `json:"checks_passed"`
	ChecksFailed int64 `json:"checks_failed"`
	// Timing is the name's phases since the run's start.
	Timing Timing `json:"timing"`
}
