package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"gorm.io/gorm"

	"github.com/volley-load/volley/backend/internal/store"
	"github.com/volley-load/volley/backend/internal/testutil"
)

// startServe runs serve() on 127.0.0.1:0 with opts and returns its address; the server is shut
// down when the test ends.
func startServe(t *testing.T, db string, opts serveOpts) string {
	t.Helper()
	ready := make(chan net.Addr, 1)
	opts.ready = func(a net.Addr) { ready <- a }
	if opts.log == nil {
		opts.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, "127.0.0.1:0", db, "", adminInit{}, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case a := <-ready:
		return a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	return ""
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// TestSlowClientsCapAndTimeout: 300 half-sent requests from one client address. The per-client
// cap closes the excess as soon as they are accepted; the held ones are closed after
// ReadHeaderTimeout; the server's descriptors return to where they were.
func TestSlowClientsCapAndTimeout(t *testing.T) {
	const (
		clients = 300
		max     = 40
		rht     = 6 * time.Second
	)
	opts := defaultServeOpts()
	opts.maxConnsPerClient = max
	opts.readHeaderTimeout, opts.readTimeout = rht, rht
	logs := &lockedBuffer{}
	opts.log = slog.New(slog.NewTextHandler(logs, nil))
	addr := startServe(t, filepath.Join(t.TempDir(), "volley.db"), opts)
	get := func() int {
		res, err := http.Get("http://" + addr + "/api/health")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := get(); st != 200 {
		t.Fatalf("health: %d", st)
	}
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	base := openFDs(t)

	t0 := time.Now()
	conns := make([]net.Conn, 0, clients)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range clients {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		// Half a request: the line and one header, never the blank line that ends them.
		_, _ = fmt.Fprintf(c, "GET /api/health HTTP/1.1\r\nHost: %s\r\n", addr)
	}
	dialed := time.Since(t0)

	// Phase 1, well before ReadHeaderTimeout: the refused ones are closed, the held ones are not.
	phase1 := t0.Add(rht / 2)
	closed := make([]bool, clients)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(phase1)
			_, err := c.Read(make([]byte, 64))
			var ne net.Error
			closed[i] = err != nil && !(errors.As(err, &ne) && ne.Timeout())
		})
	}
	wg.Wait()
	refused := 0
	var held []net.Conn
	for i, c := range conns {
		if closed[i] {
			refused++
		} else {
			held = append(held, c)
		}
	}
	peak := openFDs(t) - base - clients // the server's own descriptors for these clients
	t.Logf("%d half-sent requests dialled in %v: %d refused at once, %d held; server fds held: %d", clients, dialed.Round(time.Millisecond), refused, len(held), peak)
	if len(held) != max || refused != clients-max {
		t.Fatalf("held %d, refused %d; want %d and %d", len(held), refused, max, clients-max)
	}
	if peak < max-5 || peak > max+5 {
		t.Errorf("the server holds %d descriptors for the clients, want about %d", peak, max)
	}

	// Phase 2: the held ones are closed by ReadHeaderTimeout (not before).
	for _, c := range held {
		wg.Go(func() {
			_ = c.SetReadDeadline(t0.Add(rht + 20*time.Second))
			_, _ = io.Copy(io.Discard, c) // returns on close (EOF) or at the deadline
		})
	}
	wg.Wait()
	if el := time.Since(t0); el < rht-time.Second || el > rht+20*time.Second {
		t.Errorf("held connections closed after %v, want about %v", el.Round(time.Millisecond), rht)
	} else {
		t.Logf("held connections closed after %v (ReadHeaderTimeout %v)", el.Round(time.Millisecond), rht)
	}
	var left int
	for range 50 { // the server closes its side as it answers; let it finish
		if left = openFDs(t) - base - clients; left <= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left > 2 {
		t.Errorf("server still holds %d descriptors after ReadHeaderTimeout", left)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	if n := openFDs(t); n > base+2 {
		t.Errorf("open fds %d, baseline %d", n, base)
	}
	if st := get(); st != 200 {
		t.Errorf("health after the slow clients: %d", st)
	}
	if n := strings.Count(logs.String(), "connections refused"); n != 1 {
		t.Errorf("%d refusal warnings, want 1 (at most one per 10 s):\n%s", n, logs.String())
	}
}

// lockedBuffer collects a server's log written from its goroutines.
type lockedBuffer = testutil.SyncBuffer

func TestServeRefusesBadPublicURL(t *testing.T) {
	opts := defaultServeOpts()
	opts.publicURLs = []string{"https://volley.example.com", "volley.example.com"}
	opts.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	db := filepath.Join(t.TempDir(), "volley.db")
	err := serve(context.Background(), "127.0.0.1:0", db, "", adminInit{}, opts)
	if err == nil || !strings.Contains(err.Error(), "--public-url") || !strings.Contains(err.Error(), `"volley.example.com"`) {
		t.Fatalf("err %v, want one naming --public-url and the value", err)
	}
	if _, statErr := os.Stat(db); statErr == nil {
		t.Error("the database was created before the flags were checked")
	}
}

// TestLongAnswersOutliveWriteTimeout: with a 1 s WriteTimeout, a live websocket stream lasting
// longer still delivers its summary (the upgrade clears the deadline) and a large export read
// slowly by its client arrives whole (exports move their deadline).
func TestLongAnswersOutliveWriteTimeout(t *testing.T) {
	db := filepath.Join(t.TempDir(), "volley.db")
	size := seedLargeRun(t, db)
	target := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) })}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = target.Serve(tln) }()
	defer target.Close()

	// The timeouts are short (1 s on a quiet machine) so that the answers below outlive them; a
	// busy machine stretches every ordinary request too, so they grow by the scheduling delay
	// measured first (20 late wakeups' worth), or ordinary requests would hit them.
	probe := testutil.StartSchedProbe(t)
	time.Sleep(500 * time.Millisecond)
	timeout := time.Second + probe.Stop().Slack(20)
	opts := defaultServeOpts()
	opts.writeTimeout, opts.readTimeout, opts.idleTimeout = timeout, timeout, timeout
	addr := startServe(t, db, opts)
	self := "http://" + addr

	// A large export read by a client that waits 2.5 WriteTimeouts before reading.
	body, err := slowGet(addr, "/api/runs/1/report?format=json", timeout*5/2)
	if err != nil {
		t.Errorf("export: %v after %d bytes", err, len(body))
	} else if !json.Valid(body) || len(body) < size {
		t.Errorf("export: %d bytes (valid JSON %v), want ≥ %d", len(body), json.Valid(body), size)
	} else {
		t.Logf("export: %d bytes read whole by a client that waited %v (WriteTimeout %v)", len(body), timeout*5/2, timeout)
	}

	// A 3 s run watched live from the same origin.
	runFor := (timeout * 3).Round(time.Second)
	plan := fmt.Sprintf(`{"name":"ws","requests":[{"url":"http://%s/"}],"load":{"executor":"constant-vus","vus":1,"duration":"%s"}}`, tln.Addr(), runFor)
	post := func(path, body string) map[string]any {
		st, m := jsonCall(t, "POST", self+path, body, "Origin", self)
		if st != 201 {
			t.Fatalf("POST %s: %d %v", path, st, m)
		}
		return m
	}
	p := post("/api/plans", plan)
	run := post(fmt.Sprintf("/api/plans/%v/runs", p["id"]), "")
	start := time.Now()
	c, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("ws://%s/api/runs/%v/live", addr, run["id"]), http.Header{"Origin": {self}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(runFor + time.Minute))
	var kinds []string
	for {
		_, b, err := c.ReadMessage()
		if err != nil {
			break
		}
		var m struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &m)
		kinds = append(kinds, m.Type)
	}
	el := time.Since(start)
	if len(kinds) < 3 || kinds[len(kinds)-1] != "summary" || el < 2*timeout {
		t.Errorf("live stream over %v: %v, want samples then the summary over more than %v", el.Round(time.Millisecond), kinds, 2*timeout)
	} else {
		t.Logf("live stream: %d messages over %v (WriteTimeout %v)", len(kinds), el.Round(time.Millisecond), timeout)
	}
}

