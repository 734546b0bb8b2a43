//go:build linux

package engine

import (
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/volley-load/volley/backend/internal/testutil"
)

// More VUs than file descriptors: the VUs that cannot get a socket count too_many_open_files and
// pause before trying again, instead of spinning through failures; the VUs that did connect keep
// working.
func TestOutOfFilesPausesTheVU(t *testing.T) {
	tg := testutil.NewTarget(t, func(http.ResponseWriter, *http.Request) {})
	p := mustPlan(t, closedPlan(tg.URL, 60, "1s", "1s", ""))
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// room for ~20 client sockets (each connection also costs the in-process target one fd)
	lim := syscall.Rlimit{Cur: uint64(len(fds) + 40), Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	sum, _ := run(t, p)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	out := sum.ErrorKinds["too_many_open_files"]
	if out == 0 || sum.Successes == 0 {
		t.Fatalf("want both: successes %d, kinds %v", sum.Successes, sum.ErrorKinds)
	}
	// ≤ 60 VUs × (1 s / 100 ms + 1) attempts; without the pause it is hundreds of thousands
	if out > 60*11 {
		t.Errorf("%d too_many_open_files in 1 s: the failing VUs did not pause", out)
	}
}
