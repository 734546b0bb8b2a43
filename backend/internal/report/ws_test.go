package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/metrics"
)

// A run with WebSocket steps adds the ws columns to the CSV (a round trip left empty in a second
// without one) and a WebSocket section to the HTML report, in both languages; a run without them
// has neither.
func TestWSExports(t *testing.T) {
	r := fixture(2)
	r.Samples[0].WS = &metrics.WSStats{Sessions: 4, SessionsFailed: 1, MessagesSent: 40, MessagesReceived: 39,
		RoundTrip: metrics.Latency{P50: 1.5, P95: 2.25, Max: 3}}
	r.Samples[1].WS = &metrics.WSStats{}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, r.Samples); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	n := len(CSVHeader)
	if got := strings.Join(rows[0][n:], ","); got != strings.Join(WSCSVHeader, ",") {
		t.Fatalf("header %v", rows[0])
	}
	if got := strings.Join(rows[1][n:], ","); got != "4,1,40,39,1.5,2.25" {
		t.Errorf("row 1: %s", got)
	}
	if got := strings.Join(rows[2][n:], ","); got != "0,0,0,0,," {
		t.Errorf("row 2: %s", got)
	}

	r.Summary.WS = &metrics.WSStats{Sessions: 4, SessionsFailed: 1, MessagesSent: 40, MessagesReceived: 39,
		MessagesSentRate: 20, RoundTrip: metrics.Latency{P50: 1.5, P95: 2.25, Max: 3}}
	for lang, want := range map[string]string{"en": "messages received", "zh-CN": "接收消息"} {
		r.Lang = lang
		page := render(t, r)
		if !strings.Contains(page, want) || !strings.Contains(page, "<h3>WebSocket</h3>") {
			t.Errorf("%s: the report has no WebSocket section", lang)
		}
	}
	plain := fixture(2)
	buf.Reset()
	if err := WriteCSV(&buf, plain.Samples); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "ws_") || strings.Contains(render(t, plain), "<h3>WebSocket</h3>") {
		t.Error("a run without WebSocket steps shows WebSocket figures")
	}
}
