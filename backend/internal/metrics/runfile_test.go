package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// encodeRaw builds an encoded histogram around an uncompressed V2 payload (header fields given).
func encodeRaw(sigfigs uint32, lowest, highest uint64, body []byte, announced int) string {
	raw := make([]byte, 40, 40+len(body))
	binary.BigEndian.PutUint32(raw[0:], v2EncodingCookie)
	binary.BigEndian.PutUint32(raw[4:], uint32(announced))
	binary.BigEndian.PutUint32(raw[12:], sigfigs)
	binary.BigEndian.PutUint64(raw[16:], lowest)
	binary.BigEndian.PutUint64(raw[24:], highest)
	binary.BigEndian.PutUint64(raw[32:], math.Float64bits(1))
	raw = append(raw, body...)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	out := make([]byte, 8, 8+z.Len())
	binary.BigEndian.PutUint32(out[0:], v2CompressedEncodingCookie)
	binary.BigEndian.PutUint32(out[4:], uint32(z.Len()))
	return base64.StdEncoding.EncodeToString(append(out, z.Bytes()...))
}

func TestDecodeHistCountsRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var e HistEncoder
	cases := [][]int64{make([]int64, CountsLen)}
	big := make([]int64, CountsLen)
	big[countsIndex(HighestUs)] = 1 << 62
	cases = append(cases, big)
	for range 30 {
		cases = append(cases, randomCounts(r, 1+r.IntN(3000)))
	}
	for i, counts := range cases {
		got, err := DecodeHistCounts(e.Encode(counts))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for k := range counts {
			if got[k] != counts[k] {
				t.Fatalf("case %d: slot %d = %d, want %d", i, k, got[k], counts[k])
			}
		}
	}
	// the library's own encoding of a histogram in Volley's geometry decodes too
	h := NewHist()
	_ = h.RecordValue(1234)
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeHistCounts(string(b)); err != nil || got[countsIndex(1234)] != 1 {
		t.Fatalf("library encoding: %v", err)
	}
}

