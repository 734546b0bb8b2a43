package hub

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// FuzzClientFrames: what a websocket client sends is read (and discarded) by the server, never
// decoded; whatever the frames, the client still gets the stream and the hub serves the next one.
func FuzzClientFrames(f *testing.F) {
	h := New(nil)
	h.Open(1)
	h.Publish(1, []byte(`{"type":"sample","data":{}}`))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = h.Serve(w, r, 1, func() ([][]byte, error) { return nil, nil })
	}))
	f.Cleanup(func() {
		h.Close(1, []byte(`{"type":"summary"}`))
		srv.CloseClientConnections()
		srv.Close()
	})
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	for _, s := range []string{"", "hello", `{"type":"stop"}`, strings.Repeat("x", 5000), "\xff\xfe"} {
		f.Add(uint8(websocket.TextMessage), []byte(s))
		f.Add(uint8(websocket.BinaryMessage), []byte(s))
	}
	f.Add(uint8(websocket.PingMessage), []byte("p"))
	f.Add(uint8(websocket.CloseMessage), []byte{3, 232})
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, m, err := c.ReadMessage(); err != nil || !strings.Contains(string(m), "sample") {
			t.Fatalf("history: %q %v", m, err)
		}
		types := []int{websocket.TextMessage, websocket.BinaryMessage, websocket.PingMessage, websocket.PongMessage, websocket.CloseMessage}
		mt := types[int(kind)%len(types)]
		if mt >= websocket.CloseMessage && len(data) > 125 {
			data = data[:125] // control frames are at most 125 bytes
		}
		_ = c.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) // interleaved control frame
		if mt >= websocket.CloseMessage {
			_ = c.WriteControl(mt, data, time.Now().Add(time.Second))
		} else {
			_ = c.WriteMessage(mt, data)
		}
	})
}
