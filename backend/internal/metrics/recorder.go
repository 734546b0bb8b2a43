package metrics

import (
	"strconv"
	"sync/atomic"
)

// ErrorKind classifies why a request failed. Every request that reaches an outcome is either a
// success or exactly one kind.
type ErrorKind uint8

// Error kinds (the error_kinds keys of docs/api.md). KindNone means success.
const (
	KindNone ErrorKind = iota
	ConnectRefused
	ConnectTimeout
	Timeout
	Reset
	TLS
	Read
	Write
	Status4xx
	Status5xx
	CheckFailed
	RedirectLoop
	Other
	// TooManyOpenFiles: the load generator ran out of file descriptors (its own limit, not the
	// target's fault); raise `ulimit -n` or lower the VUs.
	TooManyOpenFiles
	// BlockedTarget: the server's target policy refused the connection before it was made
	// (netpolicy: a denied address or host name, e.g. cloud metadata or link-local).
	BlockedTarget
	// HeaderTooLarge: the response header (status line, fields, or a chunked body's trailer) did
	// not fit http.max_header (default 64 KiB; engine/header.go).
	HeaderTooLarge
	// BodyTooLarge: a body a check or extraction needs was larger than the plan's http.max_body.
	BodyTooLarge
	// MalformedResponse: the answer is not HTTP/1.x the engine can parse: no status line (HTTP/0.9
	// or other bytes), a bad status line or header line, conflicting or invalid Content-Length, a
	// bad chunk size or chunk framing.
	MalformedResponse
	// DecodeError: a compressed body (Content-Encoding gzip, deflate, br, zstd) a check or an
	// extraction needed could not be decoded: corrupt, truncated, or an encoding not asked for.
	DecodeError
	// H2Error: the HTTP/2 peer refused or reset the stream or the connection (RST_STREAM, GOAWAY,
	// a protocol or flow-control error), or ALPN did not agree on h2 when the plan asked for it.
	H2Error
	// WSHandshake: a WebSocket upgrade was not accepted (no 101 Switching Protocols, a bad
	// Sec-WebSocket-Accept, or a subprotocol the plan did not offer).
	WSHandshake
	// WSClosed: the WebSocket connection was closed or dropped by the peer before the session's
	// steps were done.
	WSClosed
	numKinds
)

var kindNames = [numKinds]string{"", "connect_refused", "connect_timeout", "timeout", "reset", "tls",
	"read", "write", "status_4xx", "status_5xx", "check_failed", "redirect_loop", "other", "too_many_open_files",
	"blocked_target", "header_too_large", "body_too_large", "malformed_response",
	"decode_error", "h2_error", "ws_handshake", "ws_closed"}

// String returns the kind's stable JSON name ("" for success).
func (k ErrorKind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "other"
}

// maxStatus bounds the status codes counted individually; others are counted as 0 ("other").
const maxStatus = 600

// Outcome is one finished request as the engine reports it.
type Outcome struct {
	Status    int       // HTTP status, 0 when no response arrived
	Kind      ErrorKind // KindNone on success
	LatencyUs int64     // from the intended start to the last byte; recorded only with a response
	ServiceUs int64     // from the actual send to the last byte
	BodyBytes int64     // response body bytes
	// BodyBytesDecoded is the decoded size of a compressed body that a check or extraction read
	// (engine/decode.go); 0 when the body was not decoded.
	BodyBytesDecoded int64
}