func TestDecodeHistCountsRefusesWhatItCannotBound(t *testing.T) {
	var zeros [1 << 16]byte
	bomb := encodeRaw(SigFigs, LowestUs, HighestUs, bytes.Repeat(zeros[:], 64), 1<<22) // 4 MiB of zero counts
	other := hdr.New(1, 1<<40, 5)
	_ = other.RecordValue(7)
	otherEnc, _ := other.Encode(hdr.V2CompressedEncodingCookieBase)
	var vb [9]byte
	tooMany := bytes.Repeat(vb[:putZigZag(vb[:], 1)], CountsLen+1)
	overflow := append(vb[:putZigZag(vb[:], 1<<62)], vb[:putZigZag(vb[:], 1<<62)]...)
	overflow = append([]byte{}, overflow...)
	n := putZigZag(vb[:], -int64(CountsLen)-5)
	longRun := append([]byte{}, vb[:n]...)
	var enc HistEncoder
	good := enc.Encode(make([]int64, CountsLen))
	for name, c := range map[string]struct{ in, want string }{
		"not base64":     {"@@@", "not base64"},
		"too long":       {strings.Repeat("A", MaxEncodedHist+4), "at most"},
		"not V2":         {base64.StdEncoding.EncodeToString([]byte("hello world")), "not a compressed"},
		"bad length":     {good[:len(good)-4], "announces"},
		"zlib bomb":      {bomb, "decompresses to more than"},
		"other geometry": {string(otherEnc), "geometry is not Volley's"},
		"too many slots": {encodeRaw(SigFigs, LowestUs, HighestUs, tooMany, len(tooMany)), "more slots"},
		"zero run":       {encodeRaw(SigFigs, LowestUs, HighestUs, longRun, len(longRun)), "more slots"},
		"overflow":       {encodeRaw(SigFigs, LowestUs, HighestUs, overflow, len(overflow)), "2^62"},
		"truncated":      {encodeRaw(SigFigs, LowestUs, HighestUs, []byte{0x80}, 1), "truncated"},
		"payload length": {encodeRaw(SigFigs, LowestUs, HighestUs, []byte{2}, 7), "length does not match"},
	} {
		if _, err := DecodeHistCounts(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestRunFileCheck(t *testing.T) {
	var enc HistEncoder
	counts := make([]int64, CountsLen)
	counts[countsIndex(900)] = 3
	h := enc.Encode(counts)
	valid := func() *RunFile {
		return &RunFile{Version: RunFileVersion, Summary: Summary{Requests: 3, Successes: 3, RPS: 1.5, StatusCodes: map[string]int64{"200": 2, "0": 1},
			Thresholds: []ThresholdResult{{Expr: "p(95)<200ms"}, {Expr: "log in: error_rate<1%"}}},
			Run:    RunFileRun{Status: "finished", StartedAt: time.Unix(1e9, 0), EndedAt: time.Unix(1e9+2, 0)},
			Plan:   json.RawMessage(`{"name":"x"}`),
			Merged: h,
			Samples: []FileSample{{Sample: Sample{ElapsedS: 1, Requests: 1, Successes: 1}, Hist: h},
				{Sample: Sample{ElapsedS: 2, Requests: 2, Successes: 2}}}}
	}
	if err := valid().Check(); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	// a file as encoded and decoded again is the same file
	b, _ := json.Marshal(valid())
	var back RunFile
	if err := json.Unmarshal(b, &back); err != nil || back.Check() != nil || back.Samples[0].Hist != h || back.Merged != h || back.RPS != 1.5 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
	// the last second may end up to ElapsedSlack after the run's length; seconds may be missing
	// only where they had no request
	edge := valid()
	edge.Samples[1].ElapsedS = 2 + ElapsedSlack
	if err := edge.Check(); err != nil {
		t.Errorf("a last second within the slack: %v", err)
	}
	var fe *FileError
	if err := (&RunFile{Version: RunFileVersion, Summary: Summary{Requests: -1}}).Check(); !errors.As(err, &fe) || fe.Field != "requests" {
		t.Errorf("the error names no field: %#v", err)
	}
	for name, c := range map[string]struct {
		edit func(*RunFile)
		want string
	}{
		"bare summary":     {func(f *RunFile) { f.Version = 0 }, "bare summary"},
		"newer":            {func(f *RunFile) { f.Version = 9 }, "newer"},
		"negative count":   {func(f *RunFile) { f.Requests = -1 }, "requests: -1 is out of range"},
		"huge float":       {func(f *RunFile) { f.Samples[1].RPS = 1e300 }, "samples[1].rps"},
		"long string":      {func(f *RunFile) { f.ErrorKinds = map[string]int64{strings.Repeat("k", 5000): 1} }, "a key of 5000 bytes"},
		"many entries":     {func(f *RunFile) { f.Thresholds = make([]ThresholdResult, MaxFileItems+1) }, "thresholds: 10001 items"},
		"nested":           {func(f *RunFile) { f.Samples[0].StatusCodes = map[string]int64{"200": -4} }, "samples[0].status_codes.200"},
		"order":            {func(f *RunFile) { f.Samples[1].ElapsedS = 1 }, "does not follow"},
		"too many seconds": {func(f *RunFile) { f.Samples = make([]FileSample, MaxFileSeconds+1) }, "at most 86400"},
		"bad hist":         {func(f *RunFile) { f.Samples[0].Hist = "AAAA" }, "samples[0].hist"},
		"bad merged":       {func(f *RunFile) { f.Merged = "AAAA" }, "hist:"},
		"big plan":         {func(f *RunFile) { f.Plan = make([]byte, MaxFilePlan+1) }, "plan:"},
		"long status":      {func(f *RunFile) { f.Run.Status = strings.Repeat("s", MaxFileString+1) }, "run.status"},
		"negative rate":    {func(f *RunFile) { f.Samples[1].RPS = -1 }, "samples[1].rps: -1 is out of range"},
		"negative latency": {func(f *RunFile) { f.Latency.P95 = -0.5 }, "latency_ms.p95"},
		"sum of seconds":   {func(f *RunFile) { f.Requests, f.Successes = 4, 4 }, "requests: 4, but the seconds (samples[].requests) add up to 3"},
		"outcomes":         {func(f *RunFile) { f.Samples[1].Errors = 1 }, "samples[1].requests: 2, but successes + errors = 2 + 1"},
		"summary outcomes": {func(f *RunFile) { f.Errors = 2 }, "requests: 3, but successes + errors = 3 + 2"},
		"name outcomes":    {func(f *RunFile) { f.ByName = map[string]NameStats{"a": {Requests: 1, Errors: 2}} }, "by_name.a.errors"},
		"beyond the run":   {func(f *RunFile) { f.Samples[1].ElapsedS = 5 }, "samples[1].elapsed_s: 5 is beyond the run's 2 s"},
		"status key":       {func(f *RunFile) { f.StatusCodes = map[string]int64{"abc": 3} }, `status_codes: key "abc" is not a status code`},
		"status 600":       {func(f *RunFile) { f.Samples[0].StatusCodes = map[string]int64{"600": 1} }, `samples[0].status_codes: key "600"`},
		"status 099":       {func(f *RunFile) { f.Samples[0].StatusCodes = map[string]int64{"099": 1} }, `key "099"`},
		"threshold expr":   {func(f *RunFile) { f.Thresholds[1].Expr = "log in: fast" }, "thresholds[1].expr"},
		"run id":           {func(f *RunFile) { f.Run.ID = "NOT-A-UUID" }, "run.id"},
		"name phase": {func(f *RunFile) {
			f.ByName = map[string]NameStats{"a": {Requests: 1, Timing: Timing{Wait: Latency{P95: -1}}}}
		}, "by_name.a.timing.wait_ms.p95: -1 is out of range"},
		"name checks":  {func(f *RunFile) { f.ByName = map[string]NameStats{"a": {ChecksFailed: -2}} }, "by_name.a.checks_failed"},
		"run phase":    {func(f *RunFile) { f.Timing.Connect.Max = 2e15 }, "timing.connect_ms.max"},
		"second phase": {func(f *RunFile) { f.Samples[0].ByName = map[string]NameSample{"a": {P99: -3}} }, "samples[0].by_name.a.p99_ms"},
		"codes a second": {func(f *RunFile) {
			f.Samples[0].StatusCodes = map[string]int64{}
			for c := range 502 { // as many valid codes as there are, and one more
				f.Samples[0].StatusCodes[strconv.Itoa(c+98)] = 1
			}
		}, "samples[0].status_codes: 502 codes, at most 501"},
		"kinds a second": {func(f *RunFile) {
			f.Samples[1].ErrorKinds = map[string]int64{}
			for c := range 65 {
				f.Samples[1].ErrorKinds[strconv.Itoa(c)] = 1
			}
		}, "samples[1].error_kinds: 65 kinds, at most 64"},
		// each second within its bound, the file over its budget: 3200 seconds × 63 codes
		"whole-file budget": {func(f *RunFile) {
			codes := map[string]int64{}
			for c := 100; c < 163; c++ {
				codes[strconv.Itoa(c)] = 0
			}
			f.Run.EndedAt = f.Run.StartedAt.Add(4000 * time.Second)
			f.Samples = make([]FileSample, 3200)
			for i := range f.Samples {
				f.Samples[i].ElapsedS, f.Samples[i].StatusCodes = i+1, codes
			}
		}, "more than 200000 map entries and list items in all"},
	} {
		f := valid()
		c.edit(f)
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
