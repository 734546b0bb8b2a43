//go:build !linux

package testutil

import "testing"

// MountTmpfs needs Linux: the test is skipped elsewhere.
func MountTmpfs(t testing.TB, size int64) string {
	t.Skip("tmpfs mounts are tested on Linux only")
	return ""
}

// ReadOnly needs Linux: the test is skipped elsewhere.
func ReadOnly(t testing.TB, path string) { t.Skip("read-only mounts are tested on Linux only") }

// FillDisk needs Linux: the test is skipped elsewhere.
func FillDisk(t testing.TB, dir, name string) string {
	t.Skip("disk-full tests run on Linux only")
	return ""
}
