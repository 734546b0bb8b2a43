package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"
)

// RunFileVersion is the version of the run file `volley run --out` writes (RunFile). Version 0
// is a bare Summary, as `--out` wrote it before run files existed.
const RunFileVersion = 1

// RunFile is a finished run as one JSON file: what `volley run --out` writes, what `volley
// compare` reads and what POST /api/runs/import stores. The summary's fields stay at the top
// level, where a bare `--out` summary had them, so scripts reading `.rps` keep working; the rest
// is what a comparison and the platform's history need:
//
//	{…the Summary…, "volley_run_file": 1,
//	 "run": {"status": "finished", "started_at": "…", "ended_at": "…"},
//	 "plan": {…the plan, secret header values masked…},
//	 "hist": "…the run's merged latency histogram…",
//	 "samples": [{…a Sample…, "hist": "…that second's histogram…"}, …]}
//
// Histograms are HdrHistogram V2 compressed, base64 (EncodeHist), in Volley's geometry; Samples
// are in time order, as the server stores them.
type RunFile struct {
	Summary
	Version int             `json:"volley_run_file"`
	Run     RunFileRun      `json:"run"`
	Plan    json.RawMessage `json:"plan,omitempty"`
	Merged  string          `json:"hist,omitempty"`
	Samples []FileSample    `json:"samples"`
}

