//go:build !unix

package engine

import "time"

// processCPU is not measured here (cputime_unix_test.go).
func processCPU() time.Duration { return 0 }
