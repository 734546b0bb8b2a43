//go:build linux

package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// More VUs than file descriptors: the VUs that cannot get a socket count too_many_open_files and
// pause before trying again, instead of spinning through failures; the VUs that did connect keep
// working. The target runs in a child process, so that only the VUs' sockets count against the
// lowered limit.
func TestOutOfFilesPausesTheVU(t *testing.T) {
	addr := startChildTarget(t, "TestHelperTarget", "VOLLEY_HELPER_TARGET")
	p := mustPlan(t, closedPlan("http://"+addr+"/", 60, "1s", "1s", ""))
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := syscall.Rlimit{Cur: uint64(len(fds) + 20), Max: old.Max} // room for ~20 VU sockets
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	sum, _ := run(t, p)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	out := sum.ErrorKinds["too_many_open_files"]
	if out == 0 || sum.Successes == 0 || sum.Errors != out {
		t.Fatalf("want successes and too_many_open_files only: successes %d, kinds %v", sum.Successes, sum.ErrorKinds)
	}
	// ≤ 60 VUs × (1 s / 100 ms + 1) attempts; without the pause it is hundreds of thousands
	if out > 60*11 {
		t.Errorf("%d too_many_open_files in 1 s: the failing VUs did not pause", out)
	}
}

// startChildTarget runs the test named test in a child process (the test binary itself), with env
// set to 1, and returns the address the child prints; the child ends when the test does.
func startChildTarget(t *testing.T, test, env string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close() // the child exits when its stdin closes
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", test, err)
	}
	return strings.TrimSpace(line)
}

// TestHelperTarget is not a test: it is the child process that TestOutOfFilesPausesTheVU starts, an HTTP server
// answering 200 until its stdin closes.
func TestHelperTarget(t *testing.T) {
	if os.Getenv("VOLLEY_HELPER_TARGET") != "1" {
		t.Skip("the child process of TestOutOfFilesPausesTheVU")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	go func() { _ = http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
