package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/bus"
	"github.com/volley-load/volley/backend/internal/cluster"
)

// An external NATS server or cluster instead of the embedded broker (docs/scale-out.md, "An
// external NATS"; the sample deploy/nats/nats-server.conf): the controller's flags (volley serve,
// volley run) and the agent's.

// controllerNATSFlags registers --nats, --nats-creds and --nats-nkey on the controller's commands.
func controllerNATSFlags(c *cobra.Command, e *bus.External) {
	c.Flags().StringVar(&e.URL, "nats", "", "use this external NATS server or cluster (nats://HOST:PORT, comma-separated seeds) instead of the embedded broker; needs --nats-creds or --nats-nkey")
	c.Flags().StringVar(&e.CredsFile, "nats-creds", "", "the controller's credentials on the external NATS: a .creds file (JWT and NKey seed)")
	c.Flags().StringVar(&e.NKeyFile, "nats-nkey", "", "the controller's credentials on the external NATS: a file with its NKey seed (SU…)")
	caFlag(c, e)
}

// caFlag registers --nats-ca: the external NATS's TLS certificate is checked against this CA.
func caFlag(c *cobra.Command, e *bus.External) {
	c.Flags().StringVar(&e.CAFile, "nats-ca", "", "the external NATS uses TLS with a certificate from this CA (PEM file); default: the system's CAs for a tls:// URL")
}

// agentNATSFlags registers the agent's external credentials (its URL is --nats, as with a join token).
func agentNATSFlags(c *cobra.Command, e *bus.External) {
	c.Flags().StringVar(&e.CredsFile, "nats-creds", "", "join an external NATS (at --nats) with this .creds file (JWT and NKey seed) instead of a join token")
	c.Flags().StringVar(&e.NKeyFile, "nkey", "", "join an external NATS (at --nats) with the NKey seed (SU…) in this file instead of a join token")
	caFlag(c, e)
}

// agentAuth checks an agent's credentials: the external NATS's (e has a creds or NKey file; no
// join token then — VOLLEY_JOIN_TOKEN left in the environment is ignored, --token is an error)
// or a join token (parsed).
func agentAuth(token string, tokenFlag bool, e bus.External) (bus.Token, error) {
	if e.CredsFile != "" || e.NKeyFile != "" {
		if tokenFlag {
			return bus.Token{}, usageError{errors.New("--token joins volley's own broker; with --nats-creds or --nkey the external NATS authenticates the agent: give one or the other")}
		}
		if err := e.Check(); err != nil {
			return bus.Token{}, usageError{fmt.Errorf("--nats-creds/--nkey: %w", err)}
		}
		return bus.Token{}, nil
	}
	if e.CAFile != "" {
		return bus.Token{}, usageError{errors.New("--nats-ca is for an external NATS (with --nats-creds or --nkey); the join token pins volley's own broker")}
	}
	tok, err := bus.ParseToken(token)
	if err != nil {
		return bus.Token{}, usageError{fmt.Errorf("--token: %w", err)}
	}
	return tok, nil
}

// checkControllerNATS refuses --nats without one credential, a credential without --nats, and
// --nats with --agents-listen (one broker or the other).
func checkControllerNATS(e bus.External, agentsListen string) error {
	if e.URL == "" {
		if e.CredsFile != "" || e.NKeyFile != "" || e.CAFile != "" {
			return usageError{errors.New("--nats-creds, --nats-nkey and --nats-ca are for an external NATS: add --nats nats://HOST:PORT")}
		}
		return nil
	}
	if agentsListen != "" {
		return usageError{errors.New("--agents-listen starts volley's own broker and --nats uses an external one: give one or the other")}
	}
	if err := e.Check(); err != nil {
		return usageError{fmt.Errorf("--nats: %w (--nats-creds FILE or --nats-nkey FILE)", err)}
	}
	return nil
}

// startAgentsExternal connects the controller to the external NATS and starts the agent registry
// on that connection (agents join the NATS with their own credentials: no join token). Refused
// hellos are logged on log (nil: not logged); the NATS itself refuses bad credentials.
func startAgentsExternal(e bus.External, log *slog.Logger) (*agentsCtl, error) {
	nc, err := bus.ConnectController(e, "volley controller")
	if err != nil {
		return nil, fmt.Errorf("--nats %s: %w", e.URL, err)
	}
	reg, err := cluster.Start(nc, version, nil)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("--nats %s: %w", e.URL, err)
	}
	reg.LogRefusals(log)
	return &agentsCtl{Registry: reg, nc: nc, url: e.URL}, nil
}