// Shard is one lock-free block of counters. The engine gives each VU one shard (VU i → shard
// i mod n), so concurrent writers spread over cache lines instead of one shared counter.
// All methods are safe for concurrent use and do not allocate.
type Shard struct {
	// There is no request counter: requests = successes + Σ kinds, each counter monotonic, so a
	// reading taken between two increments of one request can never make a delta negative.
	successes   atomic.Uint64
	interrupted atomic.Uint64
	bytesIn     atomic.Uint64
	bodyIn      atomic.Uint64
	bytesOut    atomic.Uint64
	status      [maxStatus]uint64
	kinds       [numKinds]uint64
	lat         *AtomicHist   // every request with a complete response
	latOK       *AtomicHist   // successful requests only
	svc         *AtomicHist   // service time (actual send → last byte)
	lag         *AtomicHist   // schedule lag: actual start − scheduled start (open models)
	phases      *PhaseHists   // request phases, for plans with one request name (Phases)
	h2          atomic.Uint64 // responses that came over HTTP/2 (H2Response)
	bodyDecoded atomic.Uint64 // decoded size of decoded bodies (BodyDecoded)
	// open models: iterations by due second (StartedDue, DroppedDue), and those whose second's
	// slot was not (or no longer) theirs when they were counted (TakeDue)
	due  [DueSlots]dueSlot
	late dueSlot
	_    [64]byte // keep neighbouring shards off this one's cache lines
}

func newShard() *Shard {
	s := &Shard{lat: NewAtomicHist(), latOK: NewAtomicHist(), svc: NewAtomicHist(), lag: NewAtomicHist(),
		phases: NewPhaseHists()}
	for sec := int64(1); sec <= DueSlots; sec++ {
		s.due[sec%DueSlots].sec.Store(sec)
	}
	return s
}

// DueSlots is how many seconds a shard counts at once by due time: slot sec mod DueSlots holds
// second sec until the collector takes it (TakeDue, moments after the second is over), and then
// second sec + DueSlots.
const DueSlots = 8

// dueSlot counts an open model's iterations of one second by their due time.
type dueSlot struct {
	sec              atomic.Int64 // the second (1 = the first) counted here now
	started, dropped atomic.Int64
}

// StartedDue counts an open-model iteration that started, in the second sec its due time falls
// in: second k (1 = the first) holds the iterations due in [(k−1)·interval, k·interval) after the
// run's start, interval being the collector's (engine.Options.Interval, 1 s by default).
func (s *Shard) StartedDue(sec int64) { s.slot(sec).started.Add(1) }

// DroppedDue counts an open-model iteration that was dropped, in its due second (StartedDue).
func (s *Shard) DroppedDue(sec int64) { s.slot(sec).dropped.Add(1) }

// slot is the counters of second sec: its slot, or the late counts when the slot still holds an
// earlier second or already a later one (TakeDue).
func (s *Shard) slot(sec int64) *dueSlot {
	if d := &s.due[uint64(sec)%DueSlots]; d.sec.Load() == sec { // any sec: one out of range is late
		return d
	}
	return &s.late
}

// DroppedDueN counts n dropped iterations due in second sec at once (n ≤ 0 counts none).
func (r *Recorder) DroppedDueN(sec, n int64) {
	if n > 0 {
		r.shards[0].slot(sec).dropped.Add(n)
	}
}

// TakeDue returns the started and dropped iterations counted for the seconds from … to
// (inclusive, from ≥ 1) plus the late counts, and gives each of those seconds' slots to the
// second DueSlots later. Every count is taken exactly once: one that races with the take lands
// in the slot's next second, and one whose slot was not its second's in the late counts, which
// the next take returns.
func (r *Recorder) TakeDue(from, to int64) (started, dropped int64) {
	for _, s := range r.shards {
		for sec := from; sec <= to; sec++ {
			d := &s.due[uint64(sec)%DueSlots]
			if d.sec.Load() != sec {
				continue
			}
			started += d.started.Swap(0)
			dropped += d.dropped.Swap(0)
			d.sec.Store(sec + DueSlots)
		}
		started += s.late.started.Swap(0)
		dropped += s.late.dropped.Swap(0)
	}
	return started, dropped
}

// Phases returns the shard's phase histograms. The engine records a request's phases once: in
// its name's NameBlock when the plan has several names, else here.
func (s *Shard) Phases() *PhaseHists { return s.phases }

// ReadPhases fills dst with the shards' cumulative phase counts.
func (r *Recorder) ReadPhases(dst *PhaseCounts) {
	*dst = PhaseCounts{}
	for _, s := range r.shards {
		s.phases.AddTo(dst)
	}
}