// seedLargeRun stores a finished run whose JSON export exceeds what socket buffers can hold
// (about 9 MB), and returns that lower bound.
func seedLargeRun(t *testing.T, db string) int {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	spec := []byte(`{"name":"big","requests":[{"url":"http://127.0.0.1:9/"}],"load":{"executor":"constant-vus","vus":1,"duration":"1s"}}`)
	p, err := st.CreatePlan(ctx, "big", spec)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	r, err := st.CreateRun(ctx, p.ID, p.Name, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string]int{}
	for i := range 50 {
		byName[fmt.Sprintf("%03d-%s", i, strings.Repeat("n", 200))] = map[string]int{"requests": 1}
	}
	const seconds = 800
	size := 0
	err = st.DB().Transaction(func(tx *gorm.DB) error {
		for s := 1; s <= seconds; s++ {
			b, _ := json.Marshal(map[string]any{"t": t0.Add(time.Duration(s) * time.Second).UnixMilli(), "elapsed_s": s, "interval_s": 1, "requests": 50, "by_name": byName})
			size += len(b)
			if err := tx.Exec("INSERT INTO run_samples (run_id, second, t_ms, data) VALUES (?, ?, ?, ?)", r.ID, s, t0.UnixMilli()+int64(s)*1000, string(b)).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, r.ID, store.StatusFinished, t0.Add(seconds*time.Second), store.Progress{DurationS: seconds}, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	return size * 9 / 10
}

// slowGet sends one GET with a small receive buffer, waits, then reads the whole answer.
func slowGet(addr, path string, wait time.Duration) ([]byte, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	time.Sleep(wait)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Minute)) // a race build on a busy machine is slow; the point is that it comes whole
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("status %d: %.200s", res.StatusCode, b)
	}
	return b, err
}

func TestClientKeyAndLoopback(t *testing.T) {
	key := func(s string) string {
		a, err := net.ResolveTCPAddr("tcp", s)
		if err != nil {
			t.Fatal(err)
		}
		return clientKey(a).String()
	}
	for addr, want := range map[string]string{
		"192.0.2.7:1234":           "192.0.2.7/32",
		"[::ffff:192.0.2.7]:1234":  "192.0.2.7/32",
		"[2001:db8:1:2:aaaa::1]:1": "2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb::9]:2": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:2":      "2001:db8:1:3::/64",
		"[fe80::1%lo]:2":           "fe80::/64",
		"127.0.0.1:5":              "127.0.0.1/32",
	} {
		if got := key(addr); got != want {
			t.Errorf("clientKey(%s) = %s, want %s", addr, got, want)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "[::1]:8080": true, "127.0.0.2:1": true,
		"0.0.0.0:8080": false, "[::]:8080": false, "192.0.2.1:80": false} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		if got := isLoopback(a); got != want {
			t.Errorf("isLoopback(%s) = %v", addr, got)
		}
	}
}
