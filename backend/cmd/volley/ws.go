package main

import (
	"fmt"
	"io"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// printWS adds the WebSocket lines to the summary table, for runs with WebSocket steps.
func printWS(tw io.Writer, s *metrics.Summary) {
	w := s.WS
	if w == nil {
		return
	}
	fmt.Fprintf(tw, "websocket\t%d sessions\t(%d failed)\tsent %d (%.1f/s)\treceived %d (%.1f/s)\n",
		w.Sessions, w.SessionsFailed, w.MessagesSent, w.MessagesSentRate, w.MessagesReceived, w.MessagesReceivedRate)
	for _, l := range []struct {
		name string
		l    metrics.Latency
	}{{"ws connect ms", w.Connect}, {"ws round trip ms", w.RoundTrip}} {
		if l.l.Max > 0 {
			fmt.Fprintf(tw, "%s\tp50 %.3f\tp95 %.3f\tp99 %.3f\tmax %.3f\n", l.name, l.l.P50, l.l.P95, l.l.P99, l.l.Max)
		}
	}
}
