//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// defaultMemoryBudget is half of the memory this process may use: the machine's RAM, or the
// container's limit (cgroup v2 memory.max) when lower; 2 GiB when neither can be read. Half leaves
// the other half to the server itself, SQLite, the kernel's socket buffers and whatever else
// runs on the machine; a run is refused rather than swapping the generator into meaningless
// results or an OOM kill.
func defaultMemoryBudget() int64 {
	var total uint64
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		total = uint64(si.Totalram) * uint64(si.Unit)
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	if total == 0 {
		return 2 << 30
	}
	return int64(total / 2)
}
