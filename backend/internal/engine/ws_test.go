package engine

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/netpolicy"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// wsServer is a loopback WebSocket server written for the tests: it counts the sessions it
// accepted, the data messages it received and sent, and the close frames it got.
type wsServer struct {
	*testutil.Target
	url                            string // ws://127.0.0.1:port/
	sessions, received, sent, shut atomic.Int64
	bad                            atomic.Int64
}

// newWSServer starts a server whose session is handle (after the upgrade); up may change the
// upgrader. A handshake request that fails one of checks counts in bad.
func newWSServer(t testing.TB, up websocket.Upgrader, handle func(s *wsServer, c *websocket.Conn), checks ...func(*http.Request) bool) *wsServer {
	s := &wsServer{}
	s.Target = testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		for _, ok := range checks {
			if !ok(r) {
				s.bad.Add(1)
			}
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		s.sessions.Add(1)
		c.SetCloseHandler(func(code int, text string) error {
			if code == websocket.CloseNormalClosure {
				s.shut.Add(1)
			}
			return c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
		})
		handle(s, c)
	})
	s.url = "ws" + strings.TrimPrefix(s.Target.URL, "http") + "/"
	return s
}

// echo answers every message with the same text until the client closes.
func echo(s *wsServer, c *websocket.Conn) {
	for {
		mt, b, err := c.ReadMessage()
		if err != nil {
			return
		}
		s.received.Add(1)
		if c.WriteMessage(mt, b) != nil {
			return
		}
		s.sent.Add(1)
	}
}

// wsPlan is a per-vu-iterations plan of one WebSocket step with this ws object.
func wsPlan(url string, vus, iters int, ws string) string {
	return fmt.Sprintf(`{"name":"ws","requests":[{"url":%q,"ws":%s}],
		"load":{"executor":"per-vu-iterations","vus":%d,"iterations":%d},"http":{"timeout":"3s"}}`, url, ws, vus, iters)
}

// runWS runs a plan and also returns the run's final cumulative counts.
func runWS(t *testing.T, js string, pol *netpolicy.Policy) (*metrics.Summary, []metrics.Sample, *metrics.Counts) {
	t.Helper()
	var samples []metrics.Sample
	e, err := newEngine(mustPlan(t, js), Options{Policy: pol, OnSample: func(s metrics.Sample) { samples = append(samples, s) }})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := metrics.NewCounts()
	e.Recorder().Read(c)
	return sum, samples, c
}

func histTotal(counts []int64) (n int64) {
	for _, c := range counts {
		n += c
	}
	return n
}

