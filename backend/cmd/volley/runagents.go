package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// `volley run --agents N`: the headless run over agents (docs/scale-out.md, "volley run over
// agents"). The run starts the embedded broker with its TLS agents listener (or connects to an
// external NATS with --nats), prints the join command, waits (bounded) for the agents, runs the
// plan over them with the coordinator and prints the merged summary.

// exitDegraded is `volley run`'s status when an agent was lost during the run (its share of
// every later second is missing) and --allow-agent-loss was not given.
const exitDegraded = 5

// agentRun are `volley run`'s agents flags.
type agentRun struct {
	n         int           // --agents
	labels    string        // --agent-labels
	listen    string        // --agents-listen
	wait      time.Duration // --agents-wait
	allowLoss bool          // --allow-agent-loss
	nats      bus.External  // --nats, --nats-creds, --nats-nkey

	picked map[string]string // parsed --agent-labels
	poll   time.Duration     // how often the registry is read while waiting (tests shorten it)
}

var runAgents = agentRun{listen: "0.0.0.0:4222", wait: time.Minute, poll: 100 * time.Millisecond}

func (a *agentRun) flag(c *cobra.Command) {
	c.Flags().IntVar(&a.n, "agents", 0, "run over this many volley agents instead of this process (waits for them; see --agents-wait)")
	c.Flags().StringVar(&a.labels, "agent-labels", "", "run over the agents with these labels, k=v,k=v (with --agents: that many of them; alone: every matching agent once one is there)")
	c.Flags().StringVar(&a.listen, "agents-listen", a.listen, "with --agents: the TLS listener agents join (HOST:PORT; :0 picks a free port)")
	c.Flags().DurationVar(&a.wait, "agents-wait", a.wait, "with --agents: how long to wait for the agents before giving up (exit 3)")
	c.Flags().BoolVar(&a.allowLoss, "allow-agent-loss", false, "with --agents: exit 0 (or the thresholds' status) even when an agent was lost during the run (otherwise exit 5)")
	controllerNATSFlags(c, &a.nats)
}

// on reports whether the run goes over agents.
func (a *agentRun) on() bool { return a.n != 0 || a.labels != "" }

// check validates the flags (a usage error: exit 2), before any load or listener.
func (a *agentRun) check(c *cobra.Command) error {
	if c.Flags().Changed("agents") && a.n == 0 { // an explicit 0 is no count, not "run locally"
		return usageError{errors.New("--agents 0: 1-1000 agents (leave --agents out to run in this process)")}
	}
	if !a.on() {
		for _, f := range []string{"agents-listen", "agents-wait", "allow-agent-loss", "nats", "nats-creds", "nats-nkey", "nats-ca"} {
			if c.Flags().Changed(f) {
				return usageError{fmt.Errorf("--%s is for a run over agents: add --agents N or --agent-labels k=v", f)}
			}
		}
		return nil
	}
	if a.n < 0 || a.n > 1000 {
		return usageError{fmt.Errorf("--agents %d: 1-1000 agents", a.n)}
	}
	lb, err := parseLabels(a.labels)
	if err != nil {
		return usageError{fmt.Errorf("--agent-labels: %w", err)}
	}
	a.picked = lb
	if a.wait <= 0 {
		return usageError{fmt.Errorf("--agents-wait %s: a positive duration, e.g. 60s", a.wait)}
	}
	listen := a.listen
	if a.nats.URL != "" && !c.Flags().Changed("agents-listen") {
		listen = "" // the default listener is not asked for: the external NATS replaces it
	}
	if err := checkControllerNATS(a.nats, listen); err != nil {
		return err
	}
	if a.nats.URL == "" {
		if err := checkListen("--agents-listen", a.listen); err != nil {
			return err
		}
	}
	return nil
}

// checkListen validates a listen address flag, HOST:PORT, before anything starts: a usage error
// (exit 2) naming the flag when it does not split, its port is not a number 0-65535 or its host
// is neither an IP address nor a host name.
func checkListen(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError{fmt.Errorf("%s %q: %w (HOST:PORT, e.g. 0.0.0.0:4222)", flag, addr, err)}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 || strconv.Itoa(p) != port {
		return usageError{fmt.Errorf("%s %q: port %q is not a number from 0 to 65535", flag, addr, port)}
	}
	if _, err := netip.ParseAddr(host); host != "" && err != nil && !hostName(host) {
		return usageError{fmt.Errorf("%s %q: host %q is neither an IP address nor a host name", flag, addr, host)}
	}
	return nil
}

// hostName reports whether s is a syntactically valid DNS host name: dot-separated labels of
// 1-63 letters, digits, '-' or '_', 253 bytes at most.
func hostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// start brings up the broker side: the embedded broker with its listener (printing the join
// command on w) or the external NATS's connection, and the registry.
func (a *agentRun) start(w io.Writer) (*agentsCtl, error) {
	// A refused agent (wrong token, taken id, another release) is said while waiting for agents.
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if a.nats.URL != "" {
		ag, err := startAgentsExternal(a.nats, log)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "waiting for agents on %s (they join with their own credentials: volley agent --nats %s --nkey SEED_FILE --id ID)\n", ag.URL(), ag.URL())
		return ag, nil
	}
	ag, err := startAgents(a.listen, "", log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "agents join with:\n    VOLLEY_JOIN_TOKEN=%s volley agent --nats %s\n", ag.JoinToken(), ag.URL())
	return ag, nil
}

