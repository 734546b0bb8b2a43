// Package segment splits a run's work exactly among load generators (agents).
//
// The work of every executor is a set of numbered units: VU indexes (closed models), iteration
// numbers (shared iterations, and the open models' arrival schedule), sweep levels' VU indexes and
// CSV rows. A Sequence gives each number exactly one owner among n parts with integer weights, so
// the parts' shares are disjoint and their union is the whole: nothing is run twice and nothing
// is left out, whatever the number of units.
//
// The owners repeat with a period of W = Σ weights; within a period part j owns exactly w_j
// numbers, spread evenly by smooth weighted round-robin (nginx's upstream algorithm: each step
// every part's credit grows by its weight, the part with the most credit owns the number and pays
// W). The spread keeps every prefix fair: of the first N numbers part j owns N·w_j/W rounded up
// or down by less than one, so 10 VUs over weights 1:1:1 are 4/3/3 and a ramp to any VU count
// splits the same way at every moment. This is the idea of k6's execution segments (striped
// indexes over a segment sequence) with integer weights instead of rational bounds.
//
// The package is pure (stdlib only): the controller builds the Sequence, each agent gets its
// Segment (the weights and its part) in the prepare message, and the engine asks it which numbers
// are its own.
package segment

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Bounds on a sequence. A period longer than MaxTotal would make the owner table large for no
// gain: weights are relative (agent cores, an operator's choice), 1–1000 each.
const (
	MaxParts  = 1000
	MaxWeight = 1000
	MaxTotal  = 1 << 16
)

// Sequence is an exact split of the numbers 0, 1, 2, … among parts with integer weights. It is
// immutable and safe for concurrent use.
type Sequence struct {
	weights []int
	total   int
	owner   []uint16 // owner[i] is the part that owns i mod total
	// pos[j] lists the positions within a period that part j owns, ascending; rank[i] is i's
	// place within its owner's list.
	pos  [][]int32
	rank []int32
}

// New returns the sequence of parts with the given weights (part j has weights[j]).
// Errors: no part, more than MaxParts, a weight outside 1..MaxWeight, a total over MaxTotal.
func New(weights ...int) (*Sequence, error) {
	if len(weights) == 0 {
		return nil, errors.New("segment: no parts")
	}
	if len(weights) > MaxParts {
		return nil, fmt.Errorf("segment: %d parts, at most %d", len(weights), MaxParts)
	}
	total := 0
	for j, w := range weights {
		if w < 1 || w > MaxWeight {
			return nil, fmt.Errorf("segment: weight %d of part %d is outside 1..%d", w, j, MaxWeight)
		}
		total += w
	}
	if total > MaxTotal {
		return nil, fmt.Errorf("segment: weights add up to %d, at most %d", total, MaxTotal)
	}
	s := &Sequence{weights: append([]int(nil), weights...), total: total,
		owner: make([]uint16, total), pos: make([][]int32, len(weights)), rank: make([]int32, total)}
	for j, w := range weights {
		s.pos[j] = make([]int32, 0, w)
	}
	credit := make([]int, len(weights))
	for i := range total {
		best := 0
		for j, w := range weights {
			credit[j] += w
			if credit[j] > credit[best] { // ties: the lower part, so the table is deterministic
				best = j
			}
		}
		credit[best] -= total
		s.owner[i] = uint16(best)
		s.rank[i] = int32(len(s.pos[best]))
		s.pos[best] = append(s.pos[best], int32(i))
	}
	return s, nil
}

// Equal returns the sequence of n parts with equal weights (1 ≤ n ≤ MaxParts).
func Equal(n int) (*Sequence, error) {
	if n < 1 || n > MaxParts {
		return nil, fmt.Errorf("segment: %d parts, want 1..%d", n, MaxParts)
	}
	w := make([]int, n)
	for i := range w {
		w[i] = 1
	}
	return New(w...)
}

// Parts is the number of parts.
func (s *Sequence) Parts() int { return len(s.weights) }

// Weights returns a copy of the parts' weights.
func (s *Sequence) Weights() []int { return append([]int(nil), s.weights...) }

// Owner returns the part that owns number i (i ≥ 0).
func (s *Sequence) Owner(i int64) int { return int(s.owner[i%int64(s.total)]) }

