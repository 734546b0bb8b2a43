package metrics

import (
	"sync/atomic"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// WebSocket figures (issue 13). A run with WebSocket steps gets one WSShard per recorder shard
// (Recorder.EnableWS): lock-free counters and two HDR histograms, read and merged once a second
// exactly like the HTTP ones (cumulative counts, differences per second). Runs without WebSocket
// steps allocate nothing for them and their samples and summary carry no "ws" block.

// WSStats is the "ws" block of a Sample (that second) and of the Summary (the whole run).
type WSStats struct {
	// Sessions is the WebSocket sessions that ended (each WebSocket step run once, counted when
	// it ends, as its request is); SessionsFailed those of them that failed (any error kind).
	Sessions       int64 `json:"sessions"`
	SessionsFailed int64 `json:"sessions_failed"`
	// MessagesSent and MessagesReceived count data messages (text or binary frames of a whole
	// message), as they happen; the rates divide them by the second's (or run's) length.
	MessagesSent         int64   `json:"messages_sent"`
	MessagesReceived     int64   `json:"messages_received"`
	MessagesSentRate     float64 `json:"messages_sent_rate"`
	MessagesReceivedRate float64 `json:"messages_received_rate"`
	// Connect is the time from a session's start to its accepted upgrade (TCP connect, TLS and
	// the HTTP handshake), of sessions whose upgrade was accepted.
	Connect Latency `json:"connect_ms"`
	// RoundTrip is the time from sending a message to receiving the first message that passes the
	// step's expect checks (message steps with both send and expect).
	RoundTrip Latency `json:"round_trip_ms"`
}

// WSShard is one shard's WebSocket counters; safe for concurrent use, no allocation, no lock.
type WSShard struct {
	sessions, failed, sent, received atomic.Uint64
	connect, rtt                     *AtomicHist
}

// EnableWS gives each shard WebSocket counters (once; a second call does nothing); call it
// before the run starts (engine.New).
func (r *Recorder) EnableWS() {
	if r.ws != nil {
		return
	}
	r.ws = make([]*WSShard, len(r.shards))
	for i := range r.ws {
		r.ws[i] = &WSShard{connect: NewAtomicHist(), rtt: NewAtomicHist()}
	}
}

// WS returns the WebSocket counters of worker i's shard (nil unless EnableWS was called).
func (r *Recorder) WS(i int) *WSShard {
	if r.ws == nil {
		return nil
	}
	return r.ws[i%len(r.ws)]
}

// Session counts one ended session; failed when it ended with an error kind.
func (s *WSShard) Session(failed bool) {
	s.sessions.Add(1)
	if failed {
		s.failed.Add(1)
	}
}

// Sent counts one message sent.
func (s *WSShard) Sent() { s.sent.Add(1) }

// Received counts one message received.
func (s *WSShard) Received() { s.received.Add(1) }

// Connected records an accepted upgrade's connect latency (µs).
func (s *WSShard) Connected(us int64) { s.connect.Record(us) }

// RoundTrip records one exchange's round-trip latency (µs).
func (s *WSShard) RoundTrip(us int64) { s.rtt.Record(us) }

// WSCounts are the WebSocket totals of a Counts (cumulative in a reading, per interval in a
// delta). On is false (and the histograms nil) for a run without WebSocket steps.
type WSCounts struct {
	On                               bool
	Sessions, Failed, Sent, Received int64
	Connect, RTT                     []int64 // histogram counts
	ConnectSum, RTTSum               uint64  // exact µs sums
}

// readWS adds the shards' WebSocket totals into dst (Recorder.Read).
func (r *Recorder) readWS(dst *WSCounts) {
	if r.ws == nil {
		return
	}
	dst.grow()
	for _, s := range r.ws {
		dst.Sessions += int64(s.sessions.Load())
		dst.Failed += int64(s.failed.Load())
		dst.Sent += int64(s.sent.Load())
		dst.Received += int64(s.received.Load())
		dst.ConnectSum += s.connect.AddTo(dst.Connect)
		dst.RTTSum += s.rtt.AddTo(dst.RTT)
	}
}

// reset zeroes w, keeping its histogram arrays.
func (w *WSCounts) reset() {
	c, t := w.Connect, w.RTT
	clear(c)
	clear(t)
	*w = WSCounts{Connect: c, RTT: t}
}

func (w *WSCounts) grow() {
	w.On = true
	if w.Connect == nil {
		w.Connect, w.RTT = make([]int64, CountsLen), make([]int64, CountsLen)
	}
}

// sub sets w = cur − prev.
func (w *WSCounts) sub(cur, prev *WSCounts) {
	if !cur.On {
		return
	}
	w.grow()
	w.Sessions, w.Failed = cur.Sessions-prev.Sessions, cur.Failed-prev.Failed
	w.Sent, w.Received = cur.Sent-prev.Sent, cur.Received-prev.Received
	for i := range w.Connect {
		w.Connect[i] = cur.Connect[i] - at(prev.Connect, i)
		w.RTT[i] = cur.RTT[i] - at(prev.RTT, i)
	}
	w.ConnectSum, w.RTTSum = cur.ConnectSum-prev.ConnectSum, cur.RTTSum-prev.RTTSum
}

func at(counts []int64, i int) int64 {
	if counts == nil {
		return 0
	}
	return counts[i]
}

// Stats is the "ws" block of these counts over span seconds (nil when the run has no
// WebSocket steps). The latencies come from the merged histograms, filled into h1 and h2
// (reused by the caller, Volley's geometry: NewHist) as the HTTP latencies are (FillHist,
// LatencyOf).
func (w *WSCounts) Stats(span float64, h1, h2 *hdr.Histogram) *WSStats {
	if !w.On {
		return nil
	}
	FillHist(h1, w.Connect)
	FillHist(h2, w.RTT)
	s := &WSStats{Sessions: w.Sessions, SessionsFailed: w.Failed, MessagesSent: w.Sent, MessagesReceived: w.Received,
		Connect: LatencyOf(h1, w.ConnectSum), RoundTrip: LatencyOf(h2, w.RTTSum)}
	if span > 0 {
		s.MessagesSentRate = round1(float64(w.Sent) / span)
		s.MessagesReceivedRate = round1(float64(w.Received) / span)
	}
	return s
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
