package engine

import (
	"bytes"
	"errors"
	"io"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	brotli "github.com/molecule-man/go-brrr"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// Compressed bodies (issue 13, http.compression). A plan asks for compressed answers with
// http.compression (the Accept-Encoding header, set in reqSpec.fill) or with an Accept-Encoding
// header of its own; either way a body with a Content-Encoding is decoded only when a check or an
// extraction reads it (reqSpec.keepBody), once per response, after it has been read whole. Other
// bodies are never decoded: bytes_in counts the bytes on the wire, and a run that reads no body
// costs nothing more for compression.
//
// Codings: gzip (and x-gzip), deflate (zlib-wrapped as RFC 9110 §8.4.1.2 says, or raw DEFLATE as
// some servers send and browsers accept), br, zstd, identity; several codings
// ("Content-Encoding: gzip, br") are undone in reverse order. Decoders are klauspost/compress's
// (gzip, zlib, flate, zstd) and go-brrr (br), the libraries fasthttp itself uses; each VU makes
// the ones it needs on first use and resets them for every later body.
//
// A corrupt or truncated body, or an unknown coding, is error kind decode_error with a fixed
// message per coding (the decoders' own messages quote offsets that would make one failure group
// per response). The decoded size is bounded by http.max_body like a plain body: a larger
// decoded body (a decompression bomb) is error kind body_too_large, found after reading at most
// max_body+1 decoded bytes.

// bodyState is where the current response's body stands (vu.bodyState): set back to bodyUnread
// by every exchange.
const (
	bodyUnread  uint8 = iota
	bodyPlain         // v.resp.Body() is the body
	bodyDecoded       // v.dec.view is the body
	bodyFailed        // it could not be decoded
)

// bodyDecoder is a VU's decoders and decoded-body buffers, made on its first compressed body.
type bodyDecoder struct {
	out  [2][]byte // decoded bytes; two, for stacked codings
	view []byte    // the decoded body
	src  bytes.Reader
	gz   *gzip.Reader
	zl   io.ReadCloser // zlib
	fl   io.ReadCloser // raw DEFLATE
	br   *brotli.Reader
	zs   *zstd.Decoder
}

var (
	errDecodeGzip    = errors.New("corrupt or truncated gzip body")
	errDecodeDeflate = errors.New("corrupt or truncated deflate body")
	errDecodeBr      = errors.New("corrupt or truncated br body")
	errDecodeZstd    = errors.New("corrupt or truncated zstd body")
	errDecodeCoding  = errors.New("body with an unknown Content-Encoding")
	errDecodedLarge  = errors.New("decoded body larger than http.max_body")
)

// body returns the current response's body as checks and extractions read it: decoded when it
// has a Content-Encoding (nil when that failed).
func (v *vu) body() []byte {
	if v.bodyState == bodyUnread {
		v.decodeBody()
	}
	switch v.bodyState {
	case bodyDecoded:
		return v.dec.view
	case bodyFailed:
		return nil
	}
	return v.resp.Body()
}

// decodeBody decodes the current response's body if it has a Content-Encoding, and returns the
// error kind (KindNone, DecodeError or BodyTooLarge), the error for the failure's message, and
// the decoded size (0 for a body that had no coding).
func (v *vu) decodeBody() (metrics.ErrorKind, error, int64) {
	ce := trimWS(v.resp.Header.ContentEncoding())
	// an empty body (HEAD, 204, 304, or a server's empty answer) has nothing to decode, as browsers see it
	if len(ce) == 0 || bytes.EqualFold(ce, []byte("identity")) || len(v.resp.Body()) == 0 {
		v.bodyState = bodyPlain
		return metrics.KindNone, nil, 0
	}
	if v.dec == nil {
		v.dec = &bodyDecoder{}
	}
	d := v.dec
	in := v.resp.Body()
	k := 0
	for len(ce) > 0 { // the last coding applied is undone first
		coding := ce
		if i := bytes.LastIndexByte(ce, ','); i >= 0 {
			coding, ce = ce[i+1:], ce[:i]
		} else {
			ce = nil
		}
		coding = trimWS(coding)
		if len(coding) == 0 || bytes.EqualFold(coding, []byte("identity")) {
			continue
		}
		out, err := d.decode(coding, in, d.out[k][:0], v.e.maxBody)
		d.out[k] = out
		if err != nil {
			v.bodyState = bodyFailed
			if err == errDecodedLarge {
				return metrics.BodyTooLarge, err, 0
			}
			return metrics.DecodeError, err, 0
		}
		in, k = out, 1-k
	}
	d.view = in
	v.bodyState = bodyDecoded
	return metrics.KindNone, nil, int64(len(in))
}

// decode undoes one content coding of in into dst, reading at most limit decoded bytes (more is
// errDecodedLarge).
func (d *bodyDecoder) decode(coding, in, dst []byte, limit int) ([]byte, error) {
	d.src.Reset(in)
	var r io.Reader
	var bad error
	var err error
	switch {
	case bytes.EqualFold(coding, []byte("gzip")) || bytes.EqualFold(coding, []byte("x-gzip")):
		bad = errDecodeGzip
		if d.gz == nil {
			d.gz, err = gzip.NewReader(&d.src)
		} else {
			err = d.gz.Reset(&d.src)
		}
		r = d.gz
	case bytes.EqualFold(coding, []byte("deflate")):
		bad = errDecodeDeflate
		if isZlib(in) {
			if d.zl == nil {
				d.zl, err = zlib.NewReader(&d.src)
			} else {
				err = d.zl.(zlib.Resetter).Reset(&d.src, nil)
			}
			r = d.zl
		} else {
			if d.fl == nil {
				d.fl = flate.NewReader(&d.src)
			} else {
				err = d.fl.(flate.Resetter).Reset(&d.src, nil)
			}
			r = d.fl
		}
	case bytes.EqualFold(coding, []byte("br")):
		bad = errDecodeBr
		if d.br == nil {
			d.br = brotli.NewReader(&d.src)
		} else {
			d.br.Reset(&d.src)
		}
		r = d.br
	case bytes.EqualFold(coding, []byte("zstd")):
		bad = errDecodeZstd
		if d.zs == nil {
			window := uint64(max(limit, zstd.MinWindowSize))
			d.zs, err = zstd.NewReader(&d.src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(window), zstd.WithDecoderMaxMemory(window))
		} else {
			err = d.zs.Reset(&d.src)
		}
		r = d.zs
	default:
		return dst, errDecodeCoding
	}
	if err != nil {
		return dst, bad
	}
	dst, err = readLimited(r, dst, limit)
	if err == errDecodedLarge {
		return dst, err
	}
	if err != nil {
		return dst, bad
	}
	return dst, nil
}

// readLimited appends r's bytes to dst until io.EOF; more than limit bytes is errDecodedLarge.
// dst grows as bytes arrive, never to a size announced in the data.
func readLimited(r io.Reader, dst []byte, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		room := dst[len(dst):cap(dst)]
		if over := len(dst) + len(room) - (limit + 1); over > 0 {
			room = room[:len(room)-over]
		}
		n, err := r.Read(room)
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, errDecodedLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// isZlib reports whether b starts with a zlib header (RFC 1950 §2.2): method 8, and the two
// bytes a multiple of 31.
func isZlib(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}

// close releases the decoders (the zstd decoder's resources) when the VU ends.
func (d *bodyDecoder) close() {
	if d != nil && d.zs != nil {
		d.zs.Close()
	}
}
