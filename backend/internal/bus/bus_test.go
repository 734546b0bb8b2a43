package bus

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/testutil"
)

func startBus(t *testing.T, cfg Config) *Bus {
	t.Helper()
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// violations collects a connection's asynchronous errors (permission violations arrive so).
func violations() (nats.Option, <-chan error) {
	ch := make(chan error, 16)
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case ch <- err:
		default:
		}
	}), ch
}

func expectViolation(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		if !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), what) {
			t.Errorf("error %v, want a permissions violation for %s", err, what)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("no permissions violation for %s", what)
	}
}

// By default the broker has no network listener: the controller and an in-process agent talk
// over in-process connections, and the agent's request reaches the controller.
func TestNoListenerByDefault(t *testing.T) {
	b := startBus(t, Config{})
	if b.Listening() || b.AgentsAddr() != "" || b.srv.Addr() != nil || b.JoinToken() != "" {
		t.Fatalf("listening %v at %q (%v), token %q", b.Listening(), b.AgentsAddr(), b.srv.Addr(), b.JoinToken())
	}
	ctl, err := b.Controller("controller")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if _, err := ctl.Subscribe("volley.ctl.hello", func(m *nats.Msg) { _ = m.Respond([]byte("welcome " + string(m.Data))) }); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Flush(); err != nil {
		t.Fatal(err)
	}
	ag, err := b.LocalAgent("local")
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	m, err := ag.Request("volley.ctl.hello", []byte("local"), 5*time.Second)
	if err != nil || string(m.Data) != "welcome local" {
		t.Fatalf("hello: %v %v", err, m)
	}
}

// An agent publishes and subscribes only on its own subjects: another agent's, the controller's
// control subjects and the JetStream API are refused; replying to a request it received works.
func TestAgentPermissions(t *testing.T) {
	b := startBus(t, Config{})
	ctl, err := b.Controller("controller")
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	onErr, errs := violations()
	a, err := b.LocalAgent("a1", onErr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	// Allowed: its own prepare subject (answering the controller) and its snapshot subject.
	if _, err := a.Subscribe("volley.agent.a1.prepare", func(m *nats.Msg) { _ = m.Respond([]byte("ready")) }); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if m, err := ctl.Request("volley.agent.a1.prepare", []byte("{}"), 5*time.Second); err != nil || string(m.Data) != "ready" {
		t.Fatalf("prepare: %v %v", err, m)
	}
	snaps, err := ctl.SubscribeSync("volley.run.r1.snap.>")
	if err != nil {
		t.Fatal(err)
	}
	_ = ctl.Flush()
	if err := a.Publish("volley.run.r1.snap.a1", []byte("s1")); err != nil {
		t.Fatal(err)
	}
	if m, err := snaps.NextMsg(5 * time.Second); err != nil || m.Subject != "volley.run.r1.snap.a1" {
		t.Fatalf("own snapshot: %v %v", err, m)
	}

	// Refused: publishing as another agent, on a run's control subject, to another agent's
	// subjects, to any agent's change subject (live control: the controller's alone, its own
	// too); subscribing to another agent's; the JetStream API.
	changes, err := ctl.SubscribeSync("volley.agent.*.change")
	if err != nil {
		t.Fatal(err)
	}
	_ = ctl.Flush()
	for _, subj := range []string{"volley.run.r1.snap.a2", "volley.run.r1.ctl", "volley.agent.a2.prepare", "$KV.volley_agents.a2",
		"volley.agent.a1.change", "volley.agent.a2.change"} {
		_ = a.Publish(subj, []byte("x"))
		_ = a.Flush()
		expectViolation(t, errs, subj)
	}
	if _, err := a.Subscribe("volley.agent.a2.>", func(*nats.Msg) {}); err == nil {
		_ = a.Flush()
		expectViolation(t, errs, "volley.agent.a2.>")
	}
	if _, err := a.Request("$JS.API.INFO", nil, 2*time.Second); err == nil {
		t.Error("an agent reached the JetStream API")
	}
	// Nothing the agent was refused reached the controller's snapshot subscription.
	if m, err := snaps.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("the controller received a refused message on %s", m.Subject)
	}
	if m, err := changes.NextMsg(200 * time.Millisecond); err == nil {
		t.Errorf("an agent's change message reached %s", m.Subject)
	}
}