// Segment returns part j's share (0 ≤ j < Parts, else it panics: a caller's bug).
func (s *Sequence) Segment(j int) Segment {
	if j < 0 || j >= len(s.weights) {
		panic(fmt.Sprintf("segment: part %d of %d", j, len(s.weights)))
	}
	return Segment{seq: s, part: j}
}

// String gives the weights, e.g. "2:1:1".
func (s *Sequence) String() string {
	b := make([]string, len(s.weights))
	for j, w := range s.weights {
		b[j] = strconv.Itoa(w)
	}
	return strings.Join(b, ":")
}

// Segment is one part's share of a Sequence. The zero Segment is the whole (one part, weight 1):
// a single-machine run.
type Segment struct {
	seq  *Sequence
	part int
}

// Whole is the segment that owns every number.
var Whole = Segment{}

// IsWhole reports whether the segment owns every number.
func (g Segment) IsWhole() bool { return g.seq == nil || len(g.seq.weights) == 1 }

// Part is the segment's part number (0 for Whole).
func (g Segment) Part() int { return g.part }

// Fraction is the segment's share of the numbers, num/den = w_j/W.
func (g Segment) Fraction() (num, den int) {
	if g.seq == nil {
		return 1, 1
	}
	return g.seq.weights[g.part], g.seq.total
}

// Owns reports whether number i (≥ 0) is the segment's.
func (g Segment) Owns(i int64) bool { return g.IsWhole() || g.seq.Owner(i) == g.part }

// Count is how many of the numbers 0 … n−1 the segment owns (0 for n ≤ 0). Over all parts of a
// sequence the counts add up to n exactly.
func (g Segment) Count(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if g.IsWhole() {
		return n
	}
	s := g.seq
	w, t := int64(s.weights[g.part]), int64(s.total)
	full, rest := n/t, n%t
	// The positions the part owns below rest within a period: a binary search over pos.
	p := s.pos[g.part]
	lo, hi := 0, len(p)
	for lo < hi {
		m := (lo + hi) / 2
		if int64(p[m]) < rest {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return full*w + int64(lo)
}

// Global returns the k-th (k ≥ 0) number the segment owns, in ascending order: the number an
// agent's k-th unit of work stands for in the whole run (its k-th VU is the run's VU Global(k),
// its k-th arrival-rate iteration the run's iteration Global(k)).
func (g Segment) Global(k int64) int64 {
	if g.IsWhole() {
		return k
	}
	s := g.seq
	w := int64(s.weights[g.part])
	return (k/w)*int64(s.total) + int64(s.pos[g.part][k%w])
}

// Local is the inverse of Global: the place of number i among the segment's own numbers, and
// whether the segment owns i at all.
func (g Segment) Local(i int64) (int64, bool) {
	if g.IsWhole() {
		return i, true
	}
	s := g.seq
	t := int64(s.total)
	if int(s.owner[i%t]) != g.part {
		return 0, false
	}
	return (i/t)*int64(s.weights[g.part]) + int64(s.rank[i%t]), true
}

// String gives the part and the weights, e.g. "1 of 2:1:1" ("whole" for Whole).
func (g Segment) String() string {
	if g.seq == nil {
		return "whole"
	}
	return fmt.Sprintf("%d of %s", g.part, g.seq)
}

// Wire is a segment as it travels to an agent (JSON): the sequence's weights and the part.
type Wire struct {
	Weights []int `json:"weights"`
	Part    int   `json:"part"`
}

// Wire returns the segment's wire form (Weights [1], Part 0 for Whole).
func (g Segment) Wire() Wire {
	if g.seq == nil {
		return Wire{Weights: []int{1}}
	}
	return Wire{Weights: g.seq.Weights(), Part: g.part}
}

// FromWire rebuilds a segment from its wire form, with New's bounds and a part in range.
func FromWire(w Wire) (Segment, error) {
	s, err := New(w.Weights...)
	if err != nil {
		return Segment{}, err
	}
	if w.Part < 0 || w.Part >= s.Parts() {
		return Segment{}, fmt.Errorf("segment: part %d of %d parts", w.Part, s.Parts())
	}
	return s.Segment(w.Part), nil
}
