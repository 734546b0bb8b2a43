package target

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// flakyListener fails its first Accept with a permanent error, as accept does when the process is
// out of file descriptors.
type flakyListener struct {
	net.Listener
	failed atomic.Bool
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.failed.CompareAndSwap(false, true) {
		return nil, errors.New("accept: too many open files")
	}
	return l.Listener.Accept()
}

func TestTargetKeepsServingAfterAcceptFails(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, &flakyListener{Listener: ln}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	c := &http.Client{Timeout: 2 * time.Second}
	var res *http.Response
	for i := 0; i < 20; i++ {
		if res, err = c.Get("http://" + ln.Addr().String() + "/"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("target never recovered: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || len(body) < 500 {
		t.Fatalf("status %d, %d bytes", res.StatusCode, len(body))
	}
}

func TestRoutes(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ServeListener(ctx, ln)
	base := "http://" + ln.Addr().String()
	for path, want := range map[string]int{"/": 200, "/status/503": 503, "/bytes/10": 200, "/delay/10": 200, "/nope": 404, "/status/9": 400} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, res.StatusCode, want)
		}
	}
	if _, err := Listen("0.0.0.0:0"); err == nil {
		t.Error("the demo target must refuse non-loopback addresses")
	}
}

// /ws/echo answers a message with itself and ends a session whose message exceeds WSMaxMessage
// with close code 1009; serving ends the open sessions when its context ends.
func TestWSEcho(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, ln) }()
	url := "ws://" + ln.Addr().String() + "/ws/echo"
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, n := range []int{5, WSMaxMessage} {
		msg := strings.Repeat("x", n)
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if mt, got, err := c.ReadMessage(); err != nil || mt != websocket.TextMessage || string(got) != msg {
			t.Fatalf("echo of %d bytes: type %d, %d bytes, %v", n, mt, len(got), err)
		}
	}
	if err := c.WriteMessage(websocket.BinaryMessage, make([]byte, WSMaxMessage+1)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("after a message over the limit: %v; want close 1009", err)
	}
	open, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	cancel()
	_ = open.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := open.ReadMessage(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an open session after serving ended: %v; want it closed", err)
	}
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
