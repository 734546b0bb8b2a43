package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// The summary table shows the WebSocket lines only for a run with WebSocket steps.
func TestSummaryTableWS(t *testing.T) {
	p := &plan.Plan{Name: "chat"}
	s := &metrics.Summary{Requests: 4, Successes: 4, WS: &metrics.WSStats{Sessions: 4, MessagesSent: 40, MessagesReceived: 40,
		MessagesSentRate: 20, MessagesReceivedRate: 20, RoundTrip: metrics.Latency{P50: 1.5, P95: 2, P99: 2, Max: 3}}}
	var b bytes.Buffer
	printSummary(&b, p, s)
	out := b.String()
	if !strings.Contains(out, "websocket") || !strings.Contains(out, "sent 40 (20.0/s)") || !strings.Contains(out, "ws round trip ms") {
		t.Errorf("no WebSocket lines:\n%s", out)
	}
	if strings.Contains(out, "ws connect ms") {
		t.Errorf("a connect line without connect latencies:\n%s", out)
	}
	s.WS = nil
	b.Reset()
	printSummary(&b, p, s)
	if strings.Contains(b.String(), "websocket") {
		t.Errorf("WebSocket lines for an HTTP run:\n%s", b.String())
	}
}