// N sessions × M messages against an echo server: every message counted on both sides, every
// round trip recorded, each session one request with status 101, and the per-second blocks add
// up to the summary.
func TestWSEchoCountsEveryMessage(t *testing.T) {
	const vus, iters, msgs = 6, 3, 5
	srv := newWSServer(t, websocket.Upgrader{}, echo)
	var m []string
	for i := range msgs {
		m = append(m, fmt.Sprintf(`{"send":"m%d vu {{vu}}","expect":[{"type":"body","op":"contains","value":"m%d vu"}]}`, i, i))
	}
	sum, samples, c := runWS(t, wsPlan(srv.url, vus, iters, `{"messages":[`+strings.Join(m, ",")+`]}`), nil)
	const sessions, total = vus * iters, vus * iters * msgs
	if sum.Requests != sessions || sum.Successes != sessions || sum.StatusCodes["101"] != sessions {
		t.Fatalf("requests %d successes %d status %v kinds %v; want %d sessions of status 101", sum.Requests, sum.Successes, sum.StatusCodes, sum.ErrorKinds, sessions)
	}
	w := sum.WS
	if w == nil {
		t.Fatal("the summary has no ws block")
	}
	if w.Sessions != sessions || w.SessionsFailed != 0 || srv.sessions.Load() != sessions {
		t.Errorf("sessions: volley %d (failed %d), server %d; want %d", w.Sessions, w.SessionsFailed, srv.sessions.Load(), sessions)
	}
	if w.MessagesSent != total || srv.received.Load() != total {
		t.Errorf("sent: volley %d, server received %d; want %d", w.MessagesSent, srv.received.Load(), total)
	}
	if w.MessagesReceived != total || srv.sent.Load() != total {
		t.Errorf("received: volley %d, server sent %d; want %d", w.MessagesReceived, srv.sent.Load(), total)
	}
	if n := histTotal(c.WS.RTT); n != total {
		t.Errorf("round-trip histogram holds %d values; want %d", n, total)
	}
	if n := histTotal(c.WS.Connect); n != sessions {
		t.Errorf("connect histogram holds %d values; want %d", n, sessions)
	}
	if w.RoundTrip.Max <= 0 || w.Connect.Max <= 0 || w.RoundTrip.P50 > w.RoundTrip.Max {
		t.Errorf("latencies: round trip %+v connect %+v", w.RoundTrip, w.Connect)
	}
	if srv.shut.Load() != sessions {
		t.Errorf("the server got %d normal close frames; want %d", srv.shut.Load(), sessions)
	}
	var sent, recv, sess int64
	for _, s := range samples {
		if s.WS == nil {
			t.Fatalf("second %d has no ws block", s.ElapsedS)
		}
		sent, recv, sess = sent+s.WS.MessagesSent, recv+s.WS.MessagesReceived, sess+s.WS.Sessions
	}
	if sent != total || recv != total || sess != sessions {
		t.Errorf("seconds add up to sent %d received %d sessions %d; want %d, %d, %d", sent, recv, sess, total, total, sessions)
	}
	var passes int64
	for _, ck := range sum.Checks {
		passes += ck.Passes
		if ck.Fails != 0 {
			t.Errorf("check %q failed %d times", ck.Check, ck.Fails)
		}
	}
	if passes != total {
		t.Errorf("checks passed %d times; want %d", passes, total)
	}
	if sum.BytesOut == 0 || sum.BytesIn == 0 {
		t.Errorf("bytes in %d out %d: the session's bytes are not counted", sum.BytesIn, sum.BytesOut)
	}
}

// A server that ends the session before its steps are done: the session is ws_closed, once per
// session, whether it drops the TCP connection or closes with a close frame, during the messages
// or during the hold.
func TestWSServerEndingSessionIsWSClosed(t *testing.T) {
	const vus, iters = 3, 2
	twoThenDrop := func(s *wsServer, c *websocket.Conn) {
		for i := 0; ; i++ {
			mt, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			s.received.Add(1)
			if i == 1 {
				c.NetConn().Close() // dropped mid-session, no close frame
				return
			}
			_ = c.WriteMessage(mt, b)
			s.sent.Add(1)
		}
	}
	closeFrame := func(s *wsServer, c *websocket.Conn) {
		_, _, _ = c.ReadMessage()
		s.received.Add(1)
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "bye"), time.Now().Add(time.Second))
		_, _, _ = c.ReadMessage() // the client's answer
	}
	dropInHold := func(s *wsServer, c *websocket.Conn) {
		echo1 := func() {
			mt, b, _ := c.ReadMessage()
			s.received.Add(1)
			_ = c.WriteMessage(mt, b)
			s.sent.Add(1)
		}
		echo1()
		time.Sleep(50 * time.Millisecond)
		c.NetConn().Close()
	}
	three := `{"messages":[{"send":"a","expect":[{"type":"body","op":"contains","value":"a"}]},
		{"send":"b","expect":[{"type":"body","op":"contains","value":"b"}]},{"send":"c"}]}`
	for _, tc := range []struct {
		name          string
		handle        func(*wsServer, *websocket.Conn)
		ws            string
		sent, receive int64 // per session, as Volley counts them
	}{
		{"drop", twoThenDrop, three, 2, 1},
		{"close frame", closeFrame, three, 1, 0},
		{"drop in hold", dropInHold, `{"messages":[{"send":"a","expect":[{"type":"body","op":"contains","value":"a"}]}],"hold":"20s"}`, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newWSServer(t, websocket.Upgrader{}, tc.handle)
			sum, _, _ := runWS(t, wsPlan(srv.url, vus, iters, tc.ws), nil)
			const n = vus * iters
			if sum.Requests != n || sum.ErrorKinds["ws_closed"] != n || sum.StatusCodes["101"] != n {
				t.Fatalf("requests %d kinds %v status %v; want %d ws_closed of status 101", sum.Requests, sum.ErrorKinds, sum.StatusCodes, n)
			}
			if w := sum.WS; w.Sessions != n || w.SessionsFailed != n || w.MessagesSent != tc.sent*n || w.MessagesReceived != tc.receive*n {
				t.Errorf("ws %+v; want %d failed sessions, %d sent, %d received", *w, n, tc.sent*n, tc.receive*n)
			}
			if srv.received.Load() != tc.sent*n {
				t.Errorf("the server received %d messages; volley says it sent %d", srv.received.Load(), tc.sent*n)
			}
			if len(sum.Failures) == 0 || sum.Failures[0].Kind != "ws_closed" || sum.Failures[0].Status != 101 {
				t.Errorf("failures %+v", sum.Failures)
			}
		})
	}
}

