package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
)

func (c cli) submitCmd() *cobra.Command {
	var (
		spec                         jobs.Spec
		envs, secrets, labels        []string
		file, timeout, image, origin string
		wait                         bool
		out                          outputFlag
	)
	cmd := &cobra.Command{
		Use:   "submit [flags] [--] COMMAND...",
		Short: "submit a job (prints its id; --wait follows it)",
		Long: `Submit a job. The first word that is not a flag starts the command, as with
docker run; everything after it (or after --) is the command, verbatim.
One word is a shell script as written; several words each arrive as given.`,
		Example: `  sandrun submit -- echo hello
  sandrun submit --wait -- 'echo hi; exit 3'         # exits 3
  sandrun submit --backend docker --image alpine:3 -- cat /etc/os-release
  sandrun submit -f examples/job.yaml --label run=2  # a spec file; flags override it`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if _, err := out.kind(); err != nil {
				return err
			}
			flags := cmd.Flags()
			if !flags.Changed("max-attempts") {
				spec.MaxAttempts = 0 // the file's, else the default
			}
			if file != "" {
				base, err := readSpecFile(file, c)
				if err != nil {
					return err
				}
				spec = mergeSpec(base, spec)
			}
			command, err := commandLine(args)
			if err != nil {
				return err
			}
			if command != "" {
				spec.Command = command
			}
			if spec.Command == "" {
				return usageErr("command: give it after --, e.g. sandrun submit -- echo hi")
			}
			if image != "" {
				if spec.Container == nil {
					spec.Container = &backends.ContainerOptions{}
				}
				spec.Container.Image = image
			}
			if flags.Changed("timeout") {
				var d jobs.Duration
				if err := d.UnmarshalJSON([]byte(fmt.Sprintf("%q", timeout))); err != nil {
					return usageErr("--timeout: %v", err)
				}
				if d <= 0 || d.D() > jobs.MaxTimeout {
					return usageErr("--timeout: must be > 0 and <= %s, got %s", jobs.MaxTimeout, timeout)
				}
				spec.Timeout = d
			}
			if flags.Changed("max-attempts") && (spec.MaxAttempts < 1 || spec.MaxAttempts > jobs.MaxAttemptsCap) {
				return usageErr("--max-attempts: must be 1..%d, got %d", jobs.MaxAttemptsCap, spec.MaxAttempts)
			}
			if origin != "" {
				spec.Origin = jobs.Origin(origin)
			}
			if spec.Queue == "" {
				spec.Queue = c.conn.queue()
			}
			if err := addKV(&spec.Env, envs, "--env"); err != nil {
				return err
			}
			for _, s := range secrets {
				k, v, err := secretValue(s, os.LookupEnv)
				if err != nil {
					return err
				}
				if spec.Env == nil {
					spec.Env = map[string]string{}
				}
				spec.Env[k] = v
				spec.SecretEnv = append(spec.SecretEnv, k)
			}
			if err := addKV(&spec.Labels, labels, "--label"); err != nil {
				return err
			}
			// Validate before connecting: a bad spec never needs a server.
			if err := spec.WithDefaults().Validate(); err != nil {
				return err
			}
			cl, closeFn, err := c.connect(ctx)
			if err != nil {
				return err
			}
			defer closeFn()
			sub, err := cl.Submit(ctx, spec)
			if err != nil {
				return err
			}
			c.warnPlacement(ctx, cl, sub.Queue, sub.Backend)
			if kind, _ := out.kind(); kind != "table" {
				if err := c.emit(out, sub.Redacted(), nil); err != nil {
					return err
				}
			} else if !wait {
				fmt.Fprintln(c.stdout, sub.ID)
			}
			if !wait {
				return nil
			}
			fmt.Fprintf(c.stderr, "sandrun: job %s submitted\n", sub.ID)
			r, err := cl.Follow(ctx, sub.ID, client.FollowOptions{Stdout: c.stdout, Stderr: c.stderr})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "sandrun: job %s %s%s\n", r.JobID, r.State, detail(r))
			return exitError{code: r.ExitCodeFor()}
		},
	}
	fs := cmd.Flags()
	// The command's own flags are its own: the first operand ends ours.
	fs.SetInterspersed(false)
	fs.StringVarP(&file, "file", "f", "", "read the job spec from a JSON or YAML file (- for stdin); flags override it")
	fs.StringVar(&spec.Queue, "queue", "", "queue (default: the context's, else \"default\")")
	fs.StringVar(&spec.Backend, "backend", "", "backend profile (default \"local\")")
	fs.StringVar(&timeout, "timeout", "", "run timeout, e.g. 30s (default 1h)")
	fs.StringArrayVar(&envs, "env", nil, "K=V environment variable (repeatable)")
	fs.StringArrayVar(&secrets, "secret-env", nil, "NAME: a secret variable whose value comes from this environment's $NAME (NAME=@FILE: from a file), sealed to the workers and masked in output; never a value on the command line (repeatable)")
	fs.StringArrayVar(&spec.ForwardEnv, "forward-env", nil, "NAME: a variable the worker supplies from its own environment or files, as the backend profile's forward_env lists it; the job never holds its value (repeatable)")
	fs.StringArrayVar(&labels, "label", nil, "K=V label (repeatable)")
	fs.StringVar(&spec.Cwd, "cwd", "", "working directory")
	fs.StringVar(&spec.Workspace, "workspace", "", "run in this durable workspace of yours (its working directory; its jobs run one at a time, in submission order; local: a directory)")
	fs.StringVar(&spec.Session, "session", "", "run in the backend's persistent session of this key (docker: a shared container)")
	fs.StringVar(&image, "image", "", "container image (singularity: docker://, oras://, library:// or a .sif path)")
	fs.StringVar(&spec.Approval, "approval", "", "approval mode: deny, approve or allowlist (default: the origin's)")
	fs.StringVar(&origin, "origin", "", "origin: manual, cron, batch or subagent (default manual)")
	fs.IntVar(&spec.MaxAttempts, "max-attempts", jobs.DefaultMaxAttempts, "attempts before the job is dead, 1 to 100")
	fs.StringVar(&spec.ID, "id", "", "job id (default: a new ULID); a given id is accepted once")
	fs.BoolVar(&wait, "wait", false, "follow the job's output and exit with its exit code (124 on timeout)")
	out.register(cmd)
	fs.Lookup("output").Usage = "print the submitted spec as json or yaml instead of the id"
	return cmd
}

