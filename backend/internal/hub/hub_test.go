package hub

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serve(t *testing.T, h *Hub, stored func() ([][]byte, error)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = h.Serve(w, r, 1, stored)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readAll(t *testing.T, c *websocket.Conn) []string {
	t.Helper()
	var got []string
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, m, err := c.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				t.Fatalf("read: %v (after %v)", err, got)
			}
			return got
		}
		got = append(got, string(m))
	}
}

func noStore() ([][]byte, error) { return nil, fmt.Errorf("not expected") }

func TestLateJoinerGetsHistoryThenLiveWithoutGapOrRepeat(t *testing.T) {
	h := New(nil)
	h.Open(1)
	url := serve(t, h, noStore)
	h.Publish(1, []byte("s1"))
	h.Publish(1, []byte("s2"))
	c := dial(t, url)
	// Wait until the client is subscribed, publishing concurrently with the join.
	go func() {
		for i := 3; i <= 50; i++ {
			h.Publish(1, []byte(fmt.Sprintf("s%d", i)))
			time.Sleep(time.Millisecond)
		}
		h.Close(1, []byte("summary"))
	}()
	got := readAll(t, c)
	if len(got) != 51 {
		t.Fatalf("got %d messages: %v", len(got), got)
	}
	for i := 0; i < 50; i++ {
		if got[i] != fmt.Sprintf("s%d", i+1) {
			t.Fatalf("message %d = %q", i, got[i])
		}
	}
	if got[50] != "summary" {
		t.Fatalf("last = %q", got[50])
	}
}

func TestFinishedRunIsServedFromStorage(t *testing.T) {
	h := New(nil)
	url := serve(t, h, func() ([][]byte, error) { return [][]byte{[]byte("a"), []byte("b"), []byte("sum")}, nil })
	got := readAll(t, dial(t, url))
	if strings.Join(got, ",") != "a,b,sum" {
		t.Fatalf("got %v", got)
	}
}

func TestSlowClientIsDroppedNotWaitedFor(t *testing.T) {
	h := New(nil)
	h.Open(1)
	url := serve(t, h, noStore)
	c := dial(t, url) // never reads
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		n := len(h.topics[1].clients)
		h.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("client never subscribed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	big := []byte(strings.Repeat("x", 64<<10))
	published := make(chan struct{})
	go func() {
		for i := 0; i < 2000; i++ { // far more than socket buffers + clientBuffer hold
			h.Publish(1, big)
		}
		close(published)
	}()
	select { // a Publish that waited for the client, which never reads, would never return
	case <-published:
	case <-time.After(30 * time.Second):
		t.Fatal("publishing waited for a slow client")
	}
	h.mu.Lock()
	n := len(h.topics[1].clients)
	h.mu.Unlock()
	if n != 0 {
		t.Fatalf("slow client still subscribed")
	}
	h.Close(1, []byte("end"))
	c.Close()
}
