package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/internal/auth"
)

// authCmd makes a deployment's credentials directory and mints
// identities from it, and prints what an external nats-server must trust.
func (c cli) authCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "a deployment's credentials: make them, mint identities, export for nats-server",
		Example: `  sandrun auth init --dir ./auth
  sandrun auth add --dir ./auth --name alice --role submitter --origin subagent -o alice.creds
  sandrun auth export --dir ./auth`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "credentials directory (a server's DATA/auth; required)")
	material := func() (*auth.Material, error) {
		if dir == "" {
			return nil, usageErr("--dir is required")
		}
		return auth.Ensure(dir)
	}
	initCmd := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "make the credentials directory (prints its path)",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			m, err := material()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s\n", m.Dir)
			return nil
		},
	}
	export := &cobra.Command{
		Use:   "export --dir DIR",
		Short: "print the public JWTs and keys an external nats-server trusts (KEY=VALUE lines)",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			m, err := material()
			if err != nil {
				return err
			}
			// KEY=VALUE lines for `nomad var put nomad/jobs/nats ...`:
			// public JWTs and keys only, nothing secret.
			for _, kv := range m.Exports() {
				fmt.Fprintf(c.stdout, "%s=%s\n", kv[0], kv[1])
			}
			return nil
		},
	}
	var (
		id        auth.Identity
		role, out string
	)
	add := &cobra.Command{
		Use:   "add --dir DIR --name NAME --role ROLE [--origin ORIGIN] [-o FILE]",
		Short: "mint credentials for an identity",
		Args:  argsUsage(0, 0, "no arguments (--name, --role)"),
		RunE: func(*cobra.Command, []string) error {
			m, err := material()
			if err != nil {
				return err
			}
			id.Role = auth.Role(role)
			if out != "" {
				if err := m.MintFile(id, out); err != nil {
					return fmt.Errorf("-o: %w", err)
				}
				return nil
			}
			creds, err := m.Mint(id)
			if err != nil {
				return err
			}
			_, err = c.stdout.Write(creds)
			return err
		},
	}
	add.Flags().StringVar(&id.Name, "name", "", "identity name: a-z 0-9 _ - (required)")
	add.Flags().StringVar(&role, "role", string(auth.RoleSubmitter), "admin, worker, scheduler or submitter")
	add.Flags().StringVar(&id.Origin, "origin", "", "origin its jobs run under: manual, cron, batch or subagent (default manual; cron for a scheduler)")
	add.Flags().StringVarP(&out, "out", "o", "", "write the .creds file here, owner-only (default: standard output)")
	cmd.AddCommand(initCmd, add, export)
	return cmd
}