// Record counts one finished request: a success, or one error kind.
func (s *Shard) Record(o Outcome) {
	if o.Status > 0 {
		st := o.Status
		if st >= maxStatus {
			st = 0
		}
		atomic.AddUint64(&s.status[st], 1)
		s.lat.Record(o.LatencyUs)
		s.svc.Record(o.ServiceUs)
		s.bodyIn.Add(uint64(o.BodyBytes))
		if o.BodyBytesDecoded > 0 {
			s.bodyDecoded.Add(uint64(o.BodyBytesDecoded))
		}
	}
	if o.Kind == KindNone {
		s.successes.Add(1)
		s.latOK.Record(o.LatencyUs)
		return
	}
	atomic.AddUint64(&s.kinds[o.Kind], 1)
}

// Lag records how late (µs) an iteration started against its schedule (open models).
func (s *Shard) Lag(us int64) { s.lag.Record(us) }

// Interrupted counts a request cut off by the end of the run (not a target error).
func (s *Shard) Interrupted() { s.interrupted.Add(1) }

// BytesIn adds bytes read from the network (headers and body).
func (s *Shard) BytesIn(n int) { s.bytesIn.Add(uint64(n)) }

// BytesOut adds bytes written to the network.
func (s *Shard) BytesOut(n int) { s.bytesOut.Add(uint64(n)) }

// Recorder is the set of shards of one run plus run-wide gauges.
type Recorder struct {
	shards    []*Shard
	dropped   atomic.Uint64
	activeVUs atomic.Int64
	openConns atomic.Int64
	ws        []*WSShard // WebSocket counters per shard; nil without WebSocket steps (ws.go)
}

// NewRecorder makes a recorder with n shards (n ≥ 1).
func NewRecorder(n int) *Recorder {
	if n < 1 {
		n = 1
	}
	r := &Recorder{shards: make([]*Shard, n)}
	for i := range r.shards {
		r.shards[i] = newShard()
	}
	return r
}

// Shard returns the shard for worker i.
func (r *Recorder) Shard(i int) *Shard { return r.shards[i%len(r.shards)] }

// Dropped counts an iteration that could not start (open model, no free VU).
func (r *Recorder) Dropped() { r.dropped.Add(1) }

// DroppedN counts n such iterations at once (n ≤ 0 counts none).
func (r *Recorder) DroppedN(n int64) {
	if n > 0 {
		r.dropped.Add(uint64(n))
	}
}

// VUStarted and VUStopped track active VUs.
func (r *Recorder) VUStarted() { r.activeVUs.Add(1) }

// VUStopped marks a VU as finished.
func (r *Recorder) VUStopped() { r.activeVUs.Add(-1) }

// ActiveVUs is the number of VUs running now.
func (r *Recorder) ActiveVUs() int64 { return r.activeVUs.Load() }

// ConnOpened and ConnClosed track open connections to the target.
func (r *Recorder) ConnOpened() { r.openConns.Add(1) }

// ConnClosed marks a connection as closed.
func (r *Recorder) ConnClosed() { r.openConns.Add(-1) }

// OpenConns is the number of connections open now.
func (r *Recorder) OpenConns() int64 { return r.openConns.Load() }

// Counts are plain totals (cumulative in a Reading, per interval in a Delta).
type Counts struct {
	Requests, Successes, Interrupted, Dropped int64
	BytesIn, BodyBytesIn, BytesOut            int64
	Status                                    [maxStatus]int64
	Kinds                                     [numKinds]int64
	Lat, LatOK, Svc, Lag                      []int64 // histogram counts
	LatSum, LatOKSum, SvcSum, LagSum          uint64  // exact µs sums
	H2                                        int64   // responses over HTTP/2 (ProtocolMap)
	BodyBytesDecoded                          int64   // decoded size of the bodies that were decoded
	// WS is the WebSocket totals (ws.go).
	WS WSCounts
}

func newCounts() *Counts {
	return &Counts{Lat: make([]int64, CountsLen), LatOK: make([]int64, CountsLen), Svc: make([]int64, CountsLen), Lag: make([]int64, CountsLen)}
}

// NewCounts returns zeroed counts with histogram arrays allocated.
func NewCounts() *Counts { return newCounts() }

