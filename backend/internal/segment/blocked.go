package segment

// Blocked is a segment that owns its numbers in blocks of consecutive numbers, the block size
// chosen page by page: the open models' arrival schedule is split so, because a single machine
// starts the iterations due close together on one wakeup, and an agent owning every n-th
// iteration would wake n times as often for the same load (engine: arrival.nextDue).
//
// The numbers are cut into pages of PageBlocks·W numbers (W = Σ weights). In page p, the numbers
// lo … hi−1, the block size is b = blockOf(lo, hi), a divisor of PageBlocks; the page's blocks are numbered 0, 1, 2, … from its
// start, and the sequence's owner of block m owns all of it. A page thus holds PageBlocks/b whole
// periods of the sequence, and part j owns exactly PageBlocks·w_j of its numbers whatever b is:
// the split stays exact, each page on its own, and Count and Global are O(1) with one blockOf
// call. blockOf must give every part the same answer (a function of the plan alone); a value that
// does not divide PageBlocks counts as 1.
type Blocked struct {
	g       Segment
	page    int64 // numbers per page: PageBlocks·W
	blockOf func(lo, hi int64) int64
}

// PageBlocks is the length of a page in periods of the sequence, and a multiple of every block
// size: 192 = 2⁶·3 allows blocks of 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96 and 192.
const PageBlocks = 192

// InBlocks returns g owning its numbers in blocks of blockOf(lo, hi) in the page of numbers
// lo … hi−1 (Blocked). Whole stays whole: it owns every number.
func (g Segment) InBlocks(blockOf func(lo, hi int64) int64) Blocked {
	var page int64
	if !g.IsWhole() {
		page = PageBlocks * int64(g.seq.total)
	}
	return Blocked{g: g, page: page, blockOf: blockOf}
}

// block is page p's block size.
func (b Blocked) block(p int64) int64 {
	n := b.blockOf(p*b.page, (p+1)*b.page)
	if n < 1 || PageBlocks%n != 0 {
		return 1
	}
	return n
}

// perPage is how many numbers of each page the part owns.
func (b Blocked) perPage() int64 { return PageBlocks * int64(b.g.seq.weights[b.g.part]) }

// Segment is the segment b blocks.
func (b Blocked) Segment() Segment { return b.g }

// Owns reports whether number i (≥ 0) is the segment's.
func (b Blocked) Owns(i int64) bool {
	if b.g.IsWhole() {
		return true
	}
	p := i / b.page
	return b.g.Owns((i - p*b.page) / b.block(p))
}

// Count is how many of the numbers 0 … n−1 the segment owns (0 for n ≤ 0); over all parts the
// counts add up to n exactly.
func (b Blocked) Count(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if b.g.IsWhole() {
		return n
	}
	p, rest := n/b.page, n%b.page
	bl := b.block(p)
	c := p*b.perPage() + b.g.Count(rest/bl)*bl
	if b.g.Owns(rest / bl) {
		c += rest % bl
	}
	return c
}

// Global returns the k-th (k ≥ 0) number the segment owns, in ascending order.
func (b Blocked) Global(k int64) int64 {
	if b.g.IsWhole() {
		return k
	}
	per := b.perPage()
	p, r := k/per, k%per
	bl := b.block(p)
	return p*b.page + b.g.Global(r/bl)*bl + r%bl
}
