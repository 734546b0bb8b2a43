package metrics

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zlib"

	"github.com/volley-load/volley/backend/internal/plan"
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

	nullName string // the first by_name row that was null in the JSON (UnmarshalJSON), for Check
}

// UnmarshalJSON decodes a run file as its fields say, and notes for Check what the decoded values
// cannot show: a by_name row that was null, a failure sample's header that was not a pair of
// two strings.
func (f *RunFile) UnmarshalJSON(b []byte) error {
	type plain RunFile
	if err := json.Unmarshal(b, (*plain)(f)); err != nil {
		return err
	}
	type rawGroups []struct {
		Sample *struct {
			Headers []json.RawMessage `json:"headers"`
		} `json:"sample"`
	}
	var raw struct {
		ByName   map[string]json.RawMessage `json:"by_name"`
		Failures rawGroups                  `json:"failures"`
		Samples  []struct {
			Failures rawGroups `json:"failures"`
		} `json:"samples"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return nil // cannot be: the same JSON decoded above
	}
	f.nullName = ""
	for name, row := range raw.ByName {
		if string(row) == "null" && (f.nullName == "" || name < f.nullName) {
			f.nullName = name
		}
	}
	mark := func(groups []FailureGroup, rg rawGroups) {
		for i := range min(len(groups), len(rg)) {
			if s, r := groups[i].Sample, rg[i].Sample; s != nil && r != nil {
				s.badHeader = 0
				for j, h := range r.Headers {
					if !stringPair(h) {
						s.badHeader = j + 1
						break
					}
				}
			}
		}
	}
	mark(f.Failures, raw.Failures)
	for i := range min(len(f.Samples), len(raw.Samples)) {
		mark(f.Samples[i].Failures, raw.Samples[i].Failures)
	}
	return nil
}

// stringPair reports whether h is a JSON array of exactly two strings.
func stringPair(h json.RawMessage) bool {
	var pair []json.RawMessage
	if json.Unmarshal(h, &pair) != nil || len(pair) != 2 {
		return false
	}
	for _, v := range pair {
		if len(v) == 0 || v[0] != '"' {
			return false
		}
	}
	return true
}

// RunFileRun is how a file's run went: status "finished", or "stopped" (Ctrl-C or SIGTERM).
type RunFileRun struct {
	// ID identifies the run (a random UUID `volley run` makes): the import stores a file once
	// under it. Older files have none.
	ID        string    `json:"id,omitempty"`
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
	// MaxSecondCodes bounds the entries of error_kinds (the summary's and each second's): more
	// than the engine's error kinds.
	MaxSecondCodes = 64
	// MaxStatusCodes bounds the entries of status_codes (the summary's and each second's): the
	// engine's own bound, every key it can write (100–599, and 0 for codes ≥ 600) — a target
	// answering random statuses gives a second hundreds.
	MaxStatusCodes = maxStatus - 100 + 1
	// MaxFileEntries is the whole file's budget of map entries and list items (status codes,
	// error kinds, by_name, checks, thresholds, sweep rows…) over the summary and every second
	// together; the seconds themselves are bounded by MaxFileSeconds. A six-hour run (the most
	// the 32 MiB import body holds) with two status codes, an error kind and five request names a
	// second has about 190 000.
	MaxFileEntries = 200_000
	// ElapsedSlack is how many seconds a sample's elapsed_s may pass the run's own length
	// (run.ended_at − run.started_at, rounded up): the engine's clock starts a little after
	// started_at, and the last, partial second is a second of its own.
	ElapsedSlack = 2
)

// FileError is a problem of a RunFile at one field: Field is its JSON path ("requests",
// "samples[3].rps", "run.ended_at"; "" for the file as a whole).
type FileError struct {
	Field string
	Msg   string
}

func (e *FileError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func fileErr(field, format string, a ...any) *FileError {
	return &FileError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// Check validates a RunFile read from outside (a file, an upload) before anything uses it; the
// error is a *FileError naming the field. It checks:
//   - the version, and run.id when present (8–64 characters of 0-9, a-f and '-');
//   - the bounds above on every number (none negative), string, list and map of the summary and
//     the samples, and the whole file's MaxFileEntries;
//   - status_codes keys: 3-digit codes 100–599, or "0" (Volley's key for codes ≥ 600); at most
//     MaxStatusCodes status codes and MaxSecondCodes error kinds (the summary and each second);
//   - that the numbers agree: successes + errors = requests (the summary, each second and each
//     by_name entry with errors ≤ requests; the by_name rows, none null, sum to
//     summary.requests), every latency's p50 ≤ its max, the seconds' requests sum to summary.requests
//     exactly (the collector emits every second, the last partial one included, whenever it
//     had a response), seconds in increasing order and, when the run's times are given, none
//     beyond ceil(ended_at − started_at) + ElapsedSlack;
//   - each threshold's expr is a threshold (plan.ParseThreshold), optionally "request: " first;
//   - failure groups (summary and seconds) within their bounds (MaxFailureGroups…,
//     checkFailures), the summary's and each second's adding up to at most the run's errors;
//   - every histogram decoded with DecodeHistCounts.
//
// It allocates nothing in proportion to what the file merely announces.
func (f *RunFile) Check() error {
	switch {
	case f.Version == 0:
		return fileErr("volley_run_file", "not a run file (no volley_run_file version): a bare summary from an older volley run --out")
	case f.Version > RunFileVersion:
		return fileErr("volley_run_file", "run file version %d is newer than this volley reads (%d)", f.Version, RunFileVersion)
	case f.Version < 0:
		return fileErr("volley_run_file", "run file version %d is not valid", f.Version)
	case len(f.Samples) > MaxFileSeconds:
		return fileErr("samples", "%d seconds, at most %d", len(f.Samples), MaxFileSeconds)
	case len(f.Plan) > MaxFilePlan:
		return fileErr("plan", "%d bytes, at most %d", len(f.Plan), MaxFilePlan)
	case f.Run.ID != "" && !validRunID(f.Run.ID):
		return fileErr("run.id", "must be 8 to 64 characters of 0-9, a-f and '-' (a UUID)")
	}
	budget := MaxFileEntries
	if err := checkBounded("", reflect.ValueOf(&f.Summary).Elem(), &budget); err != nil {
		return err
	}
	if err := checkBounded(".run", reflect.ValueOf(&f.Run).Elem(), &budget); err != nil {
		return err
	}
	if err := checkCounts("", f.Requests, f.Successes, f.Errors, f.StatusCodes, f.ErrorKinds); err != nil {
		return err
	}
	if f.nullName != "" {
		return fileErr("by_name."+f.nullName, "null: a request's row must be an object")
	}
	var byName int64
	for name, n := range f.ByName {
		if n.Errors > n.Requests {
			return fileErr("by_name."+name+".errors", "%d errors of %d requests", n.Errors, n.Requests)
		}
		byName += n.Requests // ≤ 10 000 × 1e15: no overflow
	}
	if len(f.ByName) > 0 && byName != f.Requests {
		return fileErr("by_name", "the requests of the rows add up to %d, not the run's %d", byName, f.Requests)
	}
	if err := checkFailures("", f.Failures, f.Errors); err != nil {
		return err
	}
	for i, t := range f.Thresholds {
		if err := checkThreshold(t.Expr); err != nil {
			return fileErr(fmt.Sprintf("thresholds[%d].expr", i), "%v", err)
		}
	}
	if f.Merged != "" {
		if _, err := DecodeHistCounts(f.Merged); err != nil {
			return fileErr("hist", "%v", err)
		}
	}
	last := math.MaxInt
	if !f.Run.StartedAt.IsZero() && !f.Run.EndedAt.IsZero() {
		last = int(math.Ceil(f.Run.EndedAt.Sub(f.Run.StartedAt).Seconds())) + ElapsedSlack
	}
	prev := 0
	var requests int64
	for i := range f.Samples {
		s := &f.Samples[i]
		path := fmt.Sprintf("samples[%d]", i)
		if err := checkBounded(path, reflect.ValueOf(&s.Sample).Elem(), &budget); err != nil {
			return err
		}
		switch {
		case s.ElapsedS <= prev:
			return fileErr(path+".elapsed_s", "%d does not follow %d", s.ElapsedS, prev)
		case s.ElapsedS > last:
			return fileErr(path+".elapsed_s", "%d is beyond the run's %d s (run.started_at to run.ended_at, + %d s)",
				s.ElapsedS, last-ElapsedSlack, ElapsedSlack)
		}
		prev = s.ElapsedS
		if err := checkCounts(path+".", s.Requests, s.Successes, s.Errors, s.StatusCodes, s.ErrorKinds); err != nil {
			return err
		}
		// a second's groups count failures since the run's start: at most the run's errors
		if err := checkFailures(path+".", s.Failures, f.Errors); err != nil {
			return err
		}
		requests += s.Requests // ≤ 86 400 × 1e15: no overflow
		if s.Hist != "" {
			if _, err := DecodeHistCounts(s.Hist); err != nil {
				return fileErr(path+".hist", "%v", err)
			}
		}
	}
	if requests != f.Requests {
		return fileErr("requests", "%d, but the seconds (samples[].requests) add up to %d", f.Requests, requests)
	}
	return nil
}

// validRunID reports whether id is a run file's run.id: 8–64 characters of 0-9, a-f and '-'.
func validRunID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && c != '-' {
			return false
		}
	}
	return true
}

// checkCounts checks the counts of the summary or of one second (prefix "" or "samples[i]."):
// successes + errors = requests, status codes keyed 100–599 or "0", at most MaxStatusCodes status
// codes and MaxSecondCodes error kinds.
func checkCounts(prefix string, requests, successes, errs int64, codes, kinds map[string]int64) error {
	if successes+errs != requests {
		return fileErr(prefix+"requests", "%d, but successes + errors = %d + %d", requests, successes, errs)
	}
	return checkCodeKeys(prefix, codes, kinds)
}

// checkCodeKeys checks status codes keyed 100–599 or "0", at most MaxStatusCodes status codes and
// MaxSecondCodes error kinds.
func checkCodeKeys(prefix string, codes, kinds map[string]int64) error {
	if len(codes) > MaxStatusCodes {
		return fileErr(prefix+"status_codes", "%d codes, at most %d", len(codes), MaxStatusCodes)
	}
	if len(kinds) > MaxSecondCodes {
		return fileErr(prefix+"error_kinds", "%d kinds, at most %d", len(kinds), MaxSecondCodes)
	}
	for k := range codes {
		if n, err := strconv.Atoi(k); k != "0" && (err != nil || len(k) != 3 || n < 100 || n > 599) {
			return fileErr(prefix+"status_codes", "key %.20q is not a status code (100–599, or 0 for codes ≥ 600)", k)
		}
	}
	return nil
}

// checkThreshold checks a threshold result's expr: a threshold expression, or "request: " and
// one (plan.Threshold.Label).
func checkThreshold(expr string) error {
	_, err := plan.ParseThreshold(expr)
	if err != nil {
		if i := strings.LastIndex(expr, ": "); i > 0 {
			if _, err2 := plan.ParseThreshold(expr[i+2:]); err2 == nil {
				return nil
			}
		}
	}
	return err
}

// fileBounds are a RunFile's bounds (Check).
var fileBounds = Bounds{Number: MaxFileNumber, Items: MaxFileItems, String: MaxFileString}

// checkBounded is fileBounds' walk of v, counting list items and map entries against *budget.
func checkBounded(path string, v reflect.Value, budget *int) error {
	return fileBounds.walkAt(path, v, budget)
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
	counts := make([]int64, CountsLen)
	var d HistDecoder
	if _, err := d.AddTo(counts, s); err != nil {
		return nil, err
	}
	return counts, nil
}

// HistDecoder decodes encoded histograms (EncodeHist's format) with DecodeHistCounts's limits,
// adding their counts into an array it is given and reusing its buffers: merging many
// generators' histograms (cluster.Merger) allocates no histogram per part. Not safe for
// concurrent use.
type HistDecoder struct {
	zin bytes.Reader
	zr  io.ReadCloser
	buf bytes.Buffer
	b64 []byte
}

// AddTo adds the counts of the histogram encoded in s to dst (len CountsLen) and returns how many
// values it holds; "" adds nothing. On an error (DecodeHistCounts's) dst may hold part of them.
func (d *HistDecoder) AddTo(dst []int64, s string) (int64, error) {
	st, err := d.decode(dst, s)
	return st.N, err
}

// HistStat is what Stat reads of an encoded histogram: how many values it holds and its lowest
// and highest non-empty slots (-1 when empty).
type HistStat struct {
	N           int64
	First, Last int
}

// Stat decodes s as AddTo does (the same checks and errors) without adding its counts anywhere:
// checking a histogram (its count, SumFits) costs no array.
func (d *HistDecoder) Stat(s string) (HistStat, error) { return d.decode(nil, s) }

// decode is AddTo (dst non-nil) and Stat (nil).
func (d *HistDecoder) decode(dst []int64, s string) (HistStat, error) {
	st := HistStat{First: -1, Last: -1}
	if s == "" {
		return st, nil
	}
	if len(s) > MaxEncodedHist {
		return st, fmt.Errorf("histogram of %d characters, at most %d", len(s), MaxEncodedHist)
	}
	if n := base64.StdEncoding.DecodedLen(len(s)); cap(d.b64) < n {
		d.b64 = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(d.b64[:cap(d.b64)], []byte(s))
	if err != nil {
		return st, fmt.Errorf("histogram is not base64: %w", err)
	}
	raw := d.b64[:n]
	if len(raw) < 8 || binary.BigEndian.Uint32(raw) != v2CompressedEncodingCookie {
		return st, errors.New("not a compressed HdrHistogram V2 histogram")
	}
	if n := binary.BigEndian.Uint32(raw[4:]); uint64(n) != uint64(len(raw)-8) {
		return st, fmt.Errorf("histogram announces %d compressed bytes, has %d", n, len(raw)-8)
	}
	d.zin.Reset(raw[8:])
	if d.zr == nil {
		d.zr, err = zlib.NewReader(&d.zin)
	} else {
		err = d.zr.(zlib.Resetter).Reset(&d.zin, nil)
	}
	if err != nil {
		return st, fmt.Errorf("histogram: %w", err)
	}
	d.buf.Reset()
	if _, err := d.buf.ReadFrom(io.LimitReader(d.zr, int64(maxRawHist)+1)); err != nil {
		return st, fmt.Errorf("histogram: %w", err)
	}
	p := d.buf.Bytes()
	switch {
	case len(p) > maxRawHist:
		return st, fmt.Errorf("histogram decompresses to more than %d bytes", maxRawHist)
	case len(p) < 40 || binary.BigEndian.Uint32(p) != v2EncodingCookie:
		return st, errors.New("histogram payload has no V2 header")
	case uint64(binary.BigEndian.Uint32(p[4:])) != uint64(len(p)-40):
		return st, errors.New("histogram payload length does not match")
	case binary.BigEndian.Uint32(p[8:]) != 0, binary.BigEndian.Uint32(p[12:]) != SigFigs,
		binary.BigEndian.Uint64(p[16:]) != LowestUs, binary.BigEndian.Uint64(p[24:]) != HighestUs,
		math.Float64frombits(binary.BigEndian.Uint64(p[32:])) != 1:
		return st, errors.New("histogram geometry is not Volley's (1 µs – 1 h, 3 significant digits)")
	}
	i := 0
	for pos := 40; pos < len(p); {
		v, n := zigZag(p[pos:])
		if n == 0 {
			return st, errors.New("histogram counts are truncated")
		}
		pos += n
		if v < 0 { // a run of -v zero slots
			if v < -int64(CountsLen-i) {
				return st, errors.New("histogram has more slots than Volley's geometry")
			}
			i += int(-v)
			continue
		}
		if i >= CountsLen || dst != nil && i >= len(dst) {
			return st, errors.New("histogram has more slots than Volley's geometry")
		}
		if v > 1<<62-st.N {
			return st, errors.New("histogram holds more than 2^62 values")
		}
		if v > 0 {
			if dst != nil {
				dst[i] += v
			}
			st.N += v
			st.Last = i
			if st.First < 0 {
				st.First = i
			}
		}
		i++
	}
	return st, nil
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
