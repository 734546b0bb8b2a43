package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/target"
)

func targetCmd() *cobra.Command {
	addr := "127.0.0.1:8090"
	c := &cobra.Command{
		Use:   "target",
		Short: "Serve a small static page on loopback to try Volley against",
		Long: `Serve Volley's demo target on a loopback address:
  /              a ~600-byte HTML page
  /delay/{ms}    the page after {ms} milliseconds
  /status/{code} an empty response with that status
  /bytes/{n}     n bytes of body
  /ws/echo       a WebSocket echo (ws://127.0.0.1:8090/ws/echo)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ln, err := target.Listen(addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "demo target on http://%s/\n", ln.Addr())
			return target.ServeListener(ctx, ln)
		},
	}
	c.Flags().StringVar(&addr, "addr", addr, "loopback address to listen on")
	return c
}
