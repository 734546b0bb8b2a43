//go:build !unix

package testutil

import "time"

// ProcessCPU is not measured here (cputime_unix.go).
func ProcessCPU() time.Duration { return 0 }
