package engine

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// Login over HTTP sets a session cookie; the WebSocket handshake that follows carries it (merged
// with the plan's own Cookie header) and its 101 sets another, which the next HTTP request
// carries. With http.cookies "off" neither reaches the server.
func TestWSHandshakeUsesTheCookieJar(t *testing.T) {
	var wsGood, wsBad, afterGood, afterBad atomic.Int64
	var why atomic.Value
	tg := testutil.NewTarget(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "vu" + r.Header.Get("X-VU"), Path: "/"})
		case "/live":
			c, err := r.Cookie("sid")
			th, _ := r.Cookie("theme")
			if err != nil || c.Value != "vu"+r.Header.Get("X-VU") || th == nil || th.Value != "dark" {
				wsBad.Add(1)
				why.Store(fmt.Sprintf("handshake cookies %q", r.Header.Values("Cookie")))
			} else {
				wsGood.Add(1)
			}
			up := websocket.Upgrader{}
			conn, err := up.Upgrade(w, r, http.Header{"Set-Cookie": {"ws=open; Path=/"}})
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				mt, b, err := conn.ReadMessage()
				if err != nil || conn.WriteMessage(mt, b) != nil {
					return
				}
			}
		case "/after":
			if c, err := r.Cookie("ws"); err != nil || c.Value != "open" {
				afterBad.Add(1)
				w.WriteHeader(403)
				return
			}
			afterGood.Add(1)
		}
	})
	wsURL := "ws" + strings.TrimPrefix(tg.URL, "http") + "/live"
	plan := func(mode string) string {
		return fmt.Sprintf(`{"name":"wsjar","flow":"sequence","requests":[
		{"method":"POST","url":%q,"headers":{"X-VU":"{{vu}}"}},
		{"url":%q,"headers":{"X-VU":"{{vu}}","Cookie":"theme=dark"},"ws":{"messages":[{"send":"hi","expect":[{"type":"body","op":"contains","value":"hi"}]}]}},
		{"url":%q}],
		"load":{"executor":"per-vu-iterations","vus":3,"iterations":2},"http":{"timeout":"3s","cookies":%q}}`,
			tg.URL+"/login", wsURL, tg.URL+"/after", mode)
	}
	sum, _, _ := runWS(t, plan("vu"), nil)
	if w := why.Load(); w != nil {
		t.Errorf("%v", w)
	}
	if wsGood.Load() != 6 || wsBad.Load() != 0 || afterGood.Load() != 6 || afterBad.Load() != 0 || sum.Successes != 18 {
		t.Fatalf("handshakes with the session %d (without %d), follow-ups with the 101's cookie %d (without %d), successes %d %v",
			wsGood.Load(), wsBad.Load(), afterGood.Load(), afterBad.Load(), sum.Successes, sum.ErrorKinds)
	}
	wsGood.Store(0)
	wsBad.Store(0)
	afterGood.Store(0)
	afterBad.Store(0)
	why.Store("")
	runWS(t, plan("off"), nil)
	if wsGood.Load() != 0 || wsBad.Load() != 6 || afterGood.Load() != 0 || afterBad.Load() != 6 {
		t.Errorf("cookies off: handshakes with a session %d, follow-ups with the 101's cookie %d", wsGood.Load(), afterGood.Load())
	}
}
