package bus

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestStateDirKeepsTheJoinToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agents")
	b1, err := Start(Config{AgentsListen: "127.0.0.1:0", StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	tok := b1.JoinToken()
	b1.Close()
	fi, err := os.Stat(filepath.Join(dir, IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600 (it holds the key and the join secret)", IdentityFile, fi.Mode().Perm())
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("state dir: %v %v, want mode 0700", di.Mode().Perm(), err)
	}

	// A restart (another port even) keeps the token, and an agent holding it joins.
	b2 := startBus(t, Config{AgentsListen: "127.0.0.1:0", StateDir: dir})
	if got := b2.JoinToken(); got != tok {
		t.Fatalf("token after a restart %q, want the first start's %q", got, tok)
	}
	parsed, err := ParseToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ConnectAgent("nats://"+b2.AgentsAddr(), "edge-1", parsed, nats.NoReconnect())
	if err != nil {
		t.Fatalf("agent with the token from before the restart: %v", err)
	}
	a.Close()

	// Without a state dir every start makes a new token; a set Secret overrides the file's.
	other := startBus(t, Config{AgentsListen: "127.0.0.1:0"})
	if other.JoinToken() == tok {
		t.Error("a bus without StateDir reused the token")
	}
	fixed := startBus(t, Config{AgentsListen: "127.0.0.1:0", StateDir: dir, Secret: "fixed-secret-0123456789"})
	if got, want := fixed.JoinToken(), "vly1.fixed-secret-0123456789."+tok[strings.LastIndex(tok, ".")+1:]; got != want {
		t.Errorf("with Secret: token %q, want %q (the file's certificate, the given secret)", got, want)
	}
}

func TestStateDirRefusesABadIdentity(t *testing.T) {
	dir := t.TempDir()
	b := startBus(t, Config{AgentsListen: "127.0.0.1:0", StateDir: dir})
	file := filepath.Join(dir, IdentityFile)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	otherDir := t.TempDir()
	o := startBus(t, Config{AgentsListen: "127.0.0.1:0", StateDir: otherDir})
	o.Close()
	other, err := os.ReadFile(filepath.Join(otherDir, IdentityFile))
	if err != nil {
		t.Fatal(err)
	}
	certOf := func(p []byte) string { return string(p[:bytes.Index(p, []byte("-----BEGIN PRIVATE KEY"))]) }
	keyAndSecret := func(p []byte) string { return string(p[bytes.Index(p, []byte("-----BEGIN PRIVATE KEY")):]) }
	secretOnly := func(p []byte) string { return string(p[bytes.Index(p, []byte("-----BEGIN "+pemSecret)):]) }
	keyOnly := strings.TrimSuffix(keyAndSecret(good), secretOnly(good))
	for name, content := range map[string]string{
		"empty":         "",
		"no secret":     certOf(good) + keyOnly,
		"another's key": certOf(good) + keyAndSecret(other),
		"short secret":  certOf(good) + keyOnly + "-----BEGIN " + pemSecret + "-----\nc2hvcnQ=\n-----END " + pemSecret + "-----\n",
		"not PEM":       "hello\n",
	} {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Start(Config{AgentsListen: "127.0.0.1:0", StateDir: dir})
		if err == nil || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: Start error %v, want one naming %s", name, err, file)
		}
		if now, _ := os.ReadFile(file); string(now) != content {
			t.Errorf("%s: the identity file was replaced", name)
		}
	}
}

func TestWriteJoinToken(t *testing.T) {
	b := startBus(t, Config{AgentsListen: "127.0.0.1:0"})
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteJoinToken(file); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil || string(got) != b.JoinToken()+"\n" {
		t.Fatalf("token file %q (%v), want the join token and a newline", got, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".token.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	local := startBus(t, Config{})
	if err := local.WriteJoinToken(filepath.Join(t.TempDir(), "token")); err == nil {
		t.Error("a bus without a listener wrote a join token")
	}
}
