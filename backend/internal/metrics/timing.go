package metrics

import (
	"math/bits"
	"sync/atomic"
)

// Timing splits requests' time into the phases of one HTTP exchange, as k6's http_req_connecting,
// http_req_tls_handshaking, http_req_waiting and http_req_receiving do. Each is a distribution in
// milliseconds over the requests that got a response (the population of Latency):
//
//   - Connect: the TCP connect (dial, including the target policy's check and name resolution);
//     0 for a request sent on a connection already open (keep-alive);
//   - TLS: the TLS handshake; 0 over plain HTTP and on a reused connection;
//   - Wait: from the request's last byte written to the response's first byte (time to first
//     byte, TTFB);
//   - Receive: from the response's first byte to its last byte.
//
// With redirects followed, a request's phases are the sums over its hops. The rest of the
// service time (ServiceTime: actual send → last byte) is writing the request and the engine's
// own work: Connect + TLS + send + Wait + Receive ≈ service time. Latency is measured from the
// intended start (coordinated omission), so it also holds the time the request waited for its
// turn; the phases never do.
type Timing struct {
	Connect Latency `json:"connect_ms"`
	TLS     Latency `json:"tls_ms"`
	Wait    Latency `json:"wait_ms"`    // request written → first response byte (TTFB)
	Receive Latency `json:"receive_ms"` // first response byte → last byte
}

// Phase histograms are smaller than the latency histograms (AtomicHist, ~190 KB): there are four
// per request name and shard. Their layout is log-linear like HdrHistogram's: values below
// phaseSub µs each have a slot of their own (exact), larger ones fall in one of phaseSub equal
// slots per power of two, so a value is known within 1/phaseSub of its octave's base (≤ 1.6 %
// from its slot's midpoint, which is what every figure reports). Values of 2^phaseMaxExp µs
// (~19 h) and more share the last slot.
const (
	phaseSubBits = 5
	phaseSub     = 1 << phaseSubBits // slots per power of two
	phaseMaxExp  = 36
	// PhaseSlots is the length of one phase histogram's counts: 1024 (8 KB of uint64).
	PhaseSlots = phaseSub + (phaseMaxExp-phaseSubBits)*phaseSub
)

// PhaseHistsBytes is the memory of one PhaseHists: four phases of PhaseSlots counters, 32 KB.
const PhaseHistsBytes = 4 * PhaseSlots * 8

// phaseIndex maps a value in µs to its slot.
func phaseIndex(us int64) int {
	if us < phaseSub {
		return int(max(us, 0))
	}
	e := 63 - bits.LeadingZeros64(uint64(us)) // us in [2^e, 2^(e+1)), e ≥ phaseSubBits
	if e >= phaseMaxExp {
		return PhaseSlots - 1
	}
	sub := int(us>>uint(e-phaseSubBits)) & (phaseSub - 1)
	return phaseSub + (e-phaseSubBits)*phaseSub + sub
}

// phaseMid is the midpoint (µs) of slot i: the value every figure reports for the slot.
func phaseMid(i int) float64 {
	if i < phaseSub {
		return float64(i)
	}
	e := (i-phaseSub)/phaseSub + phaseSubBits
	sub := int64((i - phaseSub) % phaseSub)
	shift := uint(e - phaseSubBits)
	lo := (phaseSub + sub) << shift
	return float64(lo) + float64(int64(1)<<shift)/2
}

// Phase indexes a PhaseCounts.
const (
	PhaseConnect = iota
	PhaseTLS
	PhaseWait
	PhaseReceive
	numPhases
)

// PhaseHists holds the four phase histograms of one shard of one request name (or of one run
// shard, for plans with one request name), cumulative and lock-free like AtomicHist. Only
// connections made are recorded in Connect and TLS: a request on a reused connection adds nothing
// there, and its zero is counted when the histograms are read (the Wait histogram counts every
// timed request), so a keep-alive request costs two atomic adds here.
type PhaseHists struct {
	h [numPhases][PhaseSlots]uint64
}

