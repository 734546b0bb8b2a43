package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/agent"
	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/localagent"
)

func agentCmd() *cobra.Command {
	var (
		url, token, id, labels string
		tokenFile              string
		weightArg              = rawArg{s: "0", typ: "int"} // parsed in RunE: parseWeight
		allowTargets           entryList                    // empty entries kept: ParseTargets refuses them
		ext                    bus.External                 // an external NATS (natsflags.go)
	)
	c := &cobra.Command{
		Use:   "agent",
		Short: "Join a volley serve as a load generator (scale-out, work in progress)",
		Long: `Join the controller (volley serve --agents-listen ADDR) as a load generator: connect over
TLS with the join token the controller prints (or GET /api/agents/token), say hello and show up on
the Agents page. The agent reconnects forever if the controller goes away. It runs its share of the
plans the controller sends it; --allow-target limits the hosts those plans may aim at (HOST or
HOST:PORT entries, HOST an IP, CIDR, name or *.suffix; a URL without a port matches only entries
without one): a plan aimed elsewhere is refused, naming the host.`,
		Example: "  VOLLEY_JOIN_TOKEN=vly1.… volley agent --nats nats://10.0.0.5:4222 --labels zone=eu,rack=3",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, err := joinToken(token, tokenFile)
			if err != nil {
				return err
			}
			ext.URL = url
			external := ext.CredsFile != "" || ext.NKeyFile != "" // --nats-creds, --nkey (natsflags.go)
			if err := missingJoin(url == "", token == "" && !external); err != nil {
				return err
			}
			tok, err := agentAuth(token, cmd.Flags().Changed("token") || cmd.Flags().Changed("token-file"), ext)
			if err != nil {
				return err
			}
			if id == "" {
				id = defaultAgentID()
			}
			if err := checkAgentID(id); err != nil {
				return err
			}
			lb, err := parseLabels(labels)
			if err != nil {
				return usageError{fmt.Errorf("--labels: %w", err)}
			}
			weight, err := parseWeight(weightArg.s)
			if err != nil {
				return err
			}
			if _, err := agent.ParseTargets(allowTargets); err != nil {
				return usageError{fmt.Errorf("--allow-target: %w", err)}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			cfg := agent.Config{URL: url, Token: tok, ID: id, Labels: lb, Weight: weight, Version: version, Log: log,
				AllowTargets: allowTargets}
			if external {
				cfg.Connect = func(o ...nats.Option) (*nats.Conn, error) { return bus.ConnectExternalAgent(ext, id, o...) }
			}
			return agent.Run(ctx, cfg)
		},
	}
	c.Flags().StringVar(&url, "nats", "", "the controller's agents listener, nats://HOST:PORT")
	c.Flags().StringVar(&token, "token", "", "join token (vly1.…; default $VOLLEY_JOIN_TOKEN, which keeps it out of the process list)")
	c.Flags().StringVar(&tokenFile, "token-file", "", "read the join token from this file's first line (e.g. a mounted secret, or volley serve --join-token-file)")
	c.Flags().StringVar(&id, "id", "", "agent id, unique among the agents (default: this host's name made an id: lowercase, '.' and '_' as '-', other characters dropped, ≤ 63); a-z, 0-9, '-'")
	c.Flags().StringVar(&labels, "labels", "", "labels to pick agents by, k=v,k=v (at most 20; a key 1-63 bytes, a value at most 253)")
	c.Flags().Var(&weightArg, "weight", "share in a weighted split, 0-1000 (0: this machine's cores)")
	c.Flags().Var(&allowTargets, "allow-target", "the only hosts plans run on this agent may aim at: HOST or HOST:PORT, HOST an IP, CIDR, name or *.suffix (comma-separated or repeated; default: any the built-in target policy allows)")
	agentNATSFlags(c, &ext) // --nats-creds, --nkey (natsflags.go)
	return c
}

// missingJoin is the usage error naming what volley agent lacks to join (nil: nothing): the
// controller's URL (--nats), the join token (--token, --token-file or VOLLEY_JOIN_TOKEN), or both.
func missingJoin(url, token bool) error {
	const (
		nats = "--nats nats://HOST:PORT"
		tok  = "a join token (--token, --token-file, or the VOLLEY_JOIN_TOKEN environment variable)"
	)
	switch {
	case url && token:
		return usageError{fmt.Errorf("%s and %s are needed: volley serve --agents-listen prints both", nats, tok)}
	case url:
		return usageError{fmt.Errorf("%s is needed: where agents join the controller (volley serve --agents-listen prints it)", nats)}
	case token:
		return usageError{fmt.Errorf("%s is needed: volley serve --agents-listen prints it (GET /api/agents/token too)", tok)}
	}
	return nil
}

// joinToken is the agent's join token: flag (--token), else the first line of file
// (--token-file), else $VOLLEY_JOIN_TOKEN; "" if none. Both flags at once is a usage error.
func joinToken(flag, file string) (string, error) {
	switch {
	case flag != "" && file != "":
		return "", usageError{errors.New("--token and --token-file: give one")}
	case flag != "":
		return flag, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if line = strings.TrimSpace(line); line == "" {
			return "", fmt.Errorf("--token-file %s: the first line is empty", file)
		}
		return line, nil
	}
	return os.Getenv("VOLLEY_JOIN_TOKEN"), nil
}

// defaultAgentID is the host name in agent-id form (agentIDFromHost).
func defaultAgentID() string {
	h, _ := os.Hostname()
	return agentIDFromHost(h)
}