// joinURL is the URL agents dial for a listener bound at addr: an unspecified host (0.0.0.0, ::)
// is replaced by this machine's name.
func joinURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "nats://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return "nats://" + net.JoinHostPort(host, port)
}

// matching is the idle agents of list that carry every one of labels, by id.
func matching(list []cluster.Agent, labels map[string]string) []string {
	var ids []string
	for _, g := range list {
		if g.State != "idle" {
			continue
		}
		ok := true
		for k, v := range labels {
			if g.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			ids = append(ids, g.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// enough reports whether ids satisfy the flags: n of them, or (labels alone) at least one.
func (a *agentRun) enough(ids []string) bool {
	if a.n > 0 {
		return len(ids) >= a.n
	}
	return len(ids) >= 1
}

// waitAgents says on w how long it waits for what, then polls list until enough matching idle
// agents are there, printing each newcomer on w; after a.wait (or ctx's end) it fails naming how
// many came and which.
func (a *agentRun) waitAgents(ctx context.Context, w io.Writer, list func() []cluster.Agent) error {
	fmt.Fprintf(w, "waiting up to %s for %s\n", a.wait, a.wanted())
	deadline := time.NewTimer(a.wait)
	defer deadline.Stop()
	tick := time.NewTicker(a.poll)
	defer tick.Stop()
	seen := map[string]bool{}
	for {
		ids := matching(list(), a.picked)
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				fmt.Fprintf(w, "agent %s is ready (%d%s)\n", id, len(seen), a.of())
			}
		}
		if a.enough(ids) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while waiting for agents: %s", a.came(ids, list()))
		case <-deadline.C:
			return fmt.Errorf("the agents did not come within --agents-wait %s: %s", a.wait, a.came(ids, list()))
		case <-tick.C:
		}
	}
}

// of is " of N" when a number of agents was asked for.
func (a *agentRun) of() string {
	if a.n > 0 {
		return fmt.Sprintf(" of %d", a.n)
	}
	return ""
}

// wanted is the agents asked for, in words: "3 agents", "an agent with labels zone=eu".
func (a *agentRun) wanted() string {
	want := plural(a.n, "agent", "agents")
	if a.n == 0 {
		want = "an agent"
	}
	if len(a.picked) > 0 {
		want += " with labels " + labelText(a.picked)
	}
	return want
}

// came says how many agents came against what was asked, and which.
func (a *agentRun) came(ids []string, all []cluster.Agent) string {
	msg := fmt.Sprintf("%d came, %s asked for", len(ids), a.wanted())
	if len(ids) > 0 {
		msg += " (" + strings.Join(ids, ", ") + ")"
	}
	if others := len(all) - len(ids); others > 0 {
		if others == 1 {
			msg += "; 1 other agent is busy or does not match"
		} else {
			msg += fmt.Sprintf("; %d other agents are busy or do not match", others)
		}
	}
	return msg
}

// plural is n with the noun in the number n asks for: "1 agent", "2 agents".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func labelText(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// run starts the broker side, waits for the agents and runs c over them, handing each merged
// second to onSecond and setting *started when the run begins. An error before the run (no
// broker, too few agents, a refusal at prepare) has no summary.
func (a *agentRun) run(ctx context.Context, stderr io.Writer, c *plan.Compiled, onSecond func(metrics.Sample), started *time.Time) (*metrics.Summary, error) {
	ag, err := a.start(stderr)
	if err != nil {
		return nil, err
	}
	defer ag.Close()
	if err := a.waitAgents(ctx, stderr, ag.List); err != nil {
		return nil, err
	}
	picked, err := ag.Pick(a.n, a.picked)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	co, err := cluster.NewCoordinator(ag.nc, ag.Registry, log)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(picked))
	for i, g := range picked {
		ids[i] = g.ID
	}
	fmt.Fprintf(stderr, "running over %s: %s\n", plural(len(picked), "agent", "agents"), strings.Join(ids, ", "))
	*started = time.Now()
	return co.Run(ctx, cluster.RunSpec{Run: time.Now().UnixMilli(), Plan: c, Agents: picked}, cluster.RunHooks{OnSecond: onSecond})
}

// printAgents adds a run over agents to the summary table: how many, their start skew, and the
// agents lost during the run.
func printAgents(w io.Writer, s *metrics.Summary) {
	if s.Agents == 0 {
		return
	}
	line := fmt.Sprintf("agents\t%d", s.Agents)
	if s.StartSkewMs != nil {
		line += fmt.Sprintf("\tstart skew %.1f ms", *s.StartSkewMs)
	}
	fmt.Fprintln(w, line)
	if s.Degraded {
		whose := "its"
		if len(s.LostAgents) > 1 {
			whose = "their"
		}
		fmt.Fprintf(w, "degraded\tlost %s: %s share of every later second is missing\n", strings.Join(s.LostAgents, ", "), whose)
	}
}

// degradedExit is the exit for a run that lost an agent: exitDegraded with a message, or nil
// when nothing was lost or --allow-agent-loss accepts it.
func (a *agentRun) degradedExit(stderr io.Writer, s *metrics.Summary) error {
	if !s.Degraded {
		return nil
	}
	if a.allowLoss {
		fmt.Fprintf(stderr, "volley: run degraded (lost %s), accepted by --allow-agent-loss\n", strings.Join(s.LostAgents, ", "))
		return nil
	}
	fmt.Fprintf(stderr, "volley: run degraded: lost %s during the run (--allow-agent-loss accepts that)\n", strings.Join(s.LostAgents, ", "))
	return exitCode(exitDegraded)
}
