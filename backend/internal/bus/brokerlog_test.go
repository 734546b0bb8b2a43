package bus

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// An agent holding the join token of the controller's earlier certificate (the controller started
// again with a new --agents-state, so a new certificate, on the same address) refuses the
// listener's certificate; the controller logs that refusal as a stale token, not as a client
// that does not speak TLS.
func TestStaleTokenIsLoggedAsSuch(t *testing.T) {
	first := startBus(t, Config{AgentsListen: "127.0.0.1:0", StateDir: filepath.Join(t.TempDir(), "before")})
	old, err := ParseToken(first.JoinToken())
	if err != nil {
		t.Fatal(err)
	}
	addr := first.AgentsAddr()
	first.Close()

	var logged testutil.SyncBuffer
	b := startBus(t, Config{AgentsListen: addr, StateDir: filepath.Join(t.TempDir(), "after"), Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if b.JoinToken() == first.JoinToken() {
		t.Fatal("a new state dir kept the token")
	}
	_, err = ConnectAgent("nats://"+addr, "edge-1", old, nats.NoReconnect())
	if cm := (*CertMismatchError)(nil); !errors.As(err, &cm) {
		t.Fatalf("the old token joined the new certificate, or failed otherwise: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logged.String(), "agent connection refused"); {
		if time.Now().After(deadline) {
			t.Fatalf("not logged: %q", logged.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	l := logged.String()
	if !strings.Contains(l, "bad certificate") || !strings.Contains(l, "the agent refused this listener's certificate: "+StaleTokenHint) ||
		strings.Contains(l, "TLS only") || strings.Contains(l, old.Secret) {
		t.Errorf("logged %q", l)
	}
}

// Each handshake failure the broker reports gets the hint of its reason: a certificate alert from
// the client is a stale token, anything else (a plain client, a probe that hangs up) is told the
// listener takes TLS only. The remote address and the reason are kept, the reason cut to 200 bytes.
func TestHandshakeHints(t *testing.T) {
	const stale, plain = "refused this listener's certificate", "the agents listener takes TLS only"
	for reason, want := range map[string]string{
		"tls: first record does not look like a TLS handshake": plain,
		"EOF":                                plain,
		"remote error: tls: bad certificate": stale,
		"remote error: tls: unknown certificate authority":              stale,
		"remote error: tls: protocol version not supported":             plain,
		"remote error: tls: bad certificate" + strings.Repeat("x", 300): stale,
	} {
		var logged testutil.SyncBuffer
		l := brokerLog{&Bus{refusals: NewRefusals(slog.New(slog.NewTextHandler(&logged, nil)))}}
		l.Errorf("%s - cid:%d - TLS handshake error: %s", "10.1.2.3:4567", 7, reason)
		got := logged.String()
		if !strings.Contains(got, "remote=10.1.2.3:4567") || !strings.Contains(got, "TLS handshake error: "+reason[:min(len(reason), 170)]) ||
			!strings.Contains(got, want) || len(got) > 800 {
			t.Errorf("%.60q: logged %q, want %q", reason, got, want)
		}
	}
}