// agentIDFromHost makes a host name an agent id: lowercase, '.' and '_' become '-', other
// characters are dropped, leading '-' trimmed, cut to 63 ("agent" if nothing valid is left). A
// container's host name passes unchanged: Docker's is the container id's first 12 hex digits, a
// Kubernetes pod's is its name (a DNS label), so each replica gets its own id.
func agentIDFromHost(h string) string {
	h = strings.ToLower(h)
	var b strings.Builder
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r == '.' || r == '_':
			b.WriteByte('-')
		}
	}
	id := strings.TrimLeft(b.String(), "-")
	if len(id) > 63 {
		id = id[:63]
	}
	if !bus.ValidAgentID(id) {
		return "agent"
	}
	return id
}

// parseLabels parses "k=v,k=v" ("" is none): spaces around keys and values are trimmed, a key
// given twice is an error naming it, and the labels must keep cluster.CheckLabels' bounds (an
// agent's hello and a run's selection by labels follow the same ones). Errors clip what they quote.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if k, v = strings.TrimSpace(k), strings.TrimSpace(v); !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", bus.ClipID(strings.TrimSpace(kv)))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("key %q is given twice", bus.ClipID(k))
		}
		out[k] = v
	}
	if err := cluster.CheckLabels(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkAgentID refuses an --id that is not an agent id (a usage error quoting at most 64 bytes of
// it), one that looks like a join token without quoting it at all (a secret on stderr ends up in
// logs), and the in-process agent's id (localagent.ID, "local"), which would make the
// controller's log and Agents page name two machines alike.
func checkAgentID(id string) error {
	switch {
	case strings.HasPrefix(strings.TrimSpace(id), bus.TokenPrefix):
		return usageError{errors.New("--id looks like a join token; give it with --token (or --token-file, or VOLLEY_JOIN_TOKEN)")}
	case !bus.ValidAgentID(id):
		return usageError{fmt.Errorf("--id %q: an agent id is 1-63 of a-z, 0-9 and '-', not starting with '-'", bus.ClipID(id))}
	case id == localagent.ID:
		return usageError{fmt.Errorf("--id %q is the controller's own in-process agent's id (its single-machine runs); give this agent another (--id, or a host name other than %q)", id, id)}
	}
	return nil
}

// parseWeight parses --weight: a whole number from 0 to cluster.MaxWeight (a usage error saying
// so, whatever the value: 1e308, NaN, 2.5).
func parseWeight(s string) (int, error) {
	w, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || w < 0 || w > cluster.MaxWeight {
		return 0, usageError{fmt.Errorf("--weight must be a whole number from 0 to %d (0: this machine's cores)", cluster.MaxWeight)}
	}
	return w, nil
}

// rawArg is a flag kept as given (a pflag.Value; Type is what --help shows), to be parsed by the
// command with its own message rather than pflag's ("strconv.ParseInt: parsing …").
type rawArg struct{ s, typ string }

func (a *rawArg) String() string     { return a.s }
func (a *rawArg) Set(s string) error { a.s = s; return nil }
func (a *rawArg) Type() string       { return a.typ }

// entryList is a comma-separated, repeatable flag whose every entry is kept as given, empty ones
// included: --allow-target "" (an unset "$ALLOWED") or "a,,b" must be refused, where pflag's
// string slice would make "" no entry at all — and an empty --allow-target list allows any target.
type entryList []string

func (l *entryList) String() string     { return strings.Join(*l, ",") }
func (l *entryList) Set(s string) error { *l = append(*l, strings.Split(s, ",")...); return nil }
func (l *entryList) Type() string       { return "strings" }

// agentsCtl is volley serve's agents side (--agents-listen): the embedded broker with its TLS
// listener, the controller's connection and the agent registry (api.Agents).
type agentsCtl struct {
	*cluster.Registry
	b   *bus.Bus // nil on an external NATS (startAgentsExternal)
	nc  *nats.Conn
	url string // the external NATS's URL
}

// startAgents starts the broker listening for agents on addr and the registry on it; a stateDir
// keeps the join token across restarts (bus.Config.StateDir) and JetStream's file store in
// stateDir/jetstream (bus.Config.StoreDir: the runs' snapshots survive a controller restart).
// Refused connections and hellos are logged on log (nil: not logged).
func startAgents(addr, stateDir string, log *slog.Logger) (*agentsCtl, error) {
	cfg := bus.Config{AgentsListen: addr, StateDir: stateDir, Log: log}
	if stateDir != "" {
		cfg.StoreDir = filepath.Join(stateDir, "jetstream")
	}
	b, err := bus.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("--agents-listen: %w", err)
	}
	nc, err := b.Controller("controller")
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("--agents-listen: %w", err)
	}
	reg, err := cluster.Start(nc, version, nil)
	if err != nil {
		nc.Close()
		b.Close()
		return nil, fmt.Errorf("--agents-listen: %w", err)
	}
	reg.LogRefusals(log)
	return &agentsCtl{Registry: reg, b: b, nc: nc}, nil
}

// JoinToken is the embedded broker's join token; "" on an external NATS (agents use its credentials).
func (a *agentsCtl) JoinToken() string {
	if a.b == nil {
		return ""
	}
	return a.b.JoinToken()
}

// URL is the agents' --nats URL: the external NATS's, or the listener's with an unspecified bind
// host (0.0.0.0, ::) replaced by this machine's name (joinURL), as serve's log, GET
// /api/agents/token and the Agents page show it.
func (a *agentsCtl) URL() string {
	if a.b == nil {
		return a.url
	}
	return joinURL(a.b.AgentsAddr())
}

func (a *agentsCtl) Close() {
	a.Stop()
	a.nc.Close()
	if a.b != nil {
		a.b.Close()
	}
}