// A refused upgrade is ws_handshake, with the status the server answered; so are an upgrade with
// a wrong Sec-WebSocket-Accept and a subprotocol the plan did not offer.
func TestWSRefusedUpgradeIsWSHandshake(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		status  string
	}{
		{"403", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) }, "403"},
		{"200", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("not a websocket")) }, "200"},
		{"bad accept", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Upgrade", "websocket")
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Sec-WebSocket-Accept", "wrong")
			w.WriteHeader(http.StatusSwitchingProtocols)
		}, "101"},
		{"subprotocol not offered", func(w http.ResponseWriter, r *http.Request) {
			up := websocket.Upgrader{Subprotocols: []string{"other"}}
			h := http.Header{"Sec-WebSocket-Protocol": {"other"}}
			if c, err := up.Upgrade(w, r, h); err == nil {
				_, _, _ = c.ReadMessage()
				c.Close()
			}
		}, "101"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := testutil.NewTarget(t, tc.handler)
			url := "ws" + strings.TrimPrefix(tg.URL, "http") + "/"
			sum, _, _ := runWS(t, wsPlan(url, 2, 3, `{"subprotocols":["chat"],"messages":[{"send":"x"}]}`), nil)
			if sum.Requests != 6 || sum.ErrorKinds["ws_handshake"] != 6 || sum.StatusCodes[tc.status] != 6 {
				t.Fatalf("requests %d kinds %v status %v; want 6 ws_handshake of status %s", sum.Requests, sum.ErrorKinds, sum.StatusCodes, tc.status)
			}
			if tg.Requests() != 6 || sum.WS.SessionsFailed != 6 || sum.WS.MessagesSent != 0 {
				t.Errorf("target saw %d upgrades; ws %+v", tg.Requests(), *sum.WS)
			}
		})
	}
}

// An expectation nobody answers is a timeout; one answered only by messages that fail the check is
// check_failed (the messages are counted, the check's fails too).
func TestWSExpectationTimesOut(t *testing.T) {
	silent := func(s *wsServer, c *websocket.Conn) {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
			s.received.Add(1)
		}
	}
	wrong := func(s *wsServer, c *websocket.Conn) {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
			s.received.Add(1)
			_ = c.WriteMessage(websocket.TextMessage, []byte(`{"ok":false}`))
			s.sent.Add(1)
		}
	}
	ws := `{"messages":[{"send":"x","expect":[{"type":"json","path":"ok","op":"eq","value":true}],"timeout":"150ms"}]}`
	for _, tc := range []struct {
		name   string
		handle func(*wsServer, *websocket.Conn)
		kind   string
		recv   int64
	}{{"silent", silent, "timeout", 0}, {"wrong answer", wrong, "check_failed", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newWSServer(t, websocket.Upgrader{}, tc.handle)
			sum, _, c := runWS(t, wsPlan(srv.url, 2, 1, ws), nil)
			if sum.Requests != 2 || sum.ErrorKinds[tc.kind] != 2 {
				t.Fatalf("requests %d kinds %v; want 2 %s", sum.Requests, sum.ErrorKinds, tc.kind)
			}
			if sum.WS.MessagesReceived != tc.recv || srv.sent.Load() != tc.recv || histTotal(c.WS.RTT) != 0 {
				t.Errorf("received %d (server sent %d), round trips %d", sum.WS.MessagesReceived, srv.sent.Load(), histTotal(c.WS.RTT))
			}
			if tc.kind == "check_failed" && (len(sum.Checks) != 1 || sum.Checks[0].Fails != 2) {
				t.Errorf("checks %+v; want one check failed twice", sum.Checks)
			}
		})
	}
}

