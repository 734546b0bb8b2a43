package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/volley-load/volley/backend/internal/auth"
	"github.com/volley-load/volley/backend/internal/store"
)

// userCmd is `volley user …`: users and API tokens in a database, for the first admin, CI tokens
// and recovery. The server need not be stopped.
func userCmd() *cobra.Command {
	var db = "volley.db"
	c := &cobra.Command{
		Use:   "user",
		Short: "Manage users and API tokens (auth is on as soon as one user exists)",
		Long: `Manage who may use Volley's web UI and API. With no user, a server on a loopback address
lets its local user in as the admin; as soon as one user exists everyone must log in (or send an
API token), and a server on any other address refuses to start without one.

Passwords are read from the terminal, or from standard input with --password-stdin (first line).`,
	}
	c.PersistentFlags().StringVar(&db, "db", db, "SQLite database file of the server")

	var role string
	var fromStdin bool
	add := &cobra.Command{
		Use:   "add NAME --role admin|tester|viewer",
		Short: "Add a user",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if role == "" {
				return usageError{errors.New(`--role is required: admin, tester or viewer`)}
			}
			r, err := auth.ParseRole(role)
			if err != nil {
				return usageError{err}
			}
			if err := auth.CheckName(args[0]); err != nil {
				return usageError{err}
			}
			return openAuth(db, true, func(ctx context.Context, svc *auth.Service) error {
				pw, err := readNewPassword(cmd, fromStdin)
				if err != nil {
					return err
				}
				u, err := svc.AddUser(ctx, args[0], r, pw)
				if err != nil {
					return err
				}
				audit(ctx, svc, auth.ActUserCreate, "user "+u.Name, map[string]any{"role": u.Role})
				fmt.Fprintf(cmd.OutOrStdout(), "added %s (%s)\n", u.Name, u.Role)
				return nil
			})
		},
	}
	add.Flags().StringVar(&role, "role", "", "admin, tester or viewer")
	add.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password from standard input")

	var passwdStdin bool
	passwd := &cobra.Command{
		Use:   "passwd NAME",
		Short: "Set a user's password (ends the user's sessions)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAuth(db, func(ctx context.Context, svc *auth.Service) error {
				if _, err := svc.GetUser(ctx, args[0]); err != nil {
					return err
				}
				pw, err := readNewPassword(cmd, passwdStdin)
				if err != nil {
					return err
				}
				u, err := svc.UpdateUser(ctx, args[0], nil, &pw)
				if err != nil {
					return err
				}
				audit(ctx, svc, auth.ActUserUpdate, "user "+u.Name, map[string]any{"password": "changed"})
				fmt.Fprintf(cmd.OutOrStdout(), "password of %s changed\n", u.Name)
				return nil
			})
		},
	}
	passwd.Flags().BoolVar(&passwdStdin, "password-stdin", false, "read the password from standard input")

	list := &cobra.Command{
		Use:   "list",
		Short: "List users and their API tokens",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAuth(db, func(ctx context.Context, svc *auth.Service) error {
				us, err := svc.ListUsers(ctx)
				if err != nil {
					return err
				}
				ts, err := svc.ListTokens(ctx, 0)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "USER\tROLE\tCREATED")
				for _, u := range us {
					fmt.Fprintf(w, "%s\t%s\t%s\n", u.Name, u.Role, u.CreatedAt.Format(time.RFC3339))
				}
				if len(us) == 0 {
					fmt.Fprintln(w, "(none: auth is off; only a loopback server starts)")
				}
				if len(ts) > 0 {
					fmt.Fprintln(w, "\nTOKEN ID\tUSER\tLABEL\tCREATED\tLAST USED")
					for _, t := range ts {
						last := "never"
						if t.LastUsedAt != nil {
							last = t.LastUsedAt.Format(time.RFC3339)
						}
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", t.ID, t.User, t.Label, t.CreatedAt.Format(time.RFC3339), last)
					}
				}
				return w.Flush()
			})
		},
	}

	var force bool
	del := &cobra.Command{
		Use:   "del NAME",
		Short: "Delete a user with its sessions and tokens",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAuth(db, func(ctx context.Context, svc *auth.Service) error {
				if err := svc.DeleteUser(ctx, args[0], force); err != nil {
					if errors.Is(err, auth.ErrLastAdmin) {
						return usageError{fmt.Errorf("%s is the last admin; add another admin first, or --force (with no admin left, only `volley user` can manage users)", args[0])}
					}
					return err
				}
				audit(ctx, svc, auth.ActUserDelete, "user "+args[0], nil)
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
				return nil
			})
		},
	}
	del.Flags().BoolVar(&force, "force", false, "delete even the last admin")

	var label string
	token := &cobra.Command{
		Use:   "token NAME [--label L]",
		Short: "Make an API token for a user (printed once: Authorization: Bearer TOKEN)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAuth(db, func(ctx context.Context, svc *auth.Service) error {
				secret, t, err := svc.CreateToken(ctx, args[0], label)
				if err != nil {
					return err
				}
				audit(ctx, svc, auth.ActTokenCreate, fmt.Sprintf("token %d", t.ID), map[string]any{"user": t.User, "label": t.Label})
				fmt.Fprintln(cmd.OutOrStdout(), secret)
				fmt.Fprintf(cmd.ErrOrStderr(), "token %d for %s (%s); it is shown only now. Revoke it with: volley user revoke %d\n",
					t.ID, t.User, t.Role, t.ID)
				return nil
			})
		},
	}
	token.Flags().StringVar(&label, "label", "", "what the token is for (e.g. ci)")

	revoke := &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Revoke an API token (see volley user list)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usageError{fmt.Errorf("TOKEN_ID %q is not a positive integer (see volley user list)", args[0])}
			}
			return withAuth(db, func(ctx context.Context, svc *auth.Service) error {
				t, err := svc.GetToken(ctx, id)
				if err != nil {
					return err
				}
				if err := svc.RevokeToken(ctx, id); err != nil {
					return err
				}
				audit(ctx, svc, auth.ActTokenRevoke, fmt.Sprintf("token %d", id), map[string]any{"user": t.User, "label": t.Label})
				fmt.Fprintf(cmd.OutOrStdout(), "revoked token %d of %s\n", id, t.User)
				return nil
			})
		},
	}
	c.AddCommand(add, passwd, list, del, token, revoke)
	return c
}

