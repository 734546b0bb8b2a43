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

// A run resumed after a restart: Seed opens its topic with the stored seconds; a viewer who joins
// then (before the run is begun again) stays subscribed through the run's Open, which keeps the
// seeded topic, and gets the seeded history then the live messages, each once; a viewer who joins
// after the Open gets the same. The Open after that is a new topic again.
func TestSeededTopicKeepsHistoryThroughOpen(t *testing.T) {
	h := New(nil)
	h.Seed(1, [][]byte{[]byte("s1"), []byte("s2")})
	if !h.Active(1) {
		t.Fatal("a seeded topic is not active")
	}
	url := serve(t, h, noStore)
	early := dial(t, url)
	waitClients(t, h, 1)
	h.Open(1) // the resumed run begins: the topic, its history and its viewer stay
	if n := h.Clients(); n != 1 {
		t.Fatalf("%d clients after the run's Open, want the early one kept", n)
	}
	h.Publish(1, []byte("s3"))
	late := dial(t, url)
	waitClients(t, h, 2)
	h.Publish(1, []byte("s4"))
	h.Close(1, []byte("summary"))
	want := "s1,s2,s3,s4,summary"
	if got := strings.Join(readAll(t, early), ","); got != want {
		t.Errorf("viewer joined before the Open: %s, want %s", got, want)
	}
	if got := strings.Join(readAll(t, late), ","); got != want {
		t.Errorf("viewer joined after the Open: %s, want %s", got, want)
	}

	h.Seed(2, [][]byte{[]byte("old")})
	h.Open(2)
	h.Open(2) // only the first Open keeps a seeded topic
	h.mu.Lock()
	n := len(h.topics[2].history)
	h.mu.Unlock()
	if n != 0 {
		t.Errorf("the second Open kept %d seeded messages", n)
	}
	h.Close(2, nil)
}

// waitClients waits (5 s at most) until n clients are subscribed.
func waitClients(t *testing.T, h *Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for h.Clients() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d clients subscribed, want %d", h.Clients(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
