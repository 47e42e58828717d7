package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
)

func (c cli) submit(ctx context.Context, args []string) error {
	var (
		n       app.NATSConfig
		spec    jobs.Spec
		envs    []string
		secrets []string
		labels  []string
	)
	fs := c.flags("submit", &n)
	file := fs.String("f", "", "read the job spec from a JSON or YAML file (- for stdin); flags override it")
	fs.StringVar(&spec.Queue, "queue", "", "queue (default \"default\")")
	fs.StringVar(&spec.Backend, "backend", "", "backend profile (default \"local\")")
	timeout := fs.String("timeout", "", "run timeout, e.g. 30s (default 1h)")
	fs.Func("env", "K=V environment variable (repeatable)", func(s string) error { envs = append(envs, s); return nil })
	fs.Func("secret-env", "NAME: a secret variable whose value comes from this environment's $NAME (NAME=@FILE: from a file), sealed to the workers and masked in output; never a value on the command line (repeatable)", func(s string) error { secrets = append(secrets, s); return nil })
	fs.Func("forward-env", "NAME: a variable the worker supplies from its own environment or files, as the backend profile's forward_env lists it; the job never holds its value (repeatable)", func(s string) error {
		spec.ForwardEnv = append(spec.ForwardEnv, s)
		return nil
	})
	fs.Func("label", "K=V label (repeatable)", func(s string) error { labels = append(labels, s); return nil })
	fs.StringVar(&spec.Cwd, "cwd", "", "working directory")
	fs.StringVar(&spec.Workspace, "workspace", "", "run in this durable workspace of yours (its working directory; its jobs run one at a time, in submission order; local: a directory)")
	fs.StringVar(&spec.Session, "session", "", "run in the backend's persistent session of this key (docker: a shared container)")
	image := fs.String("image", "", "container image (singularity: docker://, oras://, library:// or a .sif path)")
	fs.StringVar(&spec.Approval, "approval", "", "approval mode: deny, approve or allowlist (default: the origin's)")
	origin := fs.String("origin", "", "origin: manual, cron, batch or subagent (default manual)")
	fs.IntVar(&spec.MaxAttempts, "max-attempts", 0, "attempts before the job is dead (default 3)")
	fs.StringVar(&spec.ID, "id", "", "job id (default: a new ULID); a given id is accepted once")
	wait := fs.Bool("wait", false, "follow the job's output and exit with its exit code (124 on timeout)")
	asJSON := fs.Bool("json", false, "print the submitted spec as JSON instead of the id")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file != "" {
		base, err := readSpecFile(*file, c)
		if err != nil {
			return err
		}
		spec = mergeSpec(base, spec)
	}
	cmd, err := commandLine(fs.Args())
	if err != nil {
		return err
	}
	if cmd != "" {
		spec.Command = cmd
	}
	if spec.Command == "" {
		return usageErr("command: give it after --, e.g. sandrun submit -- echo hi")
	}
	if *image != "" {
		if spec.Container == nil {
			spec.Container = &backends.ContainerOptions{}
		}
		spec.Container.Image = *image
	}
	if *timeout != "" {
		var d jobs.Duration
		if err := d.UnmarshalJSON([]byte(fmt.Sprintf("%q", *timeout))); err != nil {
			return usageErr("--timeout: %v", err)
		}
		spec.Timeout = d
	}
	if *origin != "" {
		spec.Origin = jobs.Origin(*origin)
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
	cl, closeFn, err := connect(ctx, n)
	if err != nil {
		return err
	}
	defer closeFn()
	sub, err := cl.Submit(ctx, spec)
	if err != nil {
		return err
	}
	c.warnPlacement(ctx, cl, sub.Queue, sub.Backend)
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sub.Redacted())
	} else if !*wait {
		fmt.Fprintln(c.stdout, sub.ID)
	}
	if !*wait {
		return nil
	}
	fmt.Fprintf(c.stderr, "sandrun: job %s submitted\n", sub.ID)
	r, err := cl.Follow(ctx, sub.ID, client.FollowOptions{Stdout: c.stdout, Stderr: c.stderr})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "sandrun: job %s %s%s\n", r.JobID, r.State, detail(r))
	return exitError{code: r.ExitCodeFor()}
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
