package engine

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/volley-load/volley/backend/internal/target"
	"github.com/volley-load/volley/examples"
)

// README's WebSocket example is the request of examples/ws-echo.json, and that plan runs against
// the demo target's echo: every session succeeds (status 101) and every message is counted both
// ways.
func TestWSReadmeExampleAgainstDemoTarget(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "**WebSocket.**")
	if i < 0 {
		t.Fatal("README has no WebSocket paragraph")
	}
	s = s[i:]
	s = s[strings.Index(s, "```json\n")+len("```json\n"):]
	var inReadme, inExample any
	if err := json.Unmarshal([]byte(s[:strings.Index(s, "```")]), &inReadme); err != nil {
		t.Fatalf("README's WebSocket example: %v", err)
	}
	var ex struct{ Requests []any }
	if err := json.Unmarshal(examples.WSEcho, &ex); err != nil || len(ex.Requests) != 1 {
		t.Fatalf("examples/ws-echo.json: %v, %d requests", err, len(ex.Requests))
	}
	inExample = ex.Requests[0]
	if !reflect.DeepEqual(inReadme, inExample) {
		t.Fatalf("README's example %v differs from examples/ws-echo.json's request %v", inReadme, inExample)
	}

	ln, err := target.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- target.ServeListener(ctx, ln) }()
	defer func() { cancel(); <-done }()
	js := strings.ReplaceAll(string(examples.WSEcho), "127.0.0.1:8090", ln.Addr().String())
	if js == string(examples.WSEcho) {
		t.Fatal("examples/ws-echo.json does not name the demo target's address 127.0.0.1:8090")
	}
	sum, _, _ := runWS(t, js, nil)
	const sessions = 10 * 3 // the plan's vus × iterations
	if sum.Requests != sessions || sum.Successes != sessions || sum.StatusCodes["101"] != sessions {
		t.Fatalf("requests %d successes %d status %v kinds %v; want %d sessions of status 101", sum.Requests, sum.Successes, sum.StatusCodes, sum.ErrorKinds, sessions)
	}
	w := sum.WS
	if w == nil || w.Sessions != sessions || w.SessionsFailed != 0 || w.MessagesSent != sessions || w.MessagesReceived != sessions {
		t.Fatalf("ws block %+v; want %d sessions, none failed, %d messages each way", w, sessions, sessions)
	}
	for _, ck := range sum.Checks {
		if ck.Passes != sessions || ck.Fails != 0 {
			t.Errorf("check %q: %d passes, %d fails; want %d passes", ck.Check, ck.Passes, ck.Fails, sessions)
		}
	}
}
