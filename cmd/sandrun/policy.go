package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/policy"
)

// exitDenied is `policy check`'s exit code for a command the policy refuses.
const exitDenied = 3

// policyCmd is `sandrun policy check` and `sandrun policy rules`.
func (c cli) policyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "judge commands as a worker would; list the rules"}
	var rulesOut outputFlag
	rules := &cobra.Command{
		Use:   "rules",
		Short: "list the policy's rules and packs",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			type rule struct {
				ID          string `json:"id"`
				Pack        string `json:"pack"`
				Severity    string `json:"severity"`
				HostOnly    bool   `json:"host_only"`
				Description string `json:"description"`
			}
			var list []rule
			for _, r := range policy.Rules() {
				pack, severity := r.Pack, "high"
				if pack == "" {
					pack = "built-in"
				}
				if r.Critical {
					severity = "critical"
				}
				list = append(list, rule{r.ID, pack, severity, r.HostOnly, r.Description})
			}
			if kind, err := rulesOut.kind(); err != nil || kind != "table" {
				return c.emit(rulesOut, list, nil)
			}
			t := &table{}
			t.header("RULE", "PACK", "SEVERITY", "HOST", "DESCRIPTION")
			for _, r := range list {
				t.row(r.ID, r.Pack, r.Severity, map[bool]string{true: "only", false: "-"}[r.HostOnly], r.Description)
			}
			t.row("")
			t.row("PACKS (turn one off with policy.disabled_packs; critical rules cannot be allowlisted)")
			if err := t.write(c); err != nil {
				return err
			}
			t = &table{}
			t.header("PACK", "RULES", "TOOLS")
			for _, p := range policy.Packs() {
				t.row(p.Name, fmt.Sprint(len(p.Rules)), strings.Join(p.Tools, " "))
			}
			return t.write(c)
		},
	}
	rulesOut.register(rules)
	cmd.AddCommand(c.policyCheckCmd(), rules)
	return cmd
}

func (c cli) policyCheckCmd() *cobra.Command {
	var (
		mode, origin, config, shell, cwd string
		host                             bool
		envs, secretNames                []string
		out                              outputFlag
	)
	cmd := &cobra.Command{
		Use:   "check [flags] [--] COMMAND...",
		Short: "judge a command as a worker would (exit 0: approve, 3: deny)",
		Example: `  sandrun policy check -- 'rm -rf ~'                # exits 3
  sandrun policy check -- git status
  sandrun policy check --origin subagent --approval allowlist -- git push --force   # exits 3`,
		RunE: func(_ *cobra.Command, args []string) error {
			return c.policyCheck(args, policyCheckFlags{mode, origin, config, shell, cwd, host, envs, secretNames, out})
		},
	}
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	fs.StringVar(&mode, "approval", "", "the job's approval mode: deny, approve or allowlist (default: the origin's, deny)")
	fs.StringVar(&origin, "origin", "manual", "origin: manual, cron, batch or subagent")
	fs.BoolVar(&host, "host-access", true, "the backend can touch the host (false: an isolated sandbox; host-only rules are skipped)")
	fs.StringVar(&config, "config", "", "worker config file whose policy section (ceiling, allowlist) applies")
	fs.StringVar(&shell, "shell", "", "the shell that runs the command: sh (/bin/sh -c: dash, busybox ash; also posix) or bash (default: the worker's, sh)")
	fs.StringVar(&cwd, "cwd", "", "the job's working directory (relative paths in the command are judged in it)")
	fs.StringArrayVar(&envs, "env", nil, "K=V the job's environment variable (repeatable)")
	fs.StringArrayVar(&secretNames, "secret-env", nil, "NAME of a secret variable: judged by name, its value unknown (repeatable)")
	out.register(cmd)
	return cmd
}

type policyCheckFlags struct {
	mode, origin, config, shell, cwd string
	host                             bool
	envs, secretNames                []string
	out                              outputFlag
}

func (c cli) policyCheck(args []string, f policyCheckFlags) error {
	mode, origin, config, cwd, host := &f.mode, &f.origin, &f.config, &f.cwd, &f.host
	envs, secretNames := f.envs, f.secretNames
	if _, err := f.out.kind(); err != nil {
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
	sh, err := policy.ParseShell(f.shell)
	if err != nil {
		return usageErr("--shell: %v", err)
	}
	command, err := commandLine(args)
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
	if kind, _ := f.out.kind(); kind != "table" {
		type decision struct {
			Verdict string         `json:"verdict"`
			Mode    policy.Mode    `json:"mode"`
			Shell   policy.Shell   `json:"shell"`
			Capped  bool           `json:"capped"`
			Rule    string         `json:"rule,omitempty"`
			Reason  string         `json:"reason,omitempty"`
			Matches []policy.Match `json:"matches"`
		}
		v := decision{verdict, dec.Mode, dec.Shell, dec.Capped, dec.Rule, dec.Reason, dec.Matches}
		if v.Matches == nil {
			v.Matches = []policy.Match{}
		}
		if err := c.emit(f.out, v, nil); err != nil {
			return err
		}
	} else {
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
	}
	if !dec.Allow {
		return exitError{code: exitDenied}
	}
	return nil
}