// A hold keeps the session open, counting what the server pushes, then closes it normally.
func TestWSHoldCountsPushedMessages(t *testing.T) {
	push := func(s *wsServer, c *websocket.Conn) {
		go func() { // the reader: answers the client's close
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
		for i := 0; i < 5; i++ {
			if c.WriteMessage(websocket.TextMessage, []byte("tick")) != nil {
				return
			}
			s.sent.Add(1)
		}
		time.Sleep(2 * time.Second)
	}
	srv := newWSServer(t, websocket.Upgrader{}, push)
	sum, _, _ := runWS(t, wsPlan(srv.url, 2, 1, `{"hold":"300ms"}`), nil)
	if sum.Requests != 2 || sum.Successes != 2 || sum.WS.MessagesReceived != 10 || srv.sent.Load() != 10 {
		t.Fatalf("requests %d successes %d kinds %v received %d (server sent %d)", sum.Requests, sum.Successes, sum.ErrorKinds, sum.WS.MessagesReceived, srv.sent.Load())
	}
	if srv.shut.Load() != 2 {
		t.Errorf("the server got %d normal close frames; want 2", srv.shut.Load())
	}
}

// The target policy judges the session's connect: a denied address is blocked_target and never
// reached.
func TestWSTargetPolicyJudgesTheConnect(t *testing.T) {
	srv := newWSServer(t, websocket.Upgrader{}, echo)
	pol, err := netpolicy.New(nil, []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	sum, _, _ := runWS(t, wsPlan(srv.url, 1, 2, `{"messages":[{"send":"x"}]}`), pol)
	if sum.ErrorKinds["blocked_target"] != 2 || srv.Requests() != 0 {
		t.Fatalf("kinds %v, target reached %d times", sum.ErrorKinds, srv.Requests())
	}
}

// Plan headers, templated ones and the subprotocol reach the handshake.
func TestWSHandshakeCarriesHeaders(t *testing.T) {
	up := websocket.Upgrader{Subprotocols: []string{"chat"}}
	srv := newWSServer(t, up, func(s *wsServer, c *websocket.Conn) {
		if c.Subprotocol() != "chat" {
			s.bad.Add(1)
		}
		echo(s, c)
	}, func(r *http.Request) bool {
		return r.Header.Get("Cookie") == "sid=abc" && strings.HasPrefix(r.Header.Get("X-Vu"), "vu-") && r.Header.Get("User-Agent") == "volley"
	})
	js := fmt.Sprintf(`{"name":"ws","requests":[{"url":%q,"headers":{"Cookie":"sid=abc","X-Vu":"vu-{{vu}}"},
		"ws":{"subprotocols":["chat"],"messages":[{"send":"hi","expect":[{"type":"body","op":"contains","value":"hi"}]}]}}],
		"load":{"executor":"per-vu-iterations","vus":2,"iterations":2}}`, srv.url)
	sum, _, _ := runWS(t, js, nil)
	if sum.Successes != 4 || srv.bad.Load() != 0 {
		t.Fatalf("successes %d kinds %v, handshakes without the plan's headers or subprotocol: %d", sum.Successes, sum.ErrorKinds, srv.bad.Load())
	}
}

// BenchmarkWSExchange measures one request/response exchange of an open session (send a text
// message, read the echo, judge a body check): allocations per exchange are gorilla's message
// writer and reader.
func BenchmarkWSExchange(b *testing.B) {
	srv := newWSServer(b, websocket.Upgrader{}, echo)
	p := mustPlan(b, wsPlan(srv.url, 1, 1, `{"messages":[{"send":"hello {{vu}}","expect":[{"type":"body","op":"contains","value":"hello"}]}]}`))
	c, err := plan.Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(c, Options{})
	if err != nil {
		b.Fatal(err)
	}
	e.start = time.Now()
	e.endAt, e.hardStop = time.Hour, time.Hour
	v := newVU(e, 0)
	defer v.finish()
	r := &v.reqs[0]
	w := v.wsState(r)
	v.state.Store(inFlight)
	v.arm(time.Hour)
	conn, _, err := w.dialer.DialContext(context.Background(), srv.url, w.header)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	ws := r.spec.ws
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if k, err := v.wsMessage(w, conn, ws, 0); k != metrics.KindNone {
			b.Fatal(k, err)
		}
		w.checked = w.checked[:0]
	}
}

// A WebSocket step and an HTTP request in one sequence: after a session whose hold the server cut
// short, the next HTTP request still times out at its own deadline, not at the hold's.
func TestWSThenHTTPKeepsTheRequestDeadline(t *testing.T) {
	srv := newWSServer(t, websocket.Upgrader{}, func(s *wsServer, c *websocket.Conn) {
		time.Sleep(50 * time.Millisecond)
		c.NetConn().Close()
	})
	release := make(chan struct{})
	slow := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
	})
	defer close(release)
	js := fmt.Sprintf(`{"name":"mix","flow":"sequence","requests":[{"url":%q,"ws":{"hold":"20s"}},{"url":%q}],
		"load":{"executor":"per-vu-iterations","vus":1,"iterations":1},"http":{"timeout":"300ms"}}`, srv.url, slow.URL)
	start := time.Now()
	sum, _, _ := runWS(t, js, nil)
	took := time.Since(start)
	if sum.ErrorKinds["ws_closed"] != 1 || sum.ErrorKinds["timeout"] != 1 {
		t.Fatalf("kinds %v; want one ws_closed and one timeout", sum.ErrorKinds)
	}
	// 50 ms + 300 ms of deadlines; the hold's 20 s would be far beyond any scheduling delay
	if took > 10*time.Second {
		t.Errorf("the run took %v: the HTTP request's timeout waited for the hold's deadline", took)
	}
}

