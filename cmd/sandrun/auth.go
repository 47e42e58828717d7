package main

import (
	"flag"
	"fmt"

	"github.com/sandrun/sandrun/internal/auth"
)

// auth makes a deployment's credentials directory and mints identities
// from it: `sandrun auth init --dir DIR`, `sandrun auth add --dir DIR
// --name alice --role submitter --origin subagent -o alice.creds`, and
// prints what an external nats-server must trust: `sandrun auth export`.
func (c cli) auth(args []string) error {
	if len(args) == 0 || (args[0] != "init" && args[0] != "add" && args[0] != "export") {
		return usageErr("want `auth init --dir DIR`, `auth add --dir DIR --name NAME --role ROLE [--origin ORIGIN] [-o FILE]` or `auth export --dir DIR`")
	}
	fs := flag.NewFlagSet("sandrun auth "+args[0], flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	dir := fs.String("dir", "", "credentials directory (a server's DATA/auth; required)")
	var id auth.Identity
	var role, out string
	if args[0] == "add" {
		fs.StringVar(&id.Name, "name", "", "identity name: a-z 0-9 _ - (required)")
		fs.StringVar(&role, "role", string(auth.RoleSubmitter), "admin, worker, scheduler or submitter")
		fs.StringVar(&id.Origin, "origin", "", "origin its jobs run under: manual, cron, batch or subagent (default manual; cron for a scheduler)")
		fs.StringVar(&out, "o", "", "write the .creds file here, owner-only (default: standard output)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *dir == "" {
		return usageErr("auth: --dir is required")
	}
	m, err := auth.Ensure(*dir)
	if err != nil {
		return err
	}
	switch args[0] {
	case "init":
		fmt.Fprintf(c.stdout, "%s\n", m.Dir)
		return nil
	case "export":
		// KEY=VALUE lines for `nomad var put nomad/jobs/nats ...`: public
		// JWTs and keys only, nothing secret.
		for _, kv := range m.Exports() {
			fmt.Fprintf(c.stdout, "%s=%s\n", kv[0], kv[1])
		}
		return nil
	}
	id.Role = auth.Role(role)
	if out != "" {
		if err := m.MintFile(id, out); err != nil {
			return fmt.Errorf("auth add: -o: %w", err)
		}
		return nil
	}
	creds, err := m.Mint(id)
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(creds)
	return err
}
