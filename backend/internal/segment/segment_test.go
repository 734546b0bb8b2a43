package segment

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// weightSets are the sequences the property tests walk: equal, weighted by cores, lopsided, many.
var weightSets = [][]int{
	{1}, {1, 1}, {1, 1, 1}, {2, 1, 1}, {3, 5}, {7, 1, 1, 2}, {1, 1000}, {4, 6, 9}, {16, 8, 8, 4, 2, 1, 1},
	{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
}

func mustNew(t *testing.T, w ...int) *Sequence {
	t.Helper()
	s, err := New(w...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every number has exactly one owner; Count, Global, Local and Owns agree with a brute-force walk;
// the counts over all parts add up to n; and every prefix is fair (each part's count is within
// one of its exact share n·w/W).
func TestPartitionIsExactAndFair(t *testing.T) {
	for _, ws := range weightSets {
		s := mustNew(t, ws...)
		n := int64(3*s.total + 17)
		counts := make([]int64, s.Parts())
		for i := range n {
			owner := s.Owner(i)
			owned := 0
			for j := range s.Parts() {
				g := s.Segment(j)
				if g.Owns(i) {
					owned++
				}
				if got := g.Count(i); got != counts[j] {
					t.Fatalf("%v part %d: Count(%d) = %d, walk says %d", ws, j, i, got, counts[j])
				}
				exact := float64(i) * float64(ws[j]) / float64(s.total)
				if math.Abs(float64(counts[j])-exact) >= 1 {
					t.Fatalf("%v part %d: %d of the first %d numbers, exact share %.3f (unfair prefix)", ws, j, counts[j], i, exact)
				}
			}
			if owned != 1 {
				t.Fatalf("%v: number %d owned by %d parts", ws, i, owned)
			}
			g := s.Segment(owner)
			if got := g.Global(counts[owner]); got != i {
				t.Fatalf("%v part %d: Global(%d) = %d, want %d", ws, owner, counts[owner], got, i)
			}
			if k, ok := g.Local(i); !ok || k != counts[owner] {
				t.Fatalf("%v part %d: Local(%d) = %d %v, want %d", ws, owner, i, k, ok, counts[owner])
			}
			counts[owner]++
		}
		var sum int64
		for j := range counts {
			sum += s.Segment(j).Count(n)
		}
		if sum != n {
			t.Fatalf("%v: counts add up to %d of %d", ws, sum, n)
		}
	}
}

// In blocks whose size changes page by page (the block sizes cycle, one a non-divisor that counts
// as 1), every number still has exactly one owner, its block's; Count, Global and Owns agree with
// a walk; and each part owns exactly PageBlocks·w_j numbers of every page.
func TestBlocksAreExact(t *testing.T) {
	sizes := []int64{3, 1, 64, 5, 2, 192, 0, 12}
	for _, ws := range weightSets {
		s := mustNew(t, ws...)
		page := int64(PageBlocks * s.total)
		blockOf := func(lo, hi int64) int64 {
			if hi-lo != page || lo%page != 0 {
				t.Fatalf("%v: page %d … %d, pages are %d long", ws, lo, hi, page)
			}
			return sizes[lo/page%int64(len(sizes))]
		}
		n := min(int64(len(sizes))*page+page/3+1, 400_000)
		counts := make([]int64, s.Parts())
		parts := make([]Blocked, s.Parts())
		for j := range parts {
			parts[j] = s.Segment(j).InBlocks(blockOf)
		}
		for i := range n {
			owner := -1
			for j, g := range parts {
				if i%97 == 0 || i%page == 0 {
					if got := g.Count(i); got != counts[j] {
						t.Fatalf("%v part %d: Count(%d) = %d, walk says %d", ws, j, i, got, counts[j])
					}
				}
				if g.Owns(i) {
					if owner >= 0 {
						t.Fatalf("%v: %d owned twice", ws, i)
					}
					owner = j
				}
			}
			if owner < 0 {
				t.Fatalf("%v: %d owned by none", ws, i)
			}
			p := i / page
			bl := blockOf(p*page, (p+1)*page)
			if PageBlocks%max(bl, 1) != 0 || bl < 1 {
				bl = 1
			}
			if want := s.Owner((i - p*page) / bl); owner != want {
				t.Fatalf("%v: %d owned by %d, its block's owner is %d", ws, i, owner, want)
			}
			if got := parts[owner].Global(counts[owner]); got != i {
				t.Fatalf("%v part %d: Global(%d) = %d, want %d", ws, owner, counts[owner], got, i)
			}
			counts[owner]++
			if (i+1)%page == 0 {
				for j, w := range ws {
					if want := (i + 1) / page * PageBlocks * int64(w); counts[j] != want {
						t.Fatalf("%v part %d: %d after %d pages, want %d", ws, j, counts[j], (i+1)/page, want)
					}
				}
			}
		}
	}
	if g := Whole.InBlocks(func(lo, hi int64) int64 { return 3 }); g.Count(1000) != 1000 || g.Global(77) != 77 || !g.Owns(5) || g.Segment() != Whole {
		t.Errorf("whole in blocks: %+v", g)
	}
}

// The figures the issue names: 10 VUs over three equal agents are 4/3/3; 10 000 iterations over
// weights 2:1:1 are 5 000/2 500/2 500; and Global walks each part's numbers in ascending order.
func TestKnownSplits(t *testing.T) {
	eq, err := Equal(3)
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]int64{eq.Segment(0).Count(10), eq.Segment(1).Count(10), eq.Segment(2).Count(10)}; got != [3]int64{4, 3, 3} {
		t.Errorf("10 VUs over 3 agents: %v, want [4 3 3]", got)
	}
	w := mustNew(t, 2, 1, 1)
	if got := [3]int64{w.Segment(0).Count(10000), w.Segment(1).Count(10000), w.Segment(2).Count(10000)}; got != [3]int64{5000, 2500, 2500} {
		t.Errorf("10 000 over 2:1:1: %v", got)
	}
	// Within every 4 consecutive numbers the weighted part owns 2, spread out (not 2 in a row at
	// the end): the open model's arrivals of each agent are evenly spaced.
	if got := w.String(); got != "2:1:1" {
		t.Errorf("String = %q", got)
	}
	for j := range 3 {
		g := w.Segment(j)
		prev := int64(-1)
		for k := range int64(100) {
			i := g.Global(k)
			if i <= prev || !g.Owns(i) {
				t.Fatalf("part %d: Global(%d) = %d after %d", j, k, i, prev)
			}
			prev = i
		}
	}
	if w.Owner(0) == w.Owner(1) {
		t.Errorf("owners of 0 and 1 are both %d: the weighted part's numbers are not spread", w.Owner(0))
	}
}

// The whole (a single-machine run) owns everything, with no table.
func TestWhole(t *testing.T) {
	for _, g := range []Segment{Whole, mustNew(t, 5).Segment(0)} {
		if !g.IsWhole() || g.Count(12345) != 12345 || g.Global(77) != 77 || !g.Owns(3) {
			t.Errorf("%v is not the whole", g)
		}
		if k, ok := g.Local(9); !ok || k != 9 {
			t.Errorf("%v: Local(9) = %d %v", g, k, ok)
		}
		if n, d := g.Fraction(); n != d {
			t.Errorf("%v: fraction %d/%d", g, n, d)
		}
	}
	if Whole.String() != "whole" || Whole.Count(-5) != 0 {
		t.Error("Whole's String or Count(-5)")
	}
}

// Bad weights are refused with the reason; the wire form round-trips and is checked like New.
func TestBoundsAndWire(t *testing.T) {
	many := make([]int, MaxParts+1)
	for i := range many {
		many[i] = 1
	}
	heavy := make([]int, 100)
	for i := range heavy {
		heavy[i] = MaxWeight
	}
	for name, c := range map[string]struct {
		w    []int
		want string
	}{
		"none":       {nil, "no parts"},
		"zero":       {[]int{1, 0}, "weight 0 of part 1"},
		"negative":   {[]int{-3}, "weight -3"},
		"too heavy":  {[]int{MaxWeight + 1}, "outside 1..1000"},
		"many parts": {many, "1001 parts"},
		"total":      {heavy, "add up to 100000"},
	} {
		if _, err := New(c.w...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", name, err, c.want)
		}
	}
	if _, err := Equal(0); err == nil {
		t.Error("Equal(0) accepted")
	}
	g := mustNew(t, 3, 1, 2).Segment(2)
	b, err := json.Marshal(g.Wire())
	if err != nil || string(b) != `{"weights":[3,1,2],"part":2}` {
		t.Fatalf("wire %s %v", b, err)
	}
	var w Wire
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	back, err := FromWire(w)
	if err != nil || back.String() != g.String() || back.Count(1000) != g.Count(1000) {
		t.Fatalf("round trip %v %v", back, err)
	}
	for _, bad := range []Wire{{Weights: []int{1, 1}, Part: 2}, {Weights: []int{1}, Part: -1}, {Weights: []int{0}}} {
		if _, err := FromWire(bad); err == nil {
			t.Errorf("FromWire(%+v) accepted", bad)
		}
	}
}

// Random weights: the shares always partition the numbers, the sizes follow the weights exactly
// over whole periods, and no prefix is unfair by one or more.
func TestRandomWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ws := make([]int, 1+r.IntN(12))
		for i := range ws {
			ws[i] = 1 + r.IntN(50)
		}
		s := mustNew(t, ws...)
		n := int64(s.total)*int64(1+r.IntN(5)) + int64(r.IntN(s.total))
		var sum int64
		for j := range ws {
			c := s.Segment(j).Count(n)
			exact := float64(n) * float64(ws[j]) / float64(s.total)
			if math.Abs(float64(c)-exact) >= 1 {
				t.Fatalf("%v part %d: %d of %d, exact %.3f", ws, j, c, n, exact)
			}
			if full := s.Segment(j).Count(int64(s.total) * 7); full != int64(ws[j])*7 {
				t.Fatalf("%v part %d: %d in 7 periods, want %d", ws, j, full, ws[j]*7)
			}
			sum += c
		}
		if sum != n {
			t.Fatalf("%v: %d of %d", ws, sum, n)
		}
	}
}

// Lookups allocate nothing (they run once per iteration on an agent's hot path).
func TestLookupsAllocateNothing(t *testing.T) {
	g := mustNew(t, 2, 1, 1).Segment(1)
	bl := g.InBlocks(func(lo, hi int64) int64 { return 3 })
	var sink int64
	if a := testing.AllocsPerRun(1000, func() {
		sink += g.Global(12345) + g.Count(99999)
		if g.Owns(77) {
			sink++
		}
		sink += bl.Global(12345) + bl.Count(99999)
	}); a != 0 {
		t.Errorf("%v allocations per lookup", a)
	}
	_ = sink
}

func BenchmarkGlobal(b *testing.B) {
	g, _ := Equal(3)
	s := g.Segment(1)
	var sink int64
	for i := 0; b.Loop(); i++ {
		sink += s.Global(int64(i))
	}
	_ = sink
}