// wss: the TLS handshake is made on the VU's own connection (SNI the URL's host), then the
// upgrade; a certificate the plan does not accept is tls.
func TestWSSOverTLS(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			got.Add(1)
			_ = c.WriteMessage(mt, b)
		}
	}))
	var rejected *testutil.ExpectedErrors
	srv.Config.ErrorLog, rejected = testutil.ExpectErrors(t, "TLS handshake error")
	srv.StartTLS()
	defer srv.Close()
	url := "wss" + strings.TrimPrefix(srv.URL, "https") + "/"
	ws := `{"messages":[{"send":"x","expect":[{"type":"body","op":"contains","value":"x"}]}]}`
	js := func(insecure bool) string {
		return fmt.Sprintf(`{"name":"wss","requests":[{"url":%q,"ws":%s}],"load":{"executor":"per-vu-iterations","vus":2,"iterations":2},
			"http":{"timeout":"3s","insecure_skip_verify":%t}}`, url, ws, insecure)
	}
	sum, _, _ := runWS(t, js(true), nil)
	if sum.Successes != 4 || sum.WS.MessagesReceived != 4 || got.Load() != 4 {
		t.Fatalf("successes %d kinds %v received %d (server got %d)", sum.Successes, sum.ErrorKinds, sum.WS.MessagesReceived, got.Load())
	}
	sum, _, _ = runWS(t, js(false), nil)
	if sum.ErrorKinds["tls"] != 4 || rejected.Count() != 4 {
		t.Errorf("an unverified certificate gives kinds %v (server saw %d rejections); want 4 tls", sum.ErrorKinds, rejected.Count())
	}
}

// A received message over ws.max_message fails the session as body_too_large (gorilla's read
// limit), without reading it into memory.
func TestWSMessageOverMaxMessage(t *testing.T) {
	srv := newWSServer(t, websocket.Upgrader{}, func(s *wsServer, c *websocket.Conn) {
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", 4096)))
		s.sent.Add(1)
		_, _, _ = c.ReadMessage()
	})
	sum, _, _ := runWS(t, wsPlan(srv.url, 2, 1, `{"max_message":1024,"messages":[{"send":"x","expect":[{"type":"body","op":"contains","value":"x"}]}]}`), nil)
	if sum.ErrorKinds["body_too_large"] != 2 || sum.WS.MessagesReceived != 0 || srv.sent.Load() != 2 {
		t.Fatalf("kinds %v received %d (server sent %d); want 2 body_too_large", sum.ErrorKinds, sum.WS.MessagesReceived, srv.sent.Load())
	}
}
