package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/plan"
	"github.com/volley-load/volley/backend/internal/store"
)

// secretEnvPrefix starts the environment variables from which `volley run` takes the values of a
// plan's {{secret.NAME}} references: VOLLEY_SECRET_NAME.
const secretEnvPrefix = "VOLLEY_SECRET_"

func secretCmd() *cobra.Command {
	db := "volley.db"
	c := &cobra.Command{
		Use:   "secret",
		Short: "Manage the server's secret store ({{secret.NAME}} in plans): set, list, del",
		Long: `Manage the secret store of a Volley database: values that plans use as {{secret.NAME}} in URL
paths, header values and bodies. Values are write-only: nothing prints them back. A running
"volley serve" on the same database sees changes at its next run start.`,
	}
	c.PersistentFlags().StringVar(&db, "db", db, "SQLite database file")
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Set a secret's value, read from standard input (one trailing newline is dropped)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return secretSet(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), db, args[0])
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the secrets' names and times (never their values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return secretList(cmd.OutOrStdout(), cmd.ErrOrStderr(), db)
		},
	}
	del := &cobra.Command{
		Use:     "del NAME",
		Aliases: []string{"delete", "rm"},
		Short:   "Delete a secret",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return secretDel(cmd.OutOrStdout(), cmd.ErrOrStderr(), db, args[0])
		},
	}
	for _, sub := range []*cobra.Command{set, list, del} {
		sub.Args = usageArgs(sub.Args)
		c.AddCommand(sub)
	}
	return c
}

func openSecretStore(stderr io.Writer, db string, create bool) (*store.Store, error) {
	if !create {
		if fi, err := os.Stat(db); err != nil || fi.IsDir() {
			fmt.Fprintf(stderr, "volley: no database file at %s (use --db)\n", db)
			return nil, exitCode(exitCannotRun)
		}
	}
	st, err := store.Open(db)
	if err != nil {
		fmt.Fprintf(stderr, "volley: %v\n", err)
		return nil, exitCode(exitCannotRun)
	}
	return st, nil
}

func checkSecretName(stderr io.Writer, name string) error {
	if !plan.ValidSecretName(name) {
		fmt.Fprintf(stderr, "volley: %q is not a secret name (1-%d letters, digits or _, not starting with a digit)\n", name, plan.MaxSecretName)
		return exitCode(exitUsage)
	}
	return nil
}

func secretSet(stdin io.Reader, stdout, stderr io.Writer, db, name string) error {
	if err := checkSecretName(stderr, name); err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(stdin), plan.MaxSecretValue+2))
	if err != nil {
		fmt.Fprintf(stderr, "volley: cannot read the value from standard input: %v\n", err)
		return exitCode(exitCannotRun)
	}
	value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	switch {
	case value == "":
		fmt.Fprintln(stderr, `volley: the value is empty: give it on standard input (e.g. printenv TOKEN | volley secret set NAME)`)
		return exitCode(exitUsage)
	case len(value) > plan.MaxSecretValue:
		fmt.Fprintf(stderr, "volley: the value is longer than %d bytes\n", plan.MaxSecretValue)
		return exitCode(exitUsage)
	case value == plan.Masked:
		fmt.Fprintf(stderr, "volley: %s is the masked placeholder, not a value\n", plan.Masked)
		return exitCode(exitUsage)
	}
	st, err := openSecretStore(stderr, db, true)
	if err != nil {
		return err
	}
	defer st.Close()
	_, created, err := st.PutSecret(context.Background(), name, value)
	if err != nil {
		fmt.Fprintf(stderr, "volley: %v\n", err)
		return exitCode(exitCannotRun)
	}
	auditSecret(st, stderr, auth.ActSecretSet, name, map[string]any{"created": created})
	verb := "replaced"
	if created {
		verb = "set"
	}
	fmt.Fprintf(stdout, "secret %s %s\n", name, verb)
	return nil
}

func secretList(stdout, stderr io.Writer, db string) error {
	st, err := openSecretStore(stderr, db, false)
	if err != nil {
		return err
	}
	defer st.Close()
	infos, err := st.ListSecrets(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "volley: %v\n", err)
		return exitCode(exitCannotRun)
	}
	if len(infos) == 0 {
		fmt.Fprintln(stdout, "no secrets")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCREATED\tUPDATED")
	for _, i := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", i.Name, i.CreatedAt.Format(time.RFC3339), i.UpdatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

func secretDel(stdout, stderr io.Writer, db, name string) error {
	if err := checkSecretName(stderr, name); err != nil {
		return err
	}
	st, err := openSecretStore(stderr, db, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteSecret(context.Background(), name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			fmt.Fprintf(stderr, "volley: no secret %s in %s\n", name, db)
			return exitCode(exitThresholds) // 1: nothing to delete
		}
		fmt.Fprintf(stderr, "volley: %v\n", err)
		return exitCode(exitCannotRun)
	}
	auditSecret(st, stderr, auth.ActSecretDelete, name, nil)
	fmt.Fprintf(stdout, "secret %s deleted\n", name)
	return nil
}

// auditSecret records a change to the secret store in the database's audit log, as the CLI actor
// (never the value). A failure to record is reported, not fatal: the change is made.
func auditSecret(st *store.Store, stderr io.Writer, action, name string, detail map[string]any) {
	err := auth.New(st, auth.Config{}).Audit(context.Background(),
		auth.Entry{Actor: auth.CLIActor, Action: action, Target: "secret " + name, Detail: detail})
	if err != nil {
		fmt.Fprintln(stderr, "volley: audit log:", err)
	}
}

// envSecrets reads the values of p's {{secret.NAME}} references from the environment variables
// VOLLEY_SECRET_NAME; a missing one is left out (the plan's CheckSecrets then names its field).
func envSecrets(p *plan.Plan, getenv func(string) (string, bool)) plan.SecretValues {
	vals := plan.SecretValues{}
	for _, name := range p.SecretNames() {
		if v, ok := getenv(secretEnvPrefix + name); ok {
			vals[name] = v
		}
	}
	return vals
}
