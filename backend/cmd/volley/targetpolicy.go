package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/netpolicy"
)

// Environment variables adding to --allow-target / --deny-target (values separated by commas or
// spaces), e.g. for a container.
const (
	envAllowTargets = "VOLLEY_ALLOW_TARGETS"
	envDenyTargets  = "VOLLEY_DENY_TARGETS"
)

// targetPolicy is the server's target policy from --allow-target, --deny-target and the
// environment (`volley serve` and `volley run`); see package netpolicy for the rules and order.
var targetPolicy policyFlags

type policyFlags struct {
	allow, deny []string
	pol         *netpolicy.Policy // built by the flag's pre-run check
}

// flag registers --allow-target and --deny-target on c and builds the policy before the command
// runs; a bad value is a usage error (status 2) naming it.
func (f *policyFlags) flag(c *cobra.Command) {
	c.Flags().StringArrayVar(&f.allow, "allow-target", nil, "allow connections to this CIDR, IP or host pattern (*.example.com) even where a built-in rule denies (repeatable; also $"+envAllowTargets+")")
	c.Flags().StringArrayVar(&f.deny, "deny-target", nil, `deny connections to this CIDR, IP or host pattern, e.g. 10.0.0.0/8 or *.internal; "*" denies all but the allowed (repeatable; also $`+envDenyTargets+")")
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		pol, err := netpolicy.New(append(envList(envAllowTargets), f.allow...), append(envList(envDenyTargets), f.deny...))
		if err != nil {
			return usageError{err}
		}
		f.pol = pol
		return nil
	}
}

// policy returns the built policy (the default one if the flags were never parsed).
func (f *policyFlags) policy() *netpolicy.Policy {
	if f.pol == nil {
		return netpolicy.Default()
	}
	return f.pol
}

func envList(name string) []string {
	return strings.FieldsFunc(os.Getenv(name), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}
