package metrics

import (
	"math/rand/v2"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func randomCounts(r *rand.Rand, values int) []int64 {
	counts := make([]int64, CountsLen)
	for i := 0; i < values; i++ {
		// log-uniform over the whole range, so every bucket region and long zero runs occur
		v := int64(1) << r.IntN(32)
		v += r.Int64N(v)
		counts[countsIndex(v)] += 1 + r.Int64N(1<<r.IntN(40))
	}
	return counts
}

// What HistEncoder writes, hdrhistogram-go decodes into the same histogram as the library's own
// import of the counts — for empty, tiny, huge-count and random histograms.
func TestHistEncoderRoundTripsThroughTheLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := [][]int64{make([]int64, CountsLen)}
	one := make([]int64, CountsLen)
	one[countsIndex(1)] = 1
	big := make([]int64, CountsLen)
	big[countsIndex(HighestUs)] = 1 << 62
	cases = append(cases, one, big)
	for i := 0; i < 50; i++ {
		cases = append(cases, randomCounts(r, 1+r.IntN(3000)))
	}
	var e HistEncoder
	for i, counts := range cases {
		got, err := hdr.Decode([]byte(e.Encode(counts)))
		if err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
		}
		if want := HistFromCounts(counts); !got.Equals(want) {
			t.Fatalf("case %d: decoded %d values (max %d), want %d (max %d)", i, got.TotalCount(), got.Max(), want.TotalCount(), want.Max())
		}
	}
}

func TestFillHistEqualsImport(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h := NewHist()
	for i := 0; i < 20; i++ {
		counts := randomCounts(r, 1+r.IntN(5000))
		FillHist(h, counts)
		if want := HistFromCounts(counts); !h.Equals(want) || h.Export().Counts[countsIndex(7)] != counts[countsIndex(7)] {
			t.Fatalf("case %d: filled %d values, imported %d", i, h.TotalCount(), want.TotalCount())
		}
	}
	for i := 0; i <= countsIndex(HighestUs); i += 97 {
		if got := countsIndex(indexValue(i)); got != i {
			t.Fatalf("countsIndex(indexValue(%d)) = %d", i, got)
		}
	}
}

// The collector's per-second histogram work: encode and fill allocate nothing but the string.
func BenchmarkHistEncode(b *testing.B) {
	counts := randomCounts(rand.New(rand.NewPCG(5, 6)), 2000)
	var e HistEncoder
	b.ReportAllocs()
	for b.Loop() {
		_ = e.Encode(counts)
	}
}

func BenchmarkHistEncodeLibrary(b *testing.B) {
	h := HistFromCounts(randomCounts(rand.New(rand.NewPCG(5, 6)), 2000))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h.Encode(hdr.V2CompressedEncodingCookieBase)
	}
}

func BenchmarkFillHist(b *testing.B) {
	counts := randomCounts(rand.New(rand.NewPCG(5, 6)), 2000)
	h := NewHist()
	b.ReportAllocs()
	for b.Loop() {
		FillHist(h, counts)
	}
}

// SumFits: a sum whose mean lies within the lowest and highest non-empty slots' values fits;
// one outside, or one with no latency counted, does not; 0 (no sum kept) always fits. The slots'
// ranges are the library's equivalent-value ranges.
func TestSumFits(t *testing.T) {
	h := NewHist()
	for _, v := range []int64{1, 1000, 2047, 2048, 5000, 123_456, HighestUs} {
		i := countsIndex(v)
		lo, hi := indexValue(i), indexValue(i+1)-1
		if !h.ValuesAreEquivalent(lo, v) || !h.ValuesAreEquivalent(hi, v) || h.ValuesAreEquivalent(lo-1, v) || h.ValuesAreEquivalent(hi+1, v) {
			t.Fatalf("value %d: slot %d holds %d–%d, not the library's equivalent range", v, i, lo, hi)
		}
	}
	counts := make([]int64, CountsLen)
	counts[countsIndex(5000)] = 2    // 5000–5003 µs
	counts[countsIndex(100_000)] = 1 // 99 968–100 031 µs
	lo, hi := 2*int64(5000)+99_968, 2*int64(5003)+100_031
	for _, tc := range []struct {
		sum  uint64
		fits bool
	}{{0, true}, {uint64(lo), true}, {uint64(hi), true}, {3 * 5000, true}, {3*5000 - 1, false}, {3 * 100_031, true}, {3*100_031 + 1, false}, {1 << 62, false}} {
		if got := SumFits(counts, tc.sum); got != tc.fits {
			t.Errorf("sum %d: fits %v, want %v", tc.sum, got, tc.fits)
		}
	}
	if SumFits(make([]int64, CountsLen), 1) {
		t.Fatal("a sum with no latency counted fits")
	}
	top := make([]int64, CountsLen)
	top[CountsLen-1] = 1
	if !SumFits(top, 1<<62) {
		t.Fatal("the last slot (every value past HighestUs) bounds the mean")
	}
}

// Stat reads what AddTo adds — the count, the lowest and highest non-empty slots — with the same
// errors, and its SumFits is that of the counts.
func TestHistDecoderStat(t *testing.T) {
	var e HistEncoder
	var d HistDecoder
	counts := make([]int64, CountsLen)
	counts[countsIndex(900)], counts[countsIndex(5000)], counts[countsIndex(70_000)] = 3, 1, 2
	st, err := d.Stat(e.Encode(counts))
	if err != nil || st.N != 6 || st.First != countsIndex(900) || st.Last != countsIndex(70_000) {
		t.Fatalf("stat %+v, %v", st, err)
	}
	for _, sum := range []uint64{0, 1, 3*900 + 5000 + 2*70_000, 1 << 40} {
		if st.SumFits(sum) != SumFits(counts, sum) {
			t.Errorf("sum %d: Stat's SumFits %v, the counts' %v", sum, st.SumFits(sum), SumFits(counts, sum))
		}
	}
	if st, err := d.Stat(""); err != nil || st.N != 0 || st.First != -1 || st.SumFits(1) {
		t.Fatalf("empty: %+v %v", st, err)
	}
	for _, bad := range []string{"!!", "AAAAAAAA", e.Encode(counts)[:20]} {
		_, errStat := d.Stat(bad)
		_, errAdd := d.AddTo(make([]int64, CountsLen), bad)
		if errStat == nil || errAdd == nil || errStat.Error() != errAdd.Error() {
			t.Errorf("%q: Stat %v, AddTo %v", bad, errStat, errAdd)
		}
	}
}
