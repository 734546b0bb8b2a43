package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// The command line of scale-out (issue 14): `volley run --agents N` waits for its agents (bounded,
// naming who came), runs over them and exits by their outcome; `--nats URL --nats-creds/--nats-nkey`
// on volley serve, volley run and volley agent use an external nats-server configured with the
// sample deploy/nats/nats-server.conf.

// natsServerPath is the real nats-server binary: $VOLLEY_E2E_NATS_SERVER, else nats-server on
// PATH (.ci/run installs it with go install at go.mod's version).
func natsServerPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VOLLEY_E2E_NATS_SERVER"); p != "" {
		requireTool(t, p)
		return p
	}
	p, err := exec.LookPath("nats-server")
	if err != nil {
		p = "/usr/local/bin/nats-server"
	}
	requireTool(t, p)
	return p
}

// waitLog waits until p's output matches re and returns the submatches; it fails after limit or
// when p exits first.
func waitLog(t *testing.T, p *proc, re *regexp.Regexp, limit time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if m := re.FindStringSubmatch(tail(p.log, 1<<20)); m != nil {
			return m
		}
		if p.exited() {
			t.Fatalf("%s exited (%v) before printing %s:\n%s", p.name, p.err, re, tail(p.log, 3000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %s within %s:\n%s", p.name, re, limit, tail(p.log, 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExit waits for p's exit and returns its status.
func waitExit(t *testing.T, p *proc, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("%s still running after %s:\n%s", p.name, limit, tail(p.log, 3000))
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return -1
}

var joinLine = regexp.MustCompile(`VOLLEY_JOIN_TOKEN=(vly1\.\S+) volley agent --nats (nats://\S+)`)

// countingTarget is a loopback HTTP target that counts its requests.
func countingTarget(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

// iterations is a per-vu-iterations load: vus × iters requests.
func iterations(vus, iters int) map[string]any {
	return map[string]any{"executor": "per-vu-iterations", "vus": vus, "iterations": iters}
}

// writePlan writes a plan of one GET of url with load, each VU pausing 20 ms between requests.
func writePlan(t *testing.T, url string, load map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{
		"name":       "agents cli",
		"requests":   []map[string]any{{"name": "get", "method": "GET", "url": url}},
		"load":       load,
		"think_time": "20ms",
	})
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// volley run --agents N waits for N agents and, when they do not all come within --agents-wait,
// exits 3 naming how many came and which; flags that need --agents are refused (exit 2).
func TestRunAgentsWaitsBounded(t *testing.T) {
	ts, hits := countingTarget(t)
	planPath := writePlan(t, ts.URL, iterations(2, 3))

	for _, bad := range [][]string{
		{"--agents-wait", "5s"}, // needs --agents
		{"--agents", "2", "--agents-wait", "0s"},
		{"--agents", "-1"},
		{"--agents", "1", "--nats", "nats://127.0.0.1:4222"}, // no credential
		{"--agents", "1", "--nats-nkey", "x.seed"},           // a credential without --nats
		{"--agents", "1", "--agent-labels", "zone"},          // not k=v
	} {
		code, _, stderr := runCLI(t, 30*time.Second, append([]string{"run", planPath}, bad...)...)
		if code != 2 || !strings.Contains(stderr, "--") {
			t.Errorf("volley run %v: exit %d, want 2; stderr:\n%s", bad, code, stderr)
		}
	}

	run := startProc(t, "volley-run", volleyBin, "run", planPath, "--agents", "3", "--agents-listen", "127.0.0.1:0", "--agents-wait", "10s")
	m := waitLog(t, run, joinLine, 30*time.Second)
	for _, id := range []string{"gen-1", "gen-2"} {
		startProc(t, "agent-"+id, volleyBin, "agent", "--nats", m[2], "--token", m[1], "--id", id)
	}
	waitLog(t, run, regexp.MustCompile(`agent gen-2 is ready \(2 of 3\)`), 10*time.Second)
	if code := waitExit(t, run, 30*time.Second); code != 3 {
		t.Fatalf("exit %d, want 3:\n%s", code, tail(run.log, 3000))
	}
	out := tail(run.log, 8000)
	if want := "did not come within --agents-wait 10s: 2 came, 3 agents asked for (gen-1, gen-2)"; !strings.Contains(out, want) {
		t.Errorf("stderr lacks %q:\n%s", want, out)
	}
	if hits.Load() != 0 {
		t.Errorf("the target got %d requests from a run that never started", hits.Load())
	}
}

// volley run --agents 2: agents join with the printed command, the plan runs over both (exactly
// its requests at the target) and the summary names two agents.
func TestRunOverAgents(t *testing.T) {
	ts, hits := countingTarget(t)
	planPath := writePlan(t, ts.URL, iterations(4, 5))
	run := startProc(t, "volley-run", volleyBin, "run", planPath, "--agents", "2", "--agents-listen", "127.0.0.1:0", "--agents-wait", "60s", "-q")
	m := waitLog(t, run, joinLine, 30*time.Second)
	for _, id := range []string{"gen-1", "gen-2"} {
		startProc(t, "agent-"+id, volleyBin, "agent", "--nats", m[2], "--token", m[1], "--id", id)
	}
	code := waitExit(t, run, 90*time.Second)
	out := tail(run.log, 1<<20)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, tail(run.log, 3000))
	}
	if !strings.Contains(out, "running over 2 agents: gen-1, gen-2") || !regexp.MustCompile(`(?m)^agents\s+2\b`).MatchString(out) {
		t.Errorf("no run over two agents in the output:\n%s", tail(run.log, 3000))
	}
	if got := hits.Load(); got != 20 {
		t.Errorf("the target got %d requests, want 4 VUs × 5 = 20", got)
	}
}

// nkeyUsers makes NKey users: their public keys in the environment variables the sample
// configuration reads (VOLLEY_<NAME>_NKEY) and their seeds in files, by name.
func nkeyUsers(t *testing.T, names ...string) (env []string, seeds map[string]string) {
	t.Helper()
	dir := t.TempDir()
	seeds = map[string]string{}
	for _, n := range names {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		seed, _ := kp.Seed()
		seeds[n] = filepath.Join(dir, n+".seed")
		if err := os.WriteFile(seeds[n], seed, 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "VOLLEY_"+strings.ToUpper(strings.ReplaceAll(n, "-", "_"))+"_NKEY="+pub)
	}
	return env, seeds
}

// startNATS runs the real nats-server with the sample configuration on a free loopback port (a
// command-line flag overrides the file's listen address) with its JetStream store in a temporary
// directory instead of /var/lib/nats, and returns its URL.
func startNATS(t *testing.T, env []string) (string, *proc) {
	t.Helper()
	urls, procs := startNATSCluster(t, env, 1)
	return urls[0], procs[0]
}

// startNATSCluster runs n real nats-servers from the sample configuration: with n > 1 each gets
// its own server_name and the cluster block the sample describes (routes to the others on
// loopback). It returns their URLs and processes.
func startNATSCluster(t *testing.T, env []string, n int) ([]string, []*proc) {
	t.Helper()
	bin := natsServerPath(t)
	b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "nats", "nats-server.conf"))
	if err != nil {
		t.Fatal(err)
	}
	const store, name = "store_dir: /var/lib/nats", "server_name: volley-nats-1"
	if !strings.Contains(string(b), store) || !strings.Contains(string(b), name) {
		t.Fatalf("the sample configuration lacks %q or %q", store, name)
	}
	ports, routes := make([]int, n), make([]int, n)
	for i := range n {
		ports[i], routes[i] = freePort(t), freePort(t)
	}
	var urls []string
	var procs []*proc
	for i := range n {
		c := strings.Replace(string(b), store, "store_dir: "+t.TempDir(), 1)
		if n > 1 {
			var rs []string
			for j, r := range routes {
				if j != i {
					rs = append(rs, fmt.Sprintf("nats://127.0.0.1:%d", r))
				}
			}
			c = strings.Replace(c, name, fmt.Sprintf("server_name: volley-nats-%d", i+1), 1)
			c += fmt.Sprintf("\ncluster {\n  name: volley\n  listen: 127.0.0.1:%d\n  routes: [%s]\n}\n", routes[i], strings.Join(rs, ", "))
		}
		conf := filepath.Join(t.TempDir(), "nats-server.conf")
		if err := os.WriteFile(conf, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, startProcEnv(t, fmt.Sprintf("nats-server-%d", i+1), env, bin, "-c", conf, "-a", "127.0.0.1", "-p", fmt.Sprint(ports[i])))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	for i, p := range procs {
		waitTCP(t, fmt.Sprintf("127.0.0.1:%d", ports[i]), p, 20*time.Second)
	}
	return urls, procs
}

// On a real nats-server with the sample configuration: volley serve --nats lists an agent that
// joins with its NKey; an agent claiming an id its key is not for is never listed; a key the
// server does not know cannot join (exit non-zero).
func TestServeAndAgentOnExternalNATS(t *testing.T) {
	env, seeds := nkeyUsers(t, "controller", "agent-1", "agent-2", "agent-3", "stranger")
	url, nsrv := startNATS(t, env[:4])

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startProc(t, "volley-serve", volleyBin, "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "v.db"),
		"--demo-target", "", "--nats", url, "--nats-nkey", seeds["controller"])
	s := &server{proc: p, base: "http://" + addr}
	waitHealthy(t, s, 30*time.Second)

	// agent-2's key with id agent-3: its inbox and presence subjects are agent-3's, which its
	// permissions refuse, so it is never listed.
	startProc(t, "agent-impostor", volleyBin, "agent", "--nats", url, "--nkey", seeds["agent-2"], "--id", "agent-3")
	startProc(t, "agent-1", volleyBin, "agent", "--nats", url, "--nkey", seeds["agent-1"], "--id", "agent-1", "--labels", "zone=a")
	l, took := waitAgents(t, s.base, "agent-1 listed", 10*time.Second, func(l agentsJSON) bool { return len(l.Agents) > 0 })
	t.Logf("agent-1 listed %s after volley serve was up", took.Round(time.Millisecond))
	if !slices.Equal(l.ids(), []string{"agent-1"}) || l.Agents[0].Labels["zone"] != "a" {
		t.Fatalf("agents %+v", l)
	}
	var tok struct{ Token, URL string }
	if st := apiDo(t, "GET", s.base+"/api/agents/token", nil, &tok); st != 200 || tok.Token != "" || tok.URL != url {
		t.Errorf("token on an external NATS: %d %+v (want no token, the NATS URL)", st, tok)
	}
	stranger := startProc(t, "agent-stranger", volleyBin, "agent", "--nats", url, "--nkey", seeds["stranger"], "--id", "agent-2")
	if code := waitExit(t, stranger, 30*time.Second); code == 0 || !strings.Contains(tail(stranger.log, 2000), "cannot join") {
		t.Errorf("an unknown key: exit %d\n%s", code, tail(stranger.log, 2000))
	}
	// The server refused the impostor its inbox (so its hello is never answered) and it is not listed.
	waitLog(t, nsrv, regexp.MustCompile(`Subscription Violation - Subject "_INBOX_agent-3\.`), 10*time.Second)
	if l, _ := waitAgents(t, s.base, "list", time.Second, func(agentsJSON) bool { return true }); !slices.Equal(l.ids(), []string{"agent-1"}) {
		t.Errorf("agents %v, want only agent-1", l.ids())
	}
}

// volley run --agents 1 over a real nats-server: it connects as the controller with its NKey,
// the agent joins with its own, and the run goes over it.
func TestRunOverExternalNATS(t *testing.T) {
	env, seeds := nkeyUsers(t, "controller", "agent-1", "agent-2", "agent-3")
	url, _ := startNATS(t, env)
	ts, hits := countingTarget(t)
	planPath := writePlan(t, ts.URL, iterations(2, 5))
	run := startProc(t, "volley-run", volleyBin, "run", planPath, "--agents", "1", "--nats", url, "--nats-nkey", seeds["controller"], "--agents-wait", "60s", "-q")
	waitLog(t, run, regexp.MustCompile(`waiting for agents on `+regexp.QuoteMeta(url)), 30*time.Second)
	startProc(t, "agent-1", volleyBin, "agent", "--nats", url, "--nkey", seeds["agent-1"], "--id", "agent-1")
	waitLog(t, run, regexp.MustCompile(`agent agent-1 is ready \(1 of 1\)`), 30*time.Second)
	code := waitExit(t, run, 90*time.Second)
	if code != 0 || hits.Load() != 10 {
		t.Fatalf("exit %d, target got %d requests (want 0, 10):\n%s", code, hits.Load(), tail(run.log, 3000))
	}
}

// Two volley run --agents 1 in a row over a real nats-server and one long-running agent (a CI
// pipeline's): the agent stays connected between them, so it never reconnects; the second run's
// controller hears its beats, asks it to say hello again, and the run goes over it.
func TestSecondRunOverExternalNATS(t *testing.T) {
	env, seeds := nkeyUsers(t, "controller", "agent-1", "agent-2", "agent-3")
	url, _ := startNATS(t, env)
	ts, hits := countingTarget(t)
	planPath := writePlan(t, ts.URL, iterations(2, 5))
	agent := startProc(t, "agent-1", volleyBin, "agent", "--nats", url, "--nkey", seeds["agent-1"], "--id", "agent-1")
	for i := 1; i <= 2; i++ {
		run := startProc(t, fmt.Sprintf("volley-run-%d", i), volleyBin, "run", planPath, "--agents", "1", "--nats", url, "--nats-nkey", seeds["controller"], "--agents-wait", "60s", "-q")
		waitLog(t, run, regexp.MustCompile(`agent agent-1 is ready \(1 of 1\)`), 30*time.Second)
		if code := waitExit(t, run, 90*time.Second); code != 0 || hits.Load() != int64(10*i) {
			t.Fatalf("run %d: exit %d, target got %d requests (want 0, %d):\n%s", i, code, hits.Load(), 10*i, tail(run.log, 3000))
		}
	}
	if strings.Contains(tail(agent.log, 1<<20), "reconnected") {
		t.Fatalf("the agent reconnected (the second run must hear it without):\n%s", tail(agent.log, 2000))
	}
}

// An agent killed during a run over agents: the run ends degraded, the summary names the lost
// agent and volley run exits 5 (--allow-agent-loss would accept it: TestDegradedExit).
func TestRunOverAgentsLosesOne(t *testing.T) {
	ts, _ := countingTarget(t)
	planPath := writePlan(t, ts.URL, map[string]any{"executor": "constant-vus", "vus": 2, "duration": "12s"})
	run := startProc(t, "volley-run", volleyBin, "run", planPath, "--agents", "2", "--agents-listen", "127.0.0.1:0", "--agents-wait", "60s")
	m := waitLog(t, run, joinLine, 30*time.Second)
	agents := map[string]*proc{}
	for _, id := range []string{"gen-1", "gen-2"} {
		agents[id] = startProc(t, "agent-"+id, volleyBin, "agent", "--nats", m[2], "--token", m[1], "--id", id)
	}
	waitLog(t, run, regexp.MustCompile(`running over 2 agents|not built yet|not enough idle agents`), 60*time.Second)
	waitLog(t, run, regexp.MustCompile(`(?m)^\s*2s/`), 30*time.Second) // the run's second progress line
	agents["gen-2"].kill(t)
	if code := waitExit(t, run, 90*time.Second); code != 5 {
		t.Fatalf("exit %d, want 5 (degraded):\n%s", code, tail(run.log, 3000))
	}
	out := tail(run.log, 1<<20)
	for _, want := range []string{"degraded", "lost gen-2", "--allow-agent-loss accepts that"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, tail(run.log, 3000))
		}
	}
}

