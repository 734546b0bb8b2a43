package report

import (
	"strconv"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// WSCSVHeader are the columns the CSV export adds after CSVHeader for a run with WebSocket steps
// (a sample with a "ws" block): that second's sessions ended and failed, messages sent and
// received, and round-trip p50/p95 in ms (empty in a second without a round trip). Runs without
// WebSocket steps keep CSVHeader alone.
var WSCSVHeader = []string{"ws_sessions", "ws_sessions_failed", "ws_messages_sent", "ws_messages_received",
	"ws_round_trip_p50", "ws_round_trip_p95"}

// hasWS reports whether any sample carries a ws block.
func hasWS(samples []metrics.Sample) bool {
	for i := range samples {
		if samples[i].WS != nil {
			return true
		}
	}
	return false
}

// wsCSVRow is a sample's WebSocket columns (WSCSVHeader).
func wsCSVRow(s *metrics.Sample) []string {
	w := s.WS
	if w == nil {
		w = &metrics.WSStats{}
	}
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	p50, p95 := "", ""
	if w.RoundTrip.Max > 0 {
		p50, p95 = strconv.FormatFloat(w.RoundTrip.P50, 'f', -1, 64), strconv.FormatFloat(w.RoundTrip.P95, 'f', -1, 64)
	}
	return []string{i(w.Sessions), i(w.SessionsFailed), i(w.MessagesSent), i(w.MessagesReceived), p50, p95}
}
