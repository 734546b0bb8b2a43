package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
)

// controller is a broker with an agents listener and the cluster registry on it, with a clock
// the test moves.
type controller struct {
	b   *bus.Bus
	nc  *nats.Conn // the registry's connection
	reg *cluster.Registry
	url string
	tok bus.Token

	mu  sync.Mutex
	now time.Time
}

func (c *controller) clock() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *controller) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func startController(t *testing.T) *controller {
	t.Helper()
	b, err := bus.Start(bus.Config{AgentsListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	nc, err := b.Controller("controller")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c := &controller{b: b, nc: nc, url: "nats://" + b.AgentsAddr(), now: time.Unix(1_800_000_000, 0)}
	if c.reg, err = cluster.Start(nc, "1.2.3", c.clock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.reg.Stop)
	if c.tok, err = bus.ParseToken(b.JoinToken()); err != nil {
		t.Fatal(err)
	}
	return c
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runAgent runs an agent until the test ends (logging on cfg.Log, nowhere without one); its result
// arrives on the returned channel.
func runAgent(t *testing.T, cfg Config) (<-chan error, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done, exited := make(chan error, 1), make(chan struct{})
	if cfg.Log == nil {
		cfg.Log = quiet()
	}
	go func() { done <- Run(ctx, cfg); close(exited) }()
	t.Cleanup(func() { cancel(); <-exited })
	return done, cancel
}

// waitList polls the registry until ok holds for its list (≤ 10 s).
func waitList(t *testing.T, c *controller, what string, ok func([]cluster.Agent) bool) []cluster.Agent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := c.reg.List()
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: registry still %+v", what, l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An agent joins over TLS with the join token and is listed with its hello and presence; when its
// beats stop (the clock passes the presence TTL without one), it is gone.
func TestAgentJoinsAndExpires(t *testing.T) {
	c := startController(t)
	_, stop := runAgent(t, Config{URL: c.url, Token: c.tok, ID: "gen-1", Labels: map[string]string{"zone": "a"}, Weight: 2, Version: "1.2.3"})
	l := waitList(t, c, "agent listed", func(l []cluster.Agent) bool { return len(l) == 1 })
	a := l[0]
	if a.ID != "gen-1" || a.Version != "1.2.3" || a.Labels["zone"] != "a" || a.Weight != 2 || a.Cores < 1 || a.State != "idle" || a.Host == "" || a.RSSBytes == 0 {
		t.Fatalf("listed %+v", a)
	}
	stop()
	// Within the TTL the agent is still listed; past it, gone.
	c.advance(bus.PresenceTTL)
	if len(c.reg.List()) != 1 {
		t.Fatalf("gone before the TTL: %+v", c.reg.List())
	}
	c.advance(time.Millisecond)
	if l := c.reg.List(); len(l) != 0 {
		t.Fatalf("listed after the TTL: %+v", l)
	}
}

// A controller that restarts while its agents stay connected to the broker (an external NATS:
// no reconnect, so no hello of their own) asks each agent it hears beat but does not know to say
// hello again, and lists it: registry A stops and its connection closes, registry B starts on a
// new controller connection of the same broker, and B lists the agent with its hello's fields,
// the agent's connection never having reconnected.
func TestRestartedControllerAsksHelloAgain(t *testing.T) {
	c := startController(t)
	var (
		mu   sync.Mutex
		conn *nats.Conn
	)
	connect := func(o ...nats.Option) (*nats.Conn, error) {
		nc, err := bus.ConnectAgent(c.url, "gen-1", c.tok, o...)
		mu.Lock()
		conn = nc
		mu.Unlock()
		return nc, err
	}
	runAgent(t, Config{URL: c.url, Token: c.tok, ID: "gen-1", Labels: map[string]string{"zone": "a"}, Version: "1.2.3", Connect: connect})
	waitList(t, c, "agent listed by A", func(l []cluster.Agent) bool { return len(l) == 1 })

	c.reg.Stop()
	c.nc.Close()
	nc, err := c.b.Controller("controller B")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if c.reg, err = cluster.Start(nc, "1.2.3", c.clock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.reg.Stop)
	l := waitList(t, c, "agent listed by B", func(l []cluster.Agent) bool { return len(l) == 1 })
	if a := l[0]; a.ID != "gen-1" || a.Labels["zone"] != "a" || a.Version != "1.2.3" {
		t.Fatalf("B lists %+v", a)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := conn.Stats().Reconnects; n != 0 {
		t.Fatalf("the agent reconnected %d times: B must have heard it without a reconnect", n)
	}
}

// The controller refuses an agent of another protocol, naming both versions; the agent stops with
// the refusal and is never listed.
func TestHelloRefusesOtherProtocol(t *testing.T) {
	c := startController(t)
	done, _ := runAgent(t, Config{URL: c.url, Token: c.tok, ID: "old", Version: "0.9.0",
		Hello: func(h bus.Hello) bus.Hello { h.Protocol = bus.Protocol + 1; return h }})
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent was not refused")
	}
	var ref *RefusedError
	if !errors.As(err, &ref) {
		t.Fatalf("err %v, want a refusal", err)
	}
	for _, want := range []string{fmt.Sprintf("protocol %d (volley 0.9.0)", bus.Protocol+1), fmt.Sprintf("protocol %d (volley 1.2.3)", bus.Protocol)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	if l := c.reg.List(); len(l) != 0 {
		t.Fatalf("refused agent listed: %+v", l)
	}
}

// Another histogram geometry is refused too, naming both.
func TestHelloRefusesOtherGeometry(t *testing.T) {
	h := bus.Hello{ID: "x", Protocol: bus.Protocol, Histogram: bus.Geometry{LowestUs: 1, HighestUs: 60_000_000, SigFigs: 2}}
	err := cluster.Check(h, "1.2.3")
	if err == nil || !strings.Contains(err.Error(), "2 significant digits") || !strings.Contains(err.Error(), cluster.Geometry.String()) {
		t.Fatalf("err %v", err)
	}
	h.Histogram = cluster.Geometry
	if err := cluster.Check(h, "1.2.3"); err != nil {
		t.Fatal(err)
	}
}

// An agent with a wrong join secret is refused at connect (it never reconnects forever on a
// refusal it cannot fix), and so is a second agent taking a connected agent's id.
func TestWrongTokenAndDuplicateIDRefused(t *testing.T) {
	c := startController(t)
	bad := c.tok
	bad.Secret = strings.Repeat("x", len(bad.Secret))
	err := Run(context.Background(), Config{URL: c.url, Token: bad, ID: "intruder", Log: quiet()})
	if err == nil || !strings.Contains(err.Error(), "cannot join") {
		t.Fatalf("wrong token: %v", err)
	}
	runAgent(t, Config{URL: c.url, Token: c.tok, ID: "gen-1"})
	waitList(t, c, "first agent listed", func(l []cluster.Agent) bool { return len(l) == 1 })
	if err := Run(context.Background(), Config{URL: c.url, Token: c.tok, ID: "gen-1", Log: quiet()}); err == nil {
		t.Fatal("a second agent with a connected id joined")
	}
	if l := c.reg.List(); len(l) != 1 {
		t.Fatalf("listed %+v", l)
	}
}

// A hello naming another agent's id is refused: the reply must go to that agent's own inbox, which
// only its own connection can read.
func TestHelloForAnotherIDRefused(t *testing.T) {
	c := startController(t)
	done, _ := runAgent(t, Config{URL: c.url, Token: c.tok, ID: "mallory",
		Hello: func(h bus.Hello) bus.Hello { h.ID = "gen-1"; return h }})
	select {
	case err := <-done:
		var ref *RefusedError
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), `"gen-1" is not this connection's agent id`) {
			t.Fatalf("err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a hello for another id was not refused")
	}
	if l := c.reg.List(); len(l) != 0 {
		t.Fatalf("listed %+v", l)
	}
}

// syncBuf is a log sink safe for concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// An agent whose controller comes back with another certificate (volley serve restarted without
// its --agents-state, or with another one) can never rejoin with its token: it says why, once,
// rather than reconnecting in silence — the controller's broker closed, another started on the
// same address with a new certificate.
func TestReconnectErrorIsLogged(t *testing.T) {
	c := startController(t)
	logs := &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		_ = Run(ctx, Config{URL: c.url, Token: c.tok, ID: "gen-1", Log: slog.New(slog.NewTextHandler(logs, nil))})
	}()
	t.Cleanup(func() { cancel(); <-exited })
	waitList(t, c, "agent listed", func(l []cluster.Agent) bool { return len(l) == 1 })
	c.reg.Stop()
	c.nc.Close()
	c.b.Close()
	other, err := bus.Start(bus.Config{AgentsListen: strings.TrimPrefix(c.url, "nats://")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	const want = "is not the join token's"
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect error logged:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), `hint="`+bus.StaleTokenHint) {
		t.Errorf("the reconnect error has not the stale token's hint:\n%s", logs.String())
	}
	// Several more attempts (every 500 ms), the same error: not logged again.
	time.Sleep(1200 * time.Millisecond)
	if n := strings.Count(logs.String(), want); n != 1 {
		t.Fatalf("the same reconnect error logged %d times:\n%s", n, logs.String())
	}
}
