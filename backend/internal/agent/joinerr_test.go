package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
)

// Each way of failing to join has its own hint: a certificate that is not the token's says the
// token is stale (get a new one), never that the id is taken; a wrong secret says a wrong secret
// or an id already connected; nothing listening says so.
func TestJoinErrorHints(t *testing.T) {
	c := startController(t)
	stale := c.tok
	stale.Fingerprint[0] ^= 0xff
	badSecret := c.tok
	badSecret.Secret = strings.Repeat("x", len(badSecret.Secret))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name    string
		url     string
		tok     bus.Token
		want    string
		notWant string
	}{
		{"certificate", c.url, stale, "is not the join token's", "--id"},
		{"secret", c.url, badSecret, "a wrong join secret, or an agent with this id is already connected: the controller's log names which", "GET /api/agents/token"},
		{"unreachable", closed, c.tok, "is the controller listening there", "--id"},
	} {
		err := Run(context.Background(), Config{URL: tc.url, Token: tc.tok, ID: "gen-1", Log: quiet()})
		if err == nil || !strings.Contains(err.Error(), "cannot join") || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.notWant) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.name == "certificate" && !strings.Contains(err.Error(), bus.StaleTokenHint) {
			t.Errorf("certificate: %v", err)
		}
	}
	// An id already connected gets the secret's hint (the broker says only "authorization violation").
	runAgent(t, Config{URL: c.url, Token: c.tok, ID: "gen-1"})
	waitList(t, c, "first agent listed", func(l []cluster.Agent) bool { return len(l) == 1 })
	if err := Run(context.Background(), Config{URL: c.url, Token: c.tok, ID: "gen-1", Log: quiet()}); err == nil ||
		!strings.Contains(err.Error(), "an agent with this id is already connected") {
		t.Errorf("id taken: %v", err)
	}
}

// The controller started again with a new --agents-state (a new data dir: a new certificate, on
// the same address): an agent holding the token of its earlier certificate cannot join, and both
// sides say the same thing — the agent's error and the controller's log line for the refused
// connection carry bus.StaleTokenHint (take the current token), not "the listener takes TLS only".
func TestStaleTokenSaidOnBothSides(t *testing.T) {
	before, err := bus.Start(bus.Config{AgentsListen: "127.0.0.1:0", StateDir: filepath.Join(t.TempDir(), "agents")})
	if err != nil {
		t.Fatal(err)
	}
	old, err := bus.ParseToken(before.JoinToken())
	if err != nil {
		t.Fatal(err)
	}
	addr := before.AgentsAddr()
	before.Close()
	logs := &syncBuf{}
	after, err := bus.Start(bus.Config{AgentsListen: addr, StateDir: filepath.Join(t.TempDir(), "agents"), Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(after.Close)

	err = Run(context.Background(), Config{URL: "nats://" + addr, Token: old, ID: "gen-1", Log: quiet()})
	var cm *bus.CertMismatchError
	if !errors.As(err, &cm) || !strings.Contains(err.Error(), "cannot join") || !strings.Contains(err.Error(), bus.StaleTokenHint) {
		t.Errorf("the agent's error: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "agent connection refused"); {
		if time.Now().After(deadline) {
			t.Fatalf("the controller logged nothing: %q", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if l := logs.String(); !strings.Contains(l, bus.StaleTokenHint) || strings.Contains(l, "TLS only") {
		t.Errorf("the controller's log: %q", l)
	}
}

// A joined agent whose listener comes back with another certificate (the controller's broker
// closed, another on the same address with a new one: a volley run --agents that ended and the
// next) gives up once the mismatch has lasted CertGiveUp — Run returns a *CertGoneError saying
// to get a new token — instead of retrying forever.
func TestAgentGivesUpOnAnotherCertificate(t *testing.T) {
	c := startController(t)
	done, _ := runAgent(t, Config{URL: c.url, Token: c.tok, ID: "gen-1", CertGiveUp: time.Nanosecond})
	waitList(t, c, "agent listed", func(l []cluster.Agent) bool { return len(l) == 1 })
	// The controller goes, another broker (a new certificate) takes its address.
	c.reg.Stop()
	c.nc.Close()
	c.b.Close()
	var err error
	if c.b, err = bus.Start(bus.Config{AgentsListen: strings.TrimPrefix(c.url, "nats://")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.b.Close)
	select {
	case err := <-done:
		var gone *CertGoneError
		var cm *bus.CertMismatchError
		if !errors.As(err, &gone) || !errors.As(err, &cm) || !strings.Contains(err.Error(), bus.StaleTokenHint) ||
			!strings.Contains(err.Error(), "giving up on "+c.url) {
			t.Fatalf("err %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent still retries a listener whose certificate is not its token's")
	}
}
