//go:build !linux

package main

// defaultMemoryBudget is 2 GiB where the machine's memory is not read (see limits_linux.go).
func defaultMemoryBudget() int64 { return 2 << 30 }
