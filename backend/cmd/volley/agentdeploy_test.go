package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/volley-load/volley/backend/internal/bus"
)

// TestAgentIDFromHost: container host names (Docker's 12 hex digits of the container id, a
// Kubernetes pod's name) are valid agent ids as they are, so each compose or Deployment replica
// joins with its own id; other host names are made valid.
func TestAgentIDFromHost(t *testing.T) {
	for host, want := range map[string]string{
		"3f4e5a6b7c8d":                 "3f4e5a6b7c8d",                 // docker compose replica
		"volley-agent-5d8f7c9b4-x2x7k": "volley-agent-5d8f7c9b4-x2x7k", // Kubernetes Deployment pod
		"Gen_1.Example.COM":            "gen-1-example-com",
		"-lead":                        "lead",
		"":                             "agent",
		"ééé":                          "agent",
		strings.Repeat("a", 70):        strings.Repeat("a", 63),
		"node 7":                       "node7",
	} {
		got := agentIDFromHost(host)
		if got != want {
			t.Errorf("agentIDFromHost(%q) = %q, want %q", host, got, want)
		}
		if !bus.ValidAgentID(got) {
			t.Errorf("agentIDFromHost(%q) = %q is not a valid agent id", host, got)
		}
	}
}

func TestJoinTokenSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  vly1.from-file \r\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VOLLEY_JOIN_TOKEN", "vly1.from-env")
	for _, c := range []struct {
		flag, file, want string
		usage            bool // a usage error (exit status 2)
		errHas           string
	}{
		{flag: "vly1.from-flag", want: "vly1.from-flag"},
		{file: file, want: "vly1.from-file"},
		{want: "vly1.from-env"},
		{flag: "vly1.x", file: file, usage: true, errHas: "give one"},
		{file: filepath.Join(dir, "missing"), errHas: "--token-file"},
		{file: empty, errHas: "empty"},
	} {
		got, err := joinToken(c.flag, c.file)
		if c.errHas != "" {
			var u usageError
			if err == nil || !strings.Contains(err.Error(), c.errHas) || errors.As(err, &u) != c.usage {
				t.Errorf("joinToken(%q, %q): error %v, want one with %q (usage error: %v)", c.flag, c.file, err, c.errHas, c.usage)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("joinToken(%q, %q) = %q, %v; want %q", c.flag, c.file, got, err, c.want)
		}
	}
}

// TestServeKeepsTheJoinToken: serve with --agents-state and --join-token-file writes a token an
// agent joins with (TLS pinned on the listener's certificate), and a restart keeps it, so agents
// reading a token file or a Kubernetes Secret made once survive controller restarts.
func TestServeKeepsTheJoinToken(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "volley.db")
	state := filepath.Join(dir, "agents")
	tokenFile := filepath.Join(dir, "join", "token")
	if err := os.Mkdir(filepath.Dir(tokenFile), 0o700); err != nil {
		t.Fatal(err)
	}
	listenAddr := regexp.MustCompile(`agents listener.* addr=(\S+)`)
	var tokens []string
	for _, run := range []string{"first", "restart"} {
		t.Run(run, func(t *testing.T) {
			opts := defaultServeOpts()
			logs := &lockedBuffer{}
			opts.log = slog.New(slog.NewTextHandler(logs, nil))
			opts.agentsListen, opts.agentsState, opts.joinTokenFile = "127.0.0.1:0", state, tokenFile
			startServe(t, db, opts)
			m := listenAddr.FindStringSubmatch(logs.String())
			if m == nil {
				t.Fatalf("no agents listener address in the log:\n%s", logs)
			}
			tok, err := joinToken("", tokenFile)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := bus.ParseToken(tok)
			if err != nil {
				t.Fatalf("token file: %v", err)
			}
			nc, err := bus.ConnectAgent("nats://"+m[1], "edge-"+run, parsed, nats.NoReconnect())
			if err != nil {
				t.Fatalf("agent with the token file's token: %v", err)
			}
			nc.Close()
			tokens = append(tokens, tok)
		})
	}
	if len(tokens) == 2 && tokens[0] != tokens[1] {
		t.Errorf("the join token changed across a restart with --agents-state: %q then %q", tokens[0], tokens[1])
	}
	if _, err := os.Stat(filepath.Join(state, bus.IdentityFile)); err != nil {
		t.Errorf("--agents-state: %v", err)
	}

	opts := defaultServeOpts()
	opts.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.joinTokenFile = tokenFile
	var u usageError
	if err := serve(t.Context(), "127.0.0.1:0", db, "", adminInit{}, opts); !errors.As(err, &u) || !strings.Contains(err.Error(), "--agents-listen") {
		t.Errorf("--join-token-file without --agents-listen: %v, want a usage error naming --agents-listen", err)
	}
}