// Read fills dst with the cumulative totals of all shards. Values recorded while Read runs land in
// this reading or the next one, never both and never neither.
func (r *Recorder) Read(dst *Counts) {
	lat, latOK, svc, lag := dst.Lat, dst.LatOK, dst.Svc, dst.Lag
	clear(lat)
	clear(latOK)
	clear(svc)
	clear(lag)
	ws := dst.WS
	ws.reset()
	*dst = Counts{Lat: lat, LatOK: latOK, Svc: svc, Lag: lag, WS: ws}
	r.readWS(&dst.WS)
	for _, s := range r.shards {
		dst.Successes += int64(s.successes.Load())
		dst.Interrupted += int64(s.interrupted.Load())
		dst.BytesIn += int64(s.bytesIn.Load())
		dst.BodyBytesIn += int64(s.bodyIn.Load())
		dst.BytesOut += int64(s.bytesOut.Load())
		dst.BodyBytesDecoded += int64(s.bodyDecoded.Load())
		for i := range s.status {
			dst.Status[i] += int64(atomic.LoadUint64(&s.status[i]))
		}
		for i := range s.kinds {
			dst.Kinds[i] += int64(atomic.LoadUint64(&s.kinds[i]))
		}
		dst.LatSum += s.lat.AddTo(lat)
		dst.LatOKSum += s.latOK.AddTo(latOK)
		dst.SvcSum += s.svc.AddTo(svc)
		dst.LagSum += s.lag.AddTo(lag)
		dst.H2 += int64(s.h2.Load())
	}
	dst.Dropped = int64(r.dropped.Load())
	dst.Requests = dst.Successes
	for _, n := range dst.Kinds {
		dst.Requests += n
	}
}

// Sub sets d = cur − prev, field by field (d may alias neither).
func (d *Counts) Sub(cur, prev *Counts) {
	d.Requests = cur.Requests - prev.Requests
	d.Successes = cur.Successes - prev.Successes
	d.Interrupted = cur.Interrupted - prev.Interrupted
	d.Dropped = cur.Dropped - prev.Dropped
	d.BytesIn = cur.BytesIn - prev.BytesIn
	d.BodyBytesIn = cur.BodyBytesIn - prev.BodyBytesIn
	d.BytesOut = cur.BytesOut - prev.BytesOut
	d.BodyBytesDecoded = cur.BodyBytesDecoded - prev.BodyBytesDecoded
	for i := range d.Status {
		d.Status[i] = cur.Status[i] - prev.Status[i]
	}
	for i := range d.Kinds {
		d.Kinds[i] = cur.Kinds[i] - prev.Kinds[i]
	}
	for i := range d.Lat {
		d.Lat[i] = cur.Lat[i] - prev.Lat[i]
		d.LatOK[i] = cur.LatOK[i] - prev.LatOK[i]
		d.Svc[i] = cur.Svc[i] - prev.Svc[i]
		d.Lag[i] = cur.Lag[i] - prev.Lag[i]
	}
	d.LatSum = cur.LatSum - prev.LatSum
	d.LatOKSum = cur.LatOKSum - prev.LatOKSum
	d.SvcSum = cur.SvcSum - prev.SvcSum
	d.LagSum = cur.LagSum - prev.LagSum
	d.H2 = cur.H2 - prev.H2
	d.WS.sub(&cur.WS, &prev.WS)
}

// Errors is the number of failed requests.
func (c *Counts) Errors() int64 { return c.Requests - c.Successes }

// StatusMap returns the non-zero status counts keyed by code ("0" collects codes ≥ 600).
func (c *Counts) StatusMap() map[string]int64 {
	m := map[string]int64{}
	for code, n := range c.Status {
		if n != 0 {
			m[strconv.Itoa(code)] = n
		}
	}
	return m
}

// KindMap returns the non-zero error-kind counts keyed by kind name.
func (c *Counts) KindMap() map[string]int64 {
	m := map[string]int64{}
	for k := ErrorKind(1); k < numKinds; k++ {
		if n := c.Kinds[k]; n != 0 {
			m[k.String()] = n
		}
	}
	return m
}
