package main

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

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

// capFlags are the administrator's limits on plans (plan.Caps), the same flags on `volley serve`
// and `volley run`.
type capFlags struct {
	maxVUs, maxRate, maxRequests int
	maxDuration                  time.Duration
	memoryBudget                 string
}

// Defaults: the plan's own ranges (plan/bounds.go), so that only --memory-budget narrows them
// unless the administrator sets a flag.
func (f *capFlags) register(c *cobra.Command) {
	c.Flags().IntVar(&f.maxVUs, "max-vus", plan.MaxVUs, "the most VUs one plan may run at once")
	c.Flags().IntVar(&f.maxRate, "max-rate", plan.MaxRatePerSecond, "the highest arrival rate a plan may ask, in iterations per second")
	c.Flags().DurationVar(&f.maxDuration, "max-duration", plan.MaxLength, "the longest a plan's load may last (graceful stop excluded)")
	c.Flags().IntVar(&f.maxRequests, "max-requests", plan.MaxRequests, "the most requests one plan may have")
	c.Flags().StringVar(&f.memoryBudget, "memory-budget", "auto", `the most memory a run's VUs may need by Volley's estimate, e.g. "2GiB", "512MiB"; "auto": half of the machine's (or container's) memory, 2GiB when unknown; "0": no budget`)
}

// caps checks the flags and returns the caps they set (0: the plan's own range).
func (f *capFlags) caps() (plan.Caps, error) {
	c := plan.Caps{MaxVUs: f.maxVUs, MaxRate: f.maxRate, MaxDuration: f.maxDuration, MaxRequests: f.maxRequests}
	switch {
	case f.maxVUs < 0 || f.maxVUs > plan.MaxVUs:
		return c, fmt.Errorf("--max-vus must be 1–%d", plan.MaxVUs)
	case f.maxRate < 0 || f.maxRate > plan.MaxRatePerSecond:
		return c, fmt.Errorf("--max-rate must be 1–%d", plan.MaxRatePerSecond)
	case f.maxDuration < 0 || f.maxDuration > plan.MaxLength:
		return c, fmt.Errorf("--max-duration must be positive and at most %s", plan.MaxLength)
	case f.maxRequests < 0 || f.maxRequests > plan.MaxRequests:
		return c, fmt.Errorf("--max-requests must be 1–%d", plan.MaxRequests)
	}
	b, err := parseBudget(f.memoryBudget)
	if err != nil {
		return c, err
	}
	c.MemoryBudget = b
	return c, nil
}

// parseBudget reads --memory-budget: "auto", "0", a number of bytes, or a number with a unit
// (KiB, MiB, GiB, TiB; also K, M, G, T, KB, MB, GB as the same powers of 1024).
func parseBudget(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "auto") {
		return defaultMemoryBudget(), nil
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseFloat(num, 64)
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}[unit]
	if err != nil || mult == 0 || n < 0 || n*mult > 1<<50 {
		return 0, fmt.Errorf(`--memory-budget %q is not a size such as "2GiB" or "512MiB" (or "auto", "0")`, s)
	}
	return int64(n * mult), nil
}
