package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"

	"github.com/spf13/cobra"
)

// pprofFlag adds the hidden --pprof ADDR flag: Go's profiling endpoints (/debug/pprof/…) served on
// their own listener, for profiling the generator or the server while it runs, e.g.
//
//	volley run plan.json --pprof 127.0.0.1:6060 &
//	go tool pprof http://127.0.0.1:6060/debug/pprof/heap
//
// Only loopback addresses (or localhost) are accepted: the endpoints expose the process's memory and stacks.
// Heap profiles are sampled every 4 KiB allocated (instead of 512 KiB) while the flag is set.
func pprofFlag(root *cobra.Command) {
	var addr string
	root.PersistentFlags().StringVar(&addr, "pprof", "", "serve Go profiling endpoints on this loopback address")
	_ = root.PersistentFlags().MarkHidden("pprof")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if addr == "" {
			return nil
		}
		host, _, err := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
			return usageError{fmt.Errorf("--pprof %q: want a loopback host:port such as 127.0.0.1:6060", addr)}
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		if runtime.MemProfileRate == 512<<10 { // not set by GODEBUG=memprofilerate=N
			runtime.MemProfileRate = 4096 // finer heap profiles than the default 512 KiB sampling
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		fmt.Fprintf(os.Stderr, "volley: profiling endpoints on http://%s/debug/pprof/\n", ln.Addr())
		go func() { _ = http.Serve(ln, mux) }() //nolint:gosec // loopback only, lives as long as the process
		return nil
	}
}
