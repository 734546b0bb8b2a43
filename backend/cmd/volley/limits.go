package main

import (
	"fmt"
	"syscall"

	"github.com/volley-load/volley/backend/internal/plan"
)

// resourceWarnings names machine limits the plan will run into. Each VU holds one connection,
// hence one file descriptor; Go raises the soft limit to the hard one at start-up, so the hard
// limit is what counts.
func resourceWarnings(p *plan.Plan) []string {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return nil
	}
	need := uint64(p.Load.PeakVUs())
	if need+64 > rl.Cur {
		return []string{fmt.Sprintf("up to %d VUs need about %d open files but the limit is %d; raise it (ulimit -n) or expect too_many_open_files errors", p.Load.PeakVUs(), need+64, rl.Cur)}
	}
	return nil
}
