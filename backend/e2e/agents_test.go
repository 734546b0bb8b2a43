package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Scale-out, first slice (issue 14, must-holds 1 and 2): remote agents join a volley serve over
// its TLS agents listener and show up in GET /api/agents; one killed is gone within 6 s. Without
// --agents-listen, volley serve listens on exactly the ports it did before.

type agentsJSON struct {
	Listening bool `json:"listening"`
	Agents    []struct {
		ID       string            `json:"id"`
		Cores    int               `json:"cores"`
		Labels   map[string]string `json:"labels"`
		State    string            `json:"state"`
		RSSBytes uint64            `json:"rss_bytes"`
	} `json:"agents"`
}

func (a agentsJSON) ids() []string {
	var ids []string
	for _, g := range a.Agents {
		ids = append(ids, g.ID)
	}
	return ids
}

// waitAgents polls GET /api/agents every 50 ms until ok holds, failing after limit.
func waitAgents(t *testing.T, base, what string, limit time.Duration, ok func(agentsJSON) bool) (agentsJSON, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		var l agentsJSON
		if st := apiDo(t, "GET", base+"/api/agents", nil, &l); st != 200 {
			t.Fatalf("GET /api/agents: %d", st)
		}
		if ok(l) {
			return l, time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %s; agents %v", what, limit, l.ids())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAgentsJoinAndLeave(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startProc(t, "volley-serve", volleyBin, "serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "v.db"),
		"--demo-target", "", "--agents-listen", "127.0.0.1:0")
	s := &server{proc: p, base: "http://" + addr}
	waitHealthy(t, s, 30*time.Second)

	var tok struct{ Token, URL string }
	if st := apiDo(t, "GET", s.base+"/api/agents/token", nil, &tok); st != 200 || !strings.HasPrefix(tok.Token, "vly1.") || !strings.HasPrefix(tok.URL, "nats://127.0.0.1:") {
		t.Fatalf("token: %d %+v", st, tok)
	}
	if !strings.Contains(tail(p.log, 8000), tok.Token) {
		t.Errorf("volley serve did not print the join token at start:\n%s", tail(p.log, 2000))
	}

	// A wrong token is refused: the agent exits non-zero, never listed.
	bad := tok.Token[:len("vly1.")] + strings.Repeat("x", 43) + tok.Token[strings.LastIndex(tok.Token, "."):]
	intruder := startProc(t, "agent-intruder", volleyBin, "agent", "--nats", tok.URL, "--token", bad, "--id", "intruder")
	select {
	case <-intruder.done:
		if intruder.err == nil || !strings.Contains(tail(intruder.log, 2000), "cannot join") {
			t.Errorf("wrong token: exit %v\n%s", intruder.err, tail(intruder.log, 2000))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("an agent with a wrong token kept running")
	}

	agents := map[string]*proc{}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("gen-%d", i)
		agents[id] = startProc(t, "agent-"+id, volleyBin, "agent", "--nats", tok.URL, "--token", tok.Token, "--id", id,
			"--labels", "zone=z"+strconv.Itoa(i))
	}
	l, took := waitAgents(t, s.base, "three agents listed", 3*time.Second, func(l agentsJSON) bool { return len(l.Agents) == 3 })
	t.Logf("three agents listed %s after their start", took.Round(time.Millisecond))
	if !l.Listening || !slices.Equal(l.ids(), []string{"gen-1", "gen-2", "gen-3"}) {
		t.Fatalf("agents %+v", l)
	}
	for i, g := range l.Agents {
		if g.Cores < 1 || g.State != "idle" || g.RSSBytes == 0 || g.Labels["zone"] != "z"+strconv.Itoa(i+1) {
			t.Errorf("agent %+v", g)
		}
	}

	agents["gen-2"].kill(t) // SIGKILL: no goodbye, only its presence stops
	l, took = waitAgents(t, s.base, "killed agent gone", 6*time.Second, func(l agentsJSON) bool { return len(l.Agents) == 2 })
	t.Logf("killed agent gone %s after SIGKILL", took.Round(time.Millisecond))
	if !slices.Equal(l.ids(), []string{"gen-1", "gen-3"}) {
		t.Fatalf("after the kill: %v", l.ids())
	}
}

// listeningPorts is the TCP ports process pid listens on (its own sockets: /proc/PID/fd matched
// to the LISTEN rows of /proc/net/tcp and tcp6 by inode).
func listeningPorts(t *testing.T, pid int) []int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc for the server: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if err != nil {
				t.Fatalf("%s: %q", table, f[1])
			}
			ports = append(ports, int(port))
		}
		f.Close()
	}
	slices.Sort(ports)
	return ports
}

// Must-hold 1: without --agents-listen volley serve listens on its HTTP port and the demo
// target's, nothing else; with it, on one more (so the check does see a broker's listener).
func TestServeOpensNoAgentsPortByDefault(t *testing.T) {
	for _, listen := range []bool{false, true} {
		httpPort, demoPort := freePort(t), freePort(t)
		args := []string{"serve", "--addr", fmt.Sprintf("127.0.0.1:%d", httpPort), "--db", filepath.Join(t.TempDir(), "v.db"),
			"--demo-target", fmt.Sprintf("127.0.0.1:%d", demoPort)}
		if listen {
			args = append(args, "--agents-listen", "127.0.0.1:0")
		}
		p := startProc(t, fmt.Sprintf("volley-serve-listen-%v", listen), volleyBin, args...)
		s := &server{proc: p, base: fmt.Sprintf("http://127.0.0.1:%d", httpPort)}
		waitHealthy(t, s, 30*time.Second)
		waitTCP(t, fmt.Sprintf("127.0.0.1:%d", demoPort), p, 10*time.Second)
		ports := listeningPorts(t, p.cmd.Process.Pid)
		want := []int{httpPort, demoPort}
		slices.Sort(want)
		switch {
		case !listen && !slices.Equal(ports, want):
			t.Errorf("volley serve listens on %v, want exactly %v (HTTP and the demo target)", ports, want)
		case listen && (len(ports) != 3 || !slices.Contains(ports, httpPort) || !slices.Contains(ports, demoPort)):
			t.Errorf("volley serve --agents-listen listens on %v, want %v and the agents port", ports, want)
		}
		p.kill(t)
	}
}
