// Command volley is Volley's one binary: the web platform (serve), the headless runner (run) and
// a demo target (target). This file only parses flags and wires the internal packages together.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
	root.AddCommand(serveCmd(), runCmd(), targetCmd(), compareCmd(), userCmd(), secretCmd(), monitorCmd(), importCmd(), agentCmd())
	pprofFlag(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	for _, c := range root.Commands() {
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
	}
	if err := root.Execute(); err != nil {
		code := 1
		var ue usageError
		if ec, ok := err.(exitCode); ok {
			code = int(ec)
			if code == 0 {
				return
			}
		} else {
			// cobra reports an unknown subcommand of the (non-runnable) root as a plain error
			if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
				code = exitUsage
			}
			fmt.Fprintln(os.Stderr, "volley:", err)
		}
		os.Exit(code)
	}
}

// exitUsage is the status for a command line Volley cannot accept (unknown command or flag, wrong
// arguments, a bad flag value): 2, like an invalid plan, so that CI never reads a typo as a failed
// threshold (1).
const exitUsage = 2

// usageError marks a command-line mistake (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageArgs wraps a command's argument check so that its errors are usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// exitCode ends the program with that status after the command has printed its own message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
