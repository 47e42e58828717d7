package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/policy"
)

// exitDenied is `policy check`'s exit code for a command the policy refuses.
const exitDenied = 3

// policyCmd handles `sandrun policy check` and `sandrun policy rules`.
func (c cli) policyCmd(_ context.Context, args []string) error {
	if len(args) == 0 {
		return usageErr("want `policy check [flags] -- COMMAND` or `policy rules`")
	}
	switch args[0] {
	case "rules":
		tw := tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "RULE\tPACK\tSEVERITY\tHOST-ONLY\tDESCRIPTION")
		for _, r := range policy.Rules() {
			pack, severity := r.Pack, "high"
			if pack == "" {
				pack = "built-in"
			}
			if r.Critical {
				severity = "critical"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", r.ID, pack, severity, r.HostOnly, r.Description)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "\nPACKS (turn one off with policy.disabled_packs; critical rules cannot be allowlisted)")
		tw = tabwriter.NewWriter(c.stdout, 0, 2, 2, ' ', 0)
		fmt.Fprintln(tw, "PACK\tRULES\tTOOLS")
		for _, p := range policy.Packs() {
			tools := strings.Join(p.Tools, " ")
			if len(tools) > 60 {
				tools = tools[:57] + "..."
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\n", p.Name, len(p.Rules), tools)
		}
		return tw.Flush()
	case "check":
		return c.policyCheck(args[1:])
	}
	return usageErr("unknown policy command %q (want check or rules)", args[0])
}

func (c cli) policyCheck(args []string) error {
	fs := flag.NewFlagSet("sandrun policy check", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	mode := fs.String("approval", "", "the job's approval mode: deny, approve or allowlist (default: the origin's, deny)")
	origin := fs.String("origin", "manual", "origin: manual, cron, batch or subagent")
	host := fs.Bool("host-access", true, "the backend can touch the host (false: an isolated sandbox; host-only rules are skipped)")
	config := fs.String("config", "", "worker config file whose policy section (ceiling, allowlist) applies")
	shell := fs.String("shell", "", "the shell that runs the command: sh (/bin/sh -c: dash, busybox ash; also posix) or bash (default: the worker's, sh)")
	cwd := fs.String("cwd", "", "the job's working directory (relative paths in the command are judged in it)")
	var envs, secretNames []string
	fs.Func("env", "K=V the job's environment variable (repeatable)", func(s string) error { envs = append(envs, s); return nil })
	fs.Func("secret-env", "NAME of a secret variable: judged by name, its value unknown (repeatable)", func(s string) error {
		secretNames = append(secretNames, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	var env map[string]string
	if err := addKV(&env, envs, "--env"); err != nil {
		return err
	}
	for _, k := range secretNames {
		if k == "" || strings.Contains(k, "=") {
			return usageErr("--secret-env %q: want a NAME (the value is never given)", redactKV(k))
		}
		if env == nil {
			env = map[string]string{}
		}
		env[k] = ""
	}
	sh, err := policy.ParseShell(*shell)
	if err != nil {
		return usageErr("--shell: %v", err)
	}
	command, err := commandLine(fs.Args())
	if err != nil {
		return err
	}
	if command == "" {
		return usageErr("command: give it after --, e.g. sandrun policy check -- 'rm -rf /'")
	}
	cfg, err := app.LoadFile(*config)
	if err != nil {
		return err
	}
	eng, err := cfg.Policy.Engine()
	if err != nil {
		return err
	}
	if *mode != "" {
		if _, err := policy.ParseMode(*mode); err != nil {
			return usageErr("--approval: %v", err)
		}
	}
	dec := eng.Decide(policy.Request{Command: command, Origin: *origin, Mode: policy.Mode(*mode), Isolated: !*host, Shell: sh,
		Cwd: *cwd, Env: env, SecretEnv: secretNames})
	verdict := "approve"
	if !dec.Allow {
		verdict = "deny"
	}
	capped := ""
	if dec.Capped {
		capped = " (capped by the worker ceiling)"
	}
	fmt.Fprintf(c.stdout, "%s  mode=%s shell=%s%s\n", verdict, dec.Mode, dec.Shell, capped)
	for _, m := range dec.Matches {
		via := ""
		if m.Via != "" {
			via = " via " + m.Via
		}
		fmt.Fprintf(c.stdout, "  %s at %d:%d (byte %d)%s: %s\n", m.Rule, m.Line, m.Col, m.Pos, via, m.Text)
	}
	if dec.Reason != "" {
		fmt.Fprintf(c.stdout, "  %s\n", dec.Reason)
	}
	if !dec.Allow {
		return exitError{code: exitDenied}
	}
	return nil
}