// withAuth opens the database, runs fn, and turns bad input (unknown user, bad name, role or
// password, an existing name) into usage errors (exit 2).
func withAuth(db string, fn func(ctx context.Context, svc *auth.Service) error) error {
	return openAuth(db, false, fn)
}

// openAuth is withAuth; create allows a missing database file (the first admin of a new server).
func openAuth(db string, create bool, fn func(ctx context.Context, svc *auth.Service) error) error {
	if _, err := os.Stat(db); err != nil && !(create && errors.Is(err, os.ErrNotExist)) {
		return usageError{fmt.Errorf("database %s: %w (give the server's file with --db)", db, err)}
	}
	st, err := store.Open(db)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer st.Close()
	err = fn(context.Background(), auth.New(st, auth.Config{}))
	var ie *auth.InputError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return usageError{err}
	case errors.Is(err, store.ErrNotFound):
		return usageError{errors.New("no such user or token")}
	case errors.Is(err, auth.ErrExists), errors.Is(err, auth.ErrLastAdmin):
		return usageError{err}
	}
	return err
}

func audit(ctx context.Context, svc *auth.Service, action, target string, detail map[string]any) {
	if err := svc.Audit(ctx, auth.Entry{Actor: auth.CLIActor, Action: action, Target: target, Detail: detail}); err != nil {
		fmt.Fprintln(os.Stderr, "volley: audit log:", err)
	}
}

// readNewPassword reads a password: the first line of standard input with --password-stdin, else
// twice from the terminal without echo.
func readNewPassword(cmd *cobra.Command, fromStdin bool) (string, error) {
	in := cmd.InOrStdin()
	if fromStdin {
		line, err := bufio.NewReader(io.LimitReader(in, auth.MaxPassword+2)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", usageError{errors.New("standard input is not a terminal: pipe the password with --password-stdin")}
	}
	errw := cmd.ErrOrStderr()
	fmt.Fprint(errw, "Password: ")
	a, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(errw)
	if err != nil {
		return "", err
	}
	fmt.Fprint(errw, "Again: ")
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(errw)
	if err != nil {
		return "", err
	}
	if string(a) != string(b) {
		return "", usageError{errors.New("the two passwords differ")}
	}
	return string(a), nil
}