// The agents listener is TLS with a pinned certificate: the join token's secret and fingerprint
// get in; a wrong secret, a wrong fingerprint, a bad id or an id already connected do not.
func TestRemoteAgentsJoinWithTheToken(t *testing.T) {
	var logged testutil.SyncBuffer
	b := startBus(t, Config{AgentsListen: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if !b.Listening() || !strings.HasPrefix(b.AgentsAddr(), "127.0.0.1:") {
		t.Fatalf("agents listener %q", b.AgentsAddr())
	}
	tok, err := ParseToken(b.JoinToken())
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + b.AgentsAddr()
	a1, err := ConnectAgent(url, "edge-1", tok, nats.NoReconnect())
	if err != nil {
		t.Fatalf("agent with the token: %v", err)
	}
	if !a1.TLSRequired() {
		t.Error("the agent connection is not TLS")
	}

	if _, err := ConnectAgent(url, "edge-1", tok, nats.NoReconnect()); err == nil {
		t.Error("a second connection with a connected agent's id was accepted")
	}
	bad := tok
	bad.Secret = strings.Repeat("x", 43)
	if _, err := ConnectAgent(url, "edge-2", bad, nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("wrong secret: %v, want an authorization error", err)
	}
	pinned := tok
	pinned.Fingerprint[0] ^= 0xff
	if _, err := ConnectAgent(url, "edge-3", pinned, nats.NoReconnect()); err == nil || !strings.Contains(err.Error(), "not the join token's") {
		t.Errorf("wrong fingerprint: %v", err)
	}
	if _, err := ConnectAgent(url, "Bad Id", tok, nats.NoReconnect()); err == nil {
		t.Error("a bad agent id was accepted")
	}
	// Plain TCP without TLS, or the controller's user name, never get in.
	if nc, err := nats.Connect(url, nats.UserInfo(controllerUser, tok.Secret), nats.Secure(tok.AgentTLS()), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("the controller's user name with the join secret was accepted")
	}
	if nc, err := nats.Connect(url, nats.UserInfo("edge-4", tok.Secret), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("a connection without TLS was accepted")
	}

	// Each refusal is logged with its reason and where it came from, never with a secret.
	log := logged.String()
	for _, want := range []string{"already connected", "wrong join secret", "wrong controller secret", "remote=127.0.0.1:"} {
		if !strings.Contains(log, want) {
			t.Errorf("no refusal logged with %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, tok.Secret) || strings.Contains(log, bad.Secret) {
		t.Errorf("a secret was logged:\n%s", log)
	}

	// Once the first connection is gone, the id can join again.
	a1.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := ConnectAgent(url, "edge-1", tok, nats.NoReconnect())
		if err == nil {
			a.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("edge-1 could not join again after its first connection closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseToken(t *testing.T) {
	good := "vly1." + strings.Repeat("s", 43) + "." + strings.Repeat("ab", 32)
	if tok, err := ParseToken("  " + good + "\n"); err != nil || tok.Fingerprint[0] != 0xab {
		t.Fatalf("%v %v", tok, err)
	}
	for in, want := range map[string]string{
		"":                              "has the form",
		"vly2.x.y":                      "has the form",
		"vly1.short." + good[49:]:       "too short",
		"vly1." + good[5:48] + ".zz":    "not 64 hex digits",
		"vly1." + good[5:48] + ".abcd1": "not 64 hex digits",
	} {
		if _, err := ParseToken(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseToken(%q) = %v, want %q", in, err, want)
		}
	}
	if ValidAgentID("-x") || ValidAgentID("") || ValidAgentID(strings.Repeat("a", 64)) || !ValidAgentID("agent-7") {
		t.Error("ValidAgentID")
	}
}

// Port 0 means a free port chosen by the OS (nats-server alone would take 0 as 4222): two brokers
// on 127.0.0.1:0 both start, on different ports.
func TestListenPortZeroIsAFreePort(t *testing.T) {
	a := startBus(t, Config{AgentsListen: "127.0.0.1:0"})
	b := startBus(t, Config{AgentsListen: "127.0.0.1:0"})
	if a.AgentsAddr() == b.AgentsAddr() || strings.HasSuffix(a.AgentsAddr(), ":0") {
		t.Fatalf("addresses %s and %s", a.AgentsAddr(), b.AgentsAddr())
	}
}

// An agents listener on a port already taken fails Start at once with the bind error naming the
// address, not after the 10 s the broker is given to become ready; the port's holder keeps it.
func TestListenOnATakenPortFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	t0 := time.Now()
	b, err := Start(Config{AgentsListen: addr})
	took := time.Since(t0)
	if err == nil {
		b.Close()
		t.Fatalf("Start on the taken %s: no error", addr)
	}
	// typically ~50 ms; 8 s leaves a loaded machine its margin and stays under the old 10 s
	if !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), addr) || took > 8*time.Second {
		t.Fatalf("Start on the taken %s: %v after %s, want the bind error naming it at once", addr, err, took)
	}
	if c, err := net.Dial("tcp", addr); err != nil {
		t.Fatalf("the port's holder lost it: %v", err)
	} else {
		c.Close()
	}
}

// A flood of refusals logs at most refusalBurst lines per refusalWindow; the next logged line
// counts those left out. A nil Refusals logs nothing.
func TestRefusalsAreRateLimited(t *testing.T) {
	var out testutil.SyncBuffer
	now := time.Unix(1000, 0)
	r := NewRefusals(slog.New(slog.NewTextHandler(&out, nil)))
	r.now = func() time.Time { return now }
	for range 3 * refusalBurst {
		r.Refused("agent connection refused", "agent", "x")
	}
	if n := strings.Count(out.String(), "\n"); n != refusalBurst {
		t.Fatalf("%d lines for %d refusals in one window, want %d:\n%s", n, 3*refusalBurst, refusalBurst, out.String())
	}
	now = now.Add(refusalWindow)
	r.Refused("agent connection refused", "agent", "y")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; len(lines) != refusalBurst+1 || !strings.Contains(last, "agent=y") || !strings.Contains(last, fmt.Sprintf("not_logged_before=%d", 2*refusalBurst)) {
		t.Errorf("the next window's first line %q (%d lines)", last, len(lines))
	}
	var none *Refusals
	none.Refused("nothing") // must not panic
	NewRefusals(nil).Refused("nothing")
	if long := clipID(strings.Repeat("é", 40)); len(long) > 64+len("…") || !utf8.ValidString(long) {
		t.Errorf("clipID gave %q", long)
	}
}

// A plain (non-TLS) client on the agents listener fails the TLS handshake: logged as a refused
// agent connection naming its address and why, with the others' rate limit.
func TestPlainConnectionIsLogged(t *testing.T) {
	var logged testutil.SyncBuffer
	b := startBus(t, Config{AgentsListen: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(&logged, nil))})
	c, err := net.Dial("tcp", b.AgentsAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n') // the broker's INFO, plain, saying tls_required
	if err != nil || !strings.Contains(line, `"tls_required":true`) {
		t.Fatalf("INFO %q %v", line, err)
	}
	if _, err := c.Write([]byte("CONNECT {}\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, c) // until the broker closes it
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logged.String(), "agent connection refused"); {
		if time.Now().After(deadline) {
			t.Fatalf("not logged: %q", logged.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	l := logged.String()
	if !strings.Contains(l, "remote="+c.LocalAddr().String()) || !strings.Contains(l, "TLS handshake") || !strings.Contains(l, "TLS only") {
		t.Errorf("logged %q", l)
	}
}
