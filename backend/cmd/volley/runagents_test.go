package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/cluster"
	"github.com/volley-load/volley/backend/internal/metrics"
	"github.com/volley-load/volley/backend/internal/plan"
)

// arrivals is a registry whose agents appear at the given times after start (synctest's clock).
func arrivals(start time.Time, at map[time.Duration]cluster.Agent) func() []cluster.Agent {
	return func() []cluster.Agent {
		var l []cluster.Agent
		for d, g := range at {
			if time.Since(start) >= d {
				l = append(l, g)
			}
		}
		return l
	}
}

func idle(id string, labels map[string]string) cluster.Agent {
	return cluster.Agent{ID: id, State: "idle", Labels: labels}
}

// The wait says first how long it waits for how many agents (with which labels), ends as soon as
// enough matching idle agents are listed (a busy one does not count), naming each as it comes; it gives up exactly at --agents-wait naming who came; labels alone
// wait for one matching agent; Ctrl-C ends it.
func TestWaitAgents(t *testing.T) {
	busy := cluster.Agent{ID: "gen-2", State: "running"}
	cases := []struct {
		name    string
		a       agentRun
		at      map[time.Duration]cluster.Agent
		took    time.Duration
		err     string
		printed []string
	}{
		{name: "two of three arrive, one busy", a: agentRun{n: 2, wait: time.Minute},
			at:   map[time.Duration]cluster.Agent{time.Second: idle("gen-1", nil), 3 * time.Second: busy, 5 * time.Second: idle("gen-3", nil)},
			took: 5 * time.Second, printed: []string{"waiting up to 1m0s for 2 agents\n", "agent gen-1 is ready (1 of 2)", "agent gen-3 is ready (2 of 2)"}},
		{name: "too few within the wait", a: agentRun{n: 3, wait: 10 * time.Second},
			at:   map[time.Duration]cluster.Agent{time.Second: idle("gen-1", nil), 3 * time.Second: busy, 5 * time.Second: idle("gen-3", nil), 11 * time.Second: idle("gen-4", nil)},
			took: 10 * time.Second, err: "did not come within --agents-wait 10s: 2 came, 3 agents asked for (gen-1, gen-3); 1 other agent is busy or does not match",
			printed: []string{"waiting up to 10s for 3 agents\n"}},
		{name: "labels alone: the first match", a: agentRun{picked: map[string]string{"zone": "eu"}, wait: time.Minute},
			at:   map[time.Duration]cluster.Agent{time.Second: idle("gen-1", map[string]string{"zone": "us"}), 4 * time.Second: idle("gen-5", map[string]string{"zone": "eu", "rack": "3"})},
			took: 4 * time.Second, printed: []string{"waiting up to 1m0s for an agent with labels zone=eu\n", "agent gen-5 is ready (1)"}},
		{name: "labels: none match", a: agentRun{n: 2, picked: map[string]string{"zone": "eu"}, wait: 3 * time.Second},
			at:   map[time.Duration]cluster.Agent{time.Second: idle("gen-1", map[string]string{"zone": "us"})},
			took: 3 * time.Second, err: "0 came, 2 agents with labels zone=eu asked for; 1 other agent is busy or does not match",
			printed: []string{"waiting up to 3s for 2 agents with labels zone=eu\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c.a.poll = 100 * time.Millisecond
				var out bytes.Buffer
				start := time.Now()
				err := c.a.waitAgents(context.Background(), &out, arrivals(start, c.at))
				if took := time.Since(start); took < c.took || took > c.took+c.a.poll {
					t.Errorf("took %s, want %s", took, c.took)
				}
				if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
					t.Errorf("err %v, want %q", err, c.err)
				}
				for _, p := range c.printed {
					if !strings.Contains(out.String(), p) {
						t.Errorf("output %q lacks %q", out.String(), p)
					}
				}
				if !strings.HasPrefix(out.String(), "waiting up to ") { // said before waiting
					t.Errorf("output %q does not begin with the wait", out.String())
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(2*time.Second, cancel)
		a := agentRun{n: 1, wait: time.Minute, poll: 100 * time.Millisecond}
		err := a.waitAgents(ctx, &bytes.Buffer{}, func() []cluster.Agent { return nil })
		if err == nil || !strings.Contains(err.Error(), "stopped while waiting for agents: 0 came, 1 agent asked for") {
			t.Errorf("Ctrl-C: %v", err)
		}
	})
	// Two others busy: plural again.
	a := agentRun{n: 1}
	if got := a.came(nil, []cluster.Agent{busy, {ID: "gen-9", State: "running"}}); got != "0 came, 1 agent asked for; 2 other agents are busy or do not match" {
		t.Errorf("came: %q", got)
	}
}

// A degraded run exits 5 unless --allow-agent-loss; the summary names the agents and lost ones.
func TestDegradedExit(t *testing.T) {
	skew := 3.25
	sum := &metrics.Summary{Agents: 3, Degraded: true, LostAgents: []string{"gen-2"}, StartSkewMs: &skew}
	var out bytes.Buffer
	err := (&agentRun{}).degradedExit(&out, sum)
	var ec exitCode
	if !errors.As(err, &ec) || ec != exitDegraded || !strings.Contains(out.String(), "lost gen-2 during the run") {
		t.Errorf("degraded: %v %q", err, out.String())
	}
	out.Reset()
	if err := (&agentRun{allowLoss: true}).degradedExit(&out, sum); err != nil || !strings.Contains(out.String(), "accepted by --allow-agent-loss") {
		t.Errorf("allowed: %v %q", err, out.String())
	}
	if err := (&agentRun{}).degradedExit(&out, &metrics.Summary{Agents: 3}); err != nil {
		t.Errorf("complete run: %v", err)
	}
	out.Reset()
	printAgents(&out, sum)
	if got := out.String(); got != "agents\t3\tstart skew 3.2 ms\ndegraded\tlost gen-2: its share of every later second is missing\n" {
		t.Errorf("summary lines %q", got)
	}
	out.Reset()
	printAgents(&out, &metrics.Summary{Agents: 3, Degraded: true, LostAgents: []string{"gen-2", "gen-3"}})
	if got := out.String(); !strings.Contains(got, "lost gen-2, gen-3: their share of every later second is missing") {
		t.Errorf("two lost: %q", got)
	}
	out.Reset()
	printAgents(&out, &metrics.Summary{})
	if out.Len() != 0 {
		t.Errorf("a local run printed %q", out.String())
	}
}

// A degraded run's summary says so on its outcome line, and each second after the loss says on its
// progress line what share of the load it lacks; a complete run's lines say neither.
func TestDegradedOutcomeAndProgress(t *testing.T) {
	p := &plan.Plan{Name: "p"}
	for _, degraded := range []bool{true, false} {
		var out bytes.Buffer
		printSummaryAs(&out, p, &metrics.Summary{Requests: 10, Successes: 10, Agents: 3, Degraded: degraded, LostAgents: []string{"gen-2"}}, "finished")
		line, _, _ := strings.Cut(strings.SplitN(out.String(), "outcome", 2)[1], "\n")
		if got := strings.Contains(strings.ToLower(line), "passed, degraded"); got != degraded {
			t.Errorf("degraded %v: outcome line %q", degraded, line)
		}
		share := 0.0
		if degraded {
			share = 1.0 / 3
		}
		prog := progressLine(metrics.Sample{ElapsedS: 12, MissingShare: share}, 100, 0)
		if got := strings.Contains(prog, "missing 33% (agent lost)"); got != degraded {
			t.Errorf("degraded %v: progress line %q", degraded, prog)
		}
	}
}

// Flag checks: usage errors (exit 2) before anything starts.
func TestAgentRunFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string // "" valid
	}{
		{nil, ""},
		{[]string{"--agents", "3"}, ""},
		{[]string{"--agent-labels", "zone=eu,rack=3"}, ""},
		{[]string{"--agents", "2", "--nats", "nats://n:4222", "--nats-creds", "c.creds"}, ""},
		{[]string{"--allow-agent-loss"}, "--allow-agent-loss is for a run over agents"},
		{[]string{"--nats", "nats://n:4222"}, "--nats is for a run over agents"},
		{[]string{"--agents", "1001"}, "1-1000 agents"},
		{[]string{"--agents", "-1"}, "1-1000 agents"},
		{[]string{"--agents", "0"}, "--agents 0: 1-1000 agents"}, // explicit 0: not a local run
		{[]string{"--agents", "0", "--agent-labels", "zone=eu"}, "--agents 0: 1-1000 agents"},
		{[]string{"--agents", "2", "--agents-listen", "127.0.0.1:99999"}, `port "99999" is not a number from 0 to 65535`},
		{[]string{"--agents", "2", "--agents-listen", "127.0.0.1:-1"}, `port "-1"`},
		{[]string{"--agents", "2", "--agents-listen", "127.0.0.1:nats"}, `port "nats"`},
		{[]string{"--agents", "2", "--agents-listen", "bad host:4222"}, `host "bad host"`},
		{[]string{"--agents", "2", "--agents-listen", "127.0.0.1:0"}, ""},
		{[]string{"--agents", "2", "--agents-listen", ":4222"}, ""},
		{[]string{"--agents", "2", "--agents-listen", "[::1]:4222"}, ""},
		{[]string{"--agents", "2", "--agents-listen", "gen-1.example.com:4222"}, ""},
		{[]string{"--agents", "2", "--agents-wait", "-1s"}, "a positive duration"},
		{[]string{"--agent-labels", "zone"}, `"zone" is not key=value`},
		{[]string{"--agents", "2", "--agents-listen", "4222"}, "--agents-listen"},
		{[]string{"--agents", "2", "--nats", "nats://n:4222"}, "needs credentials"},
		{[]string{"--agents", "2", "--nats", "nats://n:4222", "--nats-creds", "c", "--nats-nkey", "k"}, "not both"},
		{[]string{"--agents", "2", "--nats-nkey", "k"}, "add --nats"},
		{[]string{"--agents", "2", "--nats-ca", "ca.pem"}, "add --nats"},
		{[]string{"--agents", "2", "--nats", "tls://n:4222", "--nats-nkey", "k", "--nats-ca", "ca.pem"}, ""},
		{[]string{"--agents", "2", "--nats", "nats://n:4222", "--nats-nkey", "k", "--agents-listen", ":4222"}, "one or the other"},
	} {
		a := agentRun{listen: "0.0.0.0:4222", wait: time.Minute}
		cmd := &cobra.Command{Use: "run"}
		a.flag(cmd)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		err := a.check(cmd)
		var ue usageError
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.err != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.err)
		}
	}
}

func TestJoinURL(t *testing.T) {
	if got := joinURL("127.0.0.1:4222"); got != "nats://127.0.0.1:4222" {
		t.Errorf("loopback: %s", got)
	}
	if got := joinURL("[::]:4222"); strings.Contains(got, "[::]") || !strings.HasSuffix(got, ":4222") {
		t.Errorf("unspecified: %s", got)
	}
}