func detail(r jobs.Result) string {
	switch {
	case r.Rule != "":
		return fmt.Sprintf(" (rule %s: %s)", r.Rule, r.Error)
	case r.Error != "":
		return " (" + r.Error + ")"
	}
	return ""
}

func readSpecFile(name string, c cli) (jobs.Spec, error) {
	if name == "-" {
		return jobs.DecodeFile("stdin.json", c.stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return jobs.Spec{}, err
	}
	defer func() { _ = f.Close() }()
	return jobs.DecodeFile(name, f)
}

// mergeSpec overlays the non-zero flag values of over onto base.
func mergeSpec(base, over jobs.Spec) jobs.Spec {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&base.Queue, over.Queue)
	set(&base.Backend, over.Backend)
	set(&base.Cwd, over.Cwd)
	set(&base.Approval, over.Approval)
	set(&base.ID, over.ID)
	if over.MaxAttempts != 0 {
		base.MaxAttempts = over.MaxAttempts
	}
	return base
}

func addKV(m *map[string]string, kvs []string, flagName string) error {
	for _, s := range kvs {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return usageErr("%s %q: want KEY=VALUE", flagName, redactKV(s))
		}
		if *m == nil {
			*m = map[string]string{}
		}
		(*m)[k] = v
	}
	return nil
}

// secretValue reads a --secret-env argument: NAME takes the value of
// $NAME, NAME=@FILE the contents of FILE (one trailing newline dropped).
// A value written on the command line is refused: every user of the
// machine can read a process's arguments.
func secretValue(arg string, lookup func(string) (string, bool)) (name, value string, err error) {
	name, src, hasSrc := strings.Cut(arg, "=")
	if name == "" {
		return "", "", usageErr("--secret-env %q: want NAME or NAME=@FILE", redactKV(arg))
	}
	if !hasSrc {
		v, ok := lookup(name)
		if !ok {
			return "", "", usageErr("--secret-env %s: $%s is not set in this environment (or use %s=@FILE)", name, name, name)
		}
		return name, v, nil
	}
	file, ok := strings.CutPrefix(src, "@")
	if !ok {
		return "", "", usageErr("--secret-env %s=…: a secret value on the command line is visible to every user (ps); use --secret-env %s (from $%s) or %s=@FILE", name, name, name, name)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("--secret-env %s: %w", name, err)
	}
	return name, strings.TrimSuffix(string(data), "\n"), nil
}

// redactKV shows only the key of a malformed K=V argument.
func redactKV(s string) string {
	if k, _, ok := strings.Cut(s, "="); ok {
		return k + "=…"
	}
	if len(s) > 3 {
		return s[:3] + "…"
	}
	return s
}

// warnPlacement tells the user, on stderr, when no live worker could run
// the job now (the job waits in its queue for one).
func (c cli) warnPlacement(ctx context.Context, cl *client.Client, queue, backend string) {
	if msg, err := cl.CheckPlacement(ctx, queue, backend); err == nil && msg != "" {
		fmt.Fprintf(c.stderr, "sandrun: warning: %s; the job waits in its queue until one does\n", msg)
	}
}
