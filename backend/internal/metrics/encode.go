package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// HdrHistogram V2 cookies (the format's spec, as hdrhistogram-go and the Java library write it:
// the base cookie with word size 8 in bits 4–7).
const (
	v2EncodingCookie           = 0x1c849303 | 0x10
	v2CompressedEncodingCookie = 0x1c849304 | 0x10
)

// HistEncoder writes a counts array in Volley's geometry (1 µs – 1 h, 3 significant digits) as a
// base64 compressed HdrHistogram V2 histogram, byte-compatible with hdrhistogram-go's
// Histogram.Encode(V2CompressedEncodingCookieBase) up to the zlib compression level (any zlib
// stream decodes the same). Unlike the library's encoder, which allocates for every bucket and a
// new zlib writer each time, it reuses its buffers, so the collector's once-a-second histogram
// costs one allocation: the returned string. Not safe for concurrent use.
//
// Layout (big-endian): compressed cookie, length of the zlib stream, then the zlib stream of
// [cookie, payload length, normalizing index offset 0, significant figures, lowest, highest,
// conversion ratio 1.0, counts]. Counts are ZigZag LEB128 (at most 9 bytes) varints, a run of
// zeros written as its negated length, up to the last non-zero count.
type HistEncoder struct {
	raw, zbuf, out bytes.Buffer
	zw             *zlib.Writer
	b64            []byte
}

// Encode returns counts (len CountsLen or less) encoded; an all-zero array encodes as an empty
// histogram.
func (e *HistEncoder) Encode(counts []int64) string {
	last := len(counts) - 1
	for last >= 0 && counts[last] == 0 {
		last--
	}
	e.raw.Reset()
	var hdrb [40]byte
	e.raw.Write(hdrb[:]) // header, filled in below once the payload length is known
	var vb [binary.MaxVarintLen64]byte
	for i := 0; i <= last; {
		c := counts[i]
		i++
		if c == 0 {
			zeros := int64(1)
			for i <= last && counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				c = -zeros
			}
		}
		e.raw.Write(vb[:putZigZag(vb[:], c)])
	}
	raw := e.raw.Bytes()
	binary.BigEndian.PutUint32(raw[0:], v2EncodingCookie)
	binary.BigEndian.PutUint32(raw[4:], uint32(len(raw)-40))
	binary.BigEndian.PutUint32(raw[8:], 0)
	binary.BigEndian.PutUint32(raw[12:], SigFigs)
	binary.BigEndian.PutUint64(raw[16:], LowestUs)
	binary.BigEndian.PutUint64(raw[24:], HighestUs)
	binary.BigEndian.PutUint64(raw[32:], math.Float64bits(1))

	e.zbuf.Reset()
	if e.zw == nil {
		e.zw, _ = zlib.NewWriterLevel(&e.zbuf, zlib.BestSpeed) // a valid level never fails
	} else {
		e.zw.Reset(&e.zbuf)
	}
	_, _ = e.zw.Write(raw) // writes to a bytes.Buffer do not fail
	_ = e.zw.Close()

	e.out.Reset()
	var head [8]byte
	binary.BigEndian.PutUint32(head[0:], v2CompressedEncodingCookie)
	binary.BigEndian.PutUint32(head[4:], uint32(e.zbuf.Len()))
	e.out.Write(head[:])
	e.out.Write(e.zbuf.Bytes())

	n := base64.StdEncoding.EncodedLen(e.out.Len())
	if cap(e.b64) < n {
		e.b64 = make([]byte, n)
	}
	e.b64 = e.b64[:n]
	base64.StdEncoding.Encode(e.b64, e.out.Bytes())
	return string(e.b64)
}

// putZigZag writes v as the format's ZigZag LEB128-64b9B varint: 7 bits a byte for the first 8
// bytes, all 8 bits of the 9th, and returns its length.
func putZigZag(b []byte, v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	for i := 0; i < 8; i++ {
		if u < 0x80 {
			b[i] = byte(u)
			return i + 1
		}
		b[i] = byte(u) | 0x80
		u >>= 7
	}
	b[8] = byte(u)
	return 9
}

// FillHist resets h (Volley's geometry, from NewHist) and loads counts into it: the same
// histogram as HistFromCounts(counts) without allocating a new one.
func FillHist(h *hdr.Histogram, counts []int64) {
	h.Reset()
	for i, c := range counts {
		if c > 0 {
			_ = h.RecordValues(indexValue(i), c) // in range by construction
		}
	}
}

// indexValue is the lowest value that maps to counts slot i (the inverse of countsIndex).
func indexValue(i int) int64 {
	bucket := i>>subBucketHalfCountMagnitude - 1
	sub := int64(i&(subBucketHalfCount-1)) + subBucketHalfCount
	if bucket < 0 {
		bucket, sub = 0, sub-subBucketHalfCount
	}
	return sub << uint(bucket)
}