// RunFileRun is how a file's run went: status "finished", or "stopped" (Ctrl-C or SIGTERM).
type RunFileRun struct {
	Status    string    `json:"status"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
}

// FileSample is one second of a RunFile: the Sample and its histogram ("" when the second had no
// response). Sample.Hist is not encoded; Hist carries it.
type FileSample struct {
	Sample
	Hist string `json:"hist,omitempty"`
}

// Bounds of a RunFile that Check enforces.
const (
	MaxFileSeconds = 86_400  // samples: one day of seconds
	MaxFileItems   = 10_000  // any other list or map, at any depth
	MaxFileString  = 4_096   // bytes of any string but the plan and the histograms
	MaxFileNumber  = 1e15    // magnitude of any number
	MaxFilePlan    = 1 << 20 // bytes of the plan JSON
	// MaxEncodedHist bounds one encoded histogram (base64 characters); Volley's encoder writes at
	// most about 300 KB for a histogram with every slot used.
	MaxEncodedHist = 1 << 20
)

// Check validates a RunFile read from outside (a file, an upload) before anything uses it:
// version, the bounds above on every number, string, list and map of the summary and the
// samples, seconds in increasing order, and every histogram decoded with DecodeHistCounts. It
// allocates nothing in proportion to what the file merely announces.
func (f *RunFile) Check() error {
	switch {
	case f.Version == 0:
		return errors.New("not a run file (no volley_run_file version): a bare summary from an older volley run --out")
	case f.Version > RunFileVersion:
		return fmt.Errorf("run file version %d is newer than this volley reads (%d)", f.Version, RunFileVersion)
	case f.Version < 0:
		return fmt.Errorf("run file version %d is not valid", f.Version)
	case len(f.Samples) > MaxFileSeconds:
		return fmt.Errorf("samples: %d seconds, at most %d", len(f.Samples), MaxFileSeconds)
	case len(f.Plan) > MaxFilePlan:
		return fmt.Errorf("plan: %d bytes, at most %d", len(f.Plan), MaxFilePlan)
	}
	if err := checkBounded("", reflect.ValueOf(&f.Summary).Elem()); err != nil {
		return err
	}
	if err := checkBounded(".run", reflect.ValueOf(&f.Run).Elem()); err != nil {
		return err
	}
	if f.Merged != "" {
		if _, err := DecodeHistCounts(f.Merged); err != nil {
			return fmt.Errorf("hist: %w", err)
		}
	}
	prev := 0
	for i := range f.Samples {
		s := &f.Samples[i]
		path := fmt.Sprintf("samples[%d]", i)
		if err := checkBounded(path, reflect.ValueOf(&s.Sample).Elem()); err != nil {
			return err
		}
		if s.ElapsedS <= prev {
			return fmt.Errorf("%s.elapsed_s: %d does not follow %d", path, s.ElapsedS, prev)
		}
		prev = s.ElapsedS
		if s.Hist != "" {
			if _, err := DecodeHistCounts(s.Hist); err != nil {
				return fmt.Errorf("%s.hist: %w", path, err)
			}
		}
	}
	return nil
}

// checkBounded walks v (decoded JSON) and refuses a number out of ±MaxFileNumber (a negative
// integer too), a string longer than MaxFileString, a list or map longer than MaxFileItems.
// Fields not encoded (json:"-") are skipped.
func checkBounded(path string, v reflect.Value) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", strings.TrimPrefix(path, "."), fmt.Sprintf(format, a...))
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if x := v.Float(); math.IsNaN(x) || math.Abs(x) > MaxFileNumber {
			return bad("%g is out of range (±%g)", x, MaxFileNumber)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if x := v.Int(); x < 0 || float64(x) > MaxFileNumber {
			return bad("%d is out of range (0 to %g)", x, MaxFileNumber)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if x := v.Uint(); float64(x) > MaxFileNumber {
			return bad("%d is out of range (0 to %g)", x, MaxFileNumber)
		}
	case reflect.String:
		if v.Len() > MaxFileString {
			return bad("a string of %d bytes, at most %d", v.Len(), MaxFileString)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return checkBounded(path, v.Elem())
		}
	case reflect.Slice:
		if v.Len() > MaxFileItems {
			return bad("%d items, at most %d", v.Len(), MaxFileItems)
		}
		for i := range v.Len() {
			if err := checkBounded(fmt.Sprintf("%s[%d]", path, i), v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.Len() > MaxFileItems {
			return bad("%d entries, at most %d", v.Len(), MaxFileItems)
		}
		it := v.MapRange()
		for it.Next() {
			k := fmt.Sprint(it.Key().Interface())
			if len(k) > MaxFileString {
				return bad("a key of %d bytes, at most %d", len(k), MaxFileString)
			}
			if err := checkBounded(path+"."+k, it.Value()); err != nil {
				return err
			}
		}
	case reflect.Struct:
		if _, ok := v.Interface().(time.Time); ok {
			return nil
		}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if !sf.IsExported() || name == "-" {
				continue
			}
			p := path
			if !sf.Anonymous {
				p += "." + name
			}
			if err := checkBounded(p, v.Field(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxRawHist is the longest uncompressed V2 payload of Volley's geometry: the 40-byte header and
// one 9-byte varint per slot.
var maxRawHist = 40 + 9*CountsLen

// DecodeHistCounts decodes an encoded histogram (EncodeHist's format) from outside into a counts
// array of Volley's geometry (len CountsLen), with limits: at most MaxEncodedHist characters; the
// zlib stream is read up to the longest payload the geometry allows, never to the length it
// announces; the header must name Volley's geometry (lowest 1, highest 3 600 000 000, 3
// significant figures, no offset, ratio 1); counts must fit the array, be non-negative and total
// at most 2⁶². Unlike DecodeHist (for what Volley itself stored) it never sizes anything from the
// input. Errors say what is wrong.
func DecodeHistCounts(s string) ([]int64, error) {
	if len(s) > MaxEncodedHist {
		return nil, fmt.Errorf("histogram of %d characters, at most %d", len(s), MaxEncodedHist)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("histogram is not base64: %w", err)
	}
	if len(raw) < 8 || binary.BigEndian.Uint32(raw) != v2CompressedEncodingCookie {
		return nil, errors.New("not a compressed HdrHistogram V2 histogram")
	}
	if n := binary.BigEndian.Uint32(raw[4:]); uint64(n) != uint64(len(raw)-8) {
		return nil, fmt.Errorf("histogram announces %d compressed bytes, has %d", n, len(raw)-8)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(zr, int64(maxRawHist)+1)); err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	p := buf.Bytes()
	switch {
	case len(p) > maxRawHist:
		return nil, fmt.Errorf("histogram decompresses to more than %d bytes", maxRawHist)
	case len(p) < 40 || binary.BigEndian.Uint32(p) != v2EncodingCookie:
		return nil, errors.New("histogram payload has no V2 header")
	case uint64(binary.BigEndian.Uint32(p[4:])) != uint64(len(p)-40):
		return nil, errors.New("histogram payload length does not match")
	case binary.BigEndian.Uint32(p[8:]) != 0, binary.BigEndian.Uint32(p[12:]) != SigFigs,
		binary.BigEndian.Uint64(p[16:]) != LowestUs, binary.BigEndian.Uint64(p[24:]) != HighestUs,
		math.Float64frombits(binary.BigEndian.Uint64(p[32:])) != 1:
		return nil, errors.New("histogram geometry is not Volley's (1 µs – 1 h, 3 significant digits)")
	}
	counts := make([]int64, CountsLen)
	var total int64
	i := 0
	for pos := 40; pos < len(p); {
		v, n := zigZag(p[pos:])
		if n == 0 {
			return nil, errors.New("histogram counts are truncated")
		}
		pos += n
		if v < 0 { // a run of -v zero slots
			if v < -int64(CountsLen-i) {
				return nil, errors.New("histogram has more slots than Volley's geometry")
			}
			i += int(-v)
			continue
		}
		if i >= CountsLen {
			return nil, errors.New("histogram has more slots than Volley's geometry")
		}
		if v > 1<<62-total {
			return nil, errors.New("histogram holds more than 2^62 values")
		}
		counts[i] = v
		total += v
		i++
	}
	return counts, nil
}

// zigZag reads one ZigZag LEB128-64b9B varint (putZigZag's format): its value and length, or
// length 0 when b ends first.
func zigZag(b []byte) (int64, int) {
	var u uint64
	for i := 0; i < 9; i++ {
		if i == len(b) {
			return 0, 0
		}
		if i == 8 {
			u |= uint64(b[8]) << 56
			return int64(u>>1) ^ -int64(u&1), 9
		}
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, 0 // unreachable
}