// NewPhaseHists allocates one (PhaseHistsBytes).
func NewPhaseHists() *PhaseHists { return &PhaseHists{} }

// Record adds one request's phases (µs). fresh says the request made a connection (then
// connectUs and tlsUs are recorded; tlsUs only when tls is set). It does not allocate and takes
// no lock.
func (p *PhaseHists) Record(fresh, tls bool, connectUs, tlsUs, waitUs, receiveUs int64) {
	if fresh {
		atomic.AddUint64(&p.h[PhaseConnect][phaseIndex(connectUs)], 1)
		if tls {
			atomic.AddUint64(&p.h[PhaseTLS][phaseIndex(tlsUs)], 1)
		}
	}
	atomic.AddUint64(&p.h[PhaseWait][phaseIndex(waitUs)], 1)
	atomic.AddUint64(&p.h[PhaseReceive][phaseIndex(receiveUs)], 1)
}

// PhaseCounts are plain phase histograms (cumulative totals read from PhaseHists).
type PhaseCounts [numPhases][PhaseSlots]int64

// AddTo adds the cumulative counts into dst.
func (p *PhaseHists) AddTo(dst *PhaseCounts) {
	for k := range p.h {
		for i := range p.h[k] {
			if c := atomic.LoadUint64(&p.h[k][i]); c != 0 {
				dst[k][i] += int64(c)
			}
		}
	}
}

// Add adds o into c.
func (c *PhaseCounts) Add(o *PhaseCounts) {
	for k := range c {
		for i := range c[k] {
			c[k][i] += o[k][i]
		}
	}
}

// Timing computes the four distributions. Requests that made no connection (or no TLS
// handshake) count as 0 in Connect and TLS: their number is Wait's total less the connections
// recorded.
func (c *PhaseCounts) Timing() Timing {
	var n int64
	for _, v := range c[PhaseWait] {
		n += v
	}
	return Timing{
		Connect: phaseLatency(&c[PhaseConnect], n),
		TLS:     phaseLatency(&c[PhaseTLS], n),
		Wait:    phaseLatency(&c[PhaseWait], n),
		Receive: phaseLatency(&c[PhaseReceive], n),
	}
}

// phaseLatency is the distribution of counts plus (total − counted) zeros, each slot standing for
// its midpoint (phaseMid); percentiles are nearest-rank (the smallest value with at least p % of
// the counts at or below it), as HdrHistogram's. Zeros when total is 0.
func phaseLatency(counts *[PhaseSlots]int64, total int64) Latency {
	var counted int64
	for _, v := range counts {
		counted += v
	}
	zeros := max(total-counted, 0)
	total = counted + zeros
	if total == 0 {
		return Latency{}
	}
	at := func(i int) int64 { // count of slot i, the implicit zeros in slot 0
		if i == 0 {
			return counts[0] + zeros
		}
		return counts[i]
	}
	var out Latency
	var sum float64
	for i := range counts {
		if c := at(i); c > 0 {
			v := phaseMid(i)
			out.Max = round3(v / 1000)
			sum += v * float64(c)
		}
	}
	out.Min = round3(phaseMid(firstNonZero(counts, zeros)) / 1000)
	out.Mean = round3(sum / float64(total) / 1000)
	dst := []*float64{&out.P50, &out.P75, &out.P90, &out.P95, &out.P99, &out.P99_9}
	var seen int64
	k := 0
	for i := 0; i < PhaseSlots && k < len(dst); i++ {
		seen += at(i)
		for k < len(dst) && float64(seen) >= latencyPercentiles[k]/100*float64(total) && seen > 0 {
			*dst[k] = round3(phaseMid(i) / 1000)
			k++
		}
	}
	return out
}

func firstNonZero(counts *[PhaseSlots]int64, zeros int64) int {
	if zeros > 0 {
		return 0
	}
	for i, c := range counts {
		if c > 0 {
			return i
		}
	}
	return 0
}
