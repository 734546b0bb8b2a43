// Command volley is Volley's one binary: the web platform (serve), the headless runner (run) and
// a demo target (target). This file only parses flags and wires the internal packages together.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	root := &cobra.Command{
		Use:           "volley",
		Short:         "Volley: a load-testing platform — fast goroutine engine, web UI, stored history",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(serveCmd(), runCmd(), targetCmd(), compareCmd())
	pprofFlag(root)
	if err := root.Execute(); err != nil {
		code := 1
		if ec, ok := err.(exitCode); ok {
			code = int(ec)
			if code == 0 {
				return
			}
		} else {
			fmt.Fprintln(os.Stderr, "volley:", err)
		}
		os.Exit(code)
	}
}

// exitCode ends the program with that status after the command has printed its own message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