// A run over agents on a real 3-node nats-server cluster (the sample configuration with its
// cluster block): the controller on node 3, each agent on another node; the run goes over both
// with exactly the plan's requests at the target.
func TestRunOverExternalNATSCluster(t *testing.T) {
	env, seeds := nkeyUsers(t, "controller", "agent-1", "agent-2", "agent-3")
	urls, _ := startNATSCluster(t, env, 3)
	waitJetStream(t, urls[2], seeds["controller"], 60*time.Second)
	ts, hits := countingTarget(t)
	planPath := writePlan(t, ts.URL, iterations(4, 5))
	run := startProc(t, "volley-run", volleyBin, "run", planPath, "--agents", "2", "--nats", urls[2], "--nats-nkey", seeds["controller"], "--agents-wait", "60s", "-q")
	waitLog(t, run, regexp.MustCompile(`waiting for agents on `), 30*time.Second)
	for i, id := range []string{"agent-1", "agent-2"} {
		startProc(t, id, volleyBin, "agent", "--nats", urls[i], "--nkey", seeds[id], "--id", id)
	}
	code := waitExit(t, run, 90*time.Second)
	if code != 0 || hits.Load() != 20 || !strings.Contains(tail(run.log, 1<<20), "running over 2 agents: agent-1, agent-2") {
		t.Fatalf("exit %d, target got %d requests (want 0, 20):\n%s", code, hits.Load(), tail(run.log, 3000))
	}
}

// waitJetStream waits until the controller's account has JetStream on the cluster at url (a new
// cluster elects its JetStream meta leader first).
func waitJetStream(t *testing.T, url, seed string, limit time.Duration) {
	t.Helper()
	js := jetStreamAs(t, url, seed)
	deadline := time.Now().Add(limit)
	for {
		_, err := js.AccountInfo()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("JetStream not available on the cluster after %s: %v", limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jetStreamAs connects to the NATS at url as the NKey seed's user (closed at the test's end) and
// returns its JetStream context.
func jetStreamAs(t *testing.T, url, seed string) nats.JetStreamContext {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	return js
}
