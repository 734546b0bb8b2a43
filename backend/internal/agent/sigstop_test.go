package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
)

// Environment of the helper agent process (TestMain runs the agent instead of the tests).
const (
	envHelperURL   = "VOLLEY_TEST_AGENT_URL"
	envHelperToken = "VOLLEY_TEST_AGENT_TOKEN"
	envHelperID    = "VOLLEY_TEST_AGENT_ID"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envHelperURL); url != "" {
		os.Exit(helperAgent(url))
	}
	os.Exit(m.Run())
}

// helperAgent runs an agent in this process until SIGTERM: a separate process the tests can stop
// with SIGSTOP.
func helperAgent(url string) int {
	tok, err := bus.ParseToken(os.Getenv(envHelperToken))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, Config{URL: url, Token: tok, ID: os.Getenv(envHelperID), Log: quiet()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startAgentProcess runs an agent as a child process (this test binary in helper mode); it is
// killed when the test ends.
func startAgentProcess(t *testing.T, r *runCtl, id string) *os.Process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelperURL+"="+r.url, envHelperToken+"="+r.b.JoinToken(), envHelperID+"="+id)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitList(t, r.controller, "agent process listed", func(l []cluster.Agent) bool { return len(l) == 1 && l[0].ID == id })
	return cmd.Process
}

// An agent process stopped with SIGSTOP for longer than fence_after and then resumed sends no
// catch-up burst: at most one late request per VU before its fence stops the load (the open model
// drops the iterations that fell due meanwhile; a closed-model VU has no backlog), nothing after,
// and its final says Fenced.
func TestSIGSTOPResumedLateNoBurst(t *testing.T) {
	const fenceAfter = 2 * time.Second
	for _, c := range []struct {
		name, load, think string
		vus               int64 // the most VUs that may each send one late request
	}{
		// 50 iterations due a second: 200 fall due while the process is stopped.
		{"open", `{"executor":"constant-arrival-rate","rate":50,"duration":"1m","pre_allocated_vus":4,"max_vus":8}`, "0s", 8},
		// A VU's next request needs its think time after the resume: the fence comes first.
		{"closed", `{"executor":"constant-vus","vus":3,"duration":"1m"}`, "200ms", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startRunCtl(t)
			tg := newCountingTarget(t)
			p := startAgentProcess(t, r, "gen-stop")
			plan := fmt.Sprintf(`{"name":"sigstop","requests":[{"url":%q}],"think_time":%q,"load":%s,"http":{"timeout":"2s"}}`, tg.URL, c.think, c.load)
			r.mustPrepare(t, "gen-stop", 61, plan, fenceAfter, "ready %+v")
			r.startAndWait(t, 61, 2)
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// Requests in flight at the stop land within a moment; then the target is quiet.
			time.Sleep(300 * time.Millisecond)
			before := tg.Requests()
			time.Sleep(fenceAfter + 2*time.Second)
			if n := tg.Requests(); n != before {
				t.Fatalf("a stopped process sent %d requests", n-before)
			}
			if err := p.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			s := r.waitFinal(t, 61, 20*time.Second)
			late := tg.Requests() - before
			t.Logf("%s model: %d requests after the resume (at most %d allowed)", c.name, late, c.vus)
			if late > c.vus {
				t.Errorf("%d requests after the resume: a catch-up burst (at most one per VU, %d)", late, c.vus)
			}
			if !s.final.Fenced {
				t.Errorf("final not fenced: %+v", *s.final)
			}
			checkStored(t, s, 61, "gen-stop")
			time.Sleep(500 * time.Millisecond)
			if n := tg.Requests() - before; n != late {
				t.Errorf("%d more requests after the final", n-late)
			}
		})
	}
}
