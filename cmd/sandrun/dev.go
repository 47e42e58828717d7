package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// devJobUser runs the commands of `sandrun dev`'s built-in local profile
// when it runs as root: nobody.
const devJobUser = "65534:65534"

// devCmd runs an embedded JetStream server, a worker and the scheduler
// in one process: everything sandrun needs on one machine.
func (c cli) devCmd() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "embedded NATS + worker + scheduler in one process (--cluster 3: three nodes)",
		Long: `Run everything sandrun needs on this machine: an embedded JetStream server
(with credentials and encryption at rest), a worker and the scheduler. It saves
a context (--save-context, default "dev") so that the CLI here needs no flag.`,
		Example: `  sandrun dev
  sandrun dev --demo
  sandrun dev --config examples/worker.yaml --slots 8`,
		Args: argsUsage(0, 0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.dev(cmd.Context(), o) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "data", ".sandrun", "data directory for the embedded JetStream file store")
	fs.IntVar(&o.port, "port", 4222, "client port of the embedded server on 127.0.0.1 (-1: any free port)")
	fs.IntVar(&o.httpPort, "http-port", 0, "monitoring port of the embedded server (0: off)")
	fs.BoolVar(&o.syncAlways, "sync-always", false, "fsync every write (durable against power loss, ~5x slower)")
	fs.IntVar(&o.slots, "slots", 4, "worker concurrency slots")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address")
	fs.StringVar(&o.schedules, "schedules", "", "schedules YAML file (default: one example schedule, dev-heartbeat)")
	fs.StringVar(&o.configFile, "config", "", "YAML config file (worker, backends, policy)")
	fs.BoolVar(&o.demo, "demo", false, "submit example jobs, print how each ends, and exit")
	fs.IntVar(&o.cluster, "cluster", 1, "embedded servers: 3 runs a 3-node JetStream cluster on loopback with R3 streams and buckets")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "log at debug level")
	fs.BoolVar(&o.noAuth, "no-auth", false, "accept connections without credentials and store data unencrypted (benchmarks only: anyone who reaches the port runs anything)")
	fs.StringVar(&o.saveContext, "save-context", "dev", "save a context of this name for the CLI here (made current when none is; \"\": none)")
	return cmd
}

type devOptions struct {
	dir, metricsAddr, schedules, configFile, saveContext string
	port, httpPort, slots, cluster                       int
	syncAlways, demo, verbose, noAuth                    bool
}

func (c cli) dev(ctx context.Context, o devOptions) error {
	if o.slots < 1 {
		return usageErr("--slots: must be at least 1, got %d", o.slots)
	}
	if o.saveContext != "" {
		if err := validContextName(o.saveContext); err != nil {
			return fmt.Errorf("--save-context: %w", err)
		}
	}
	cfg, err := app.LoadFile(o.configFile)
	if err != nil {
		return err
	}
	cfg.Worker.Slots = o.slots
	if len(cfg.Backends) == 0 && os.Geteuid() == 0 && !o.noAuth {
		// The built-in local profile of a worker running as root: its
		// commands run as nobody, so that they cannot read the
		// credentials and the secrets key in the data directory.
		cfg.Backends = map[string]app.BackendConfig{"local": {Kind: "local", ProfileSettings: app.ProfileSettings{User: devJobUser}}}
	}
	if o.metricsAddr != "" {
		cfg.MetricsAddr = o.metricsAddr
	}
	if o.schedules != "" {
		cfg.SchedulesFile = o.schedules
	} else {
		// An example, so cron jobs are seen firing out of the box.
		every := "@every 30s"
		if o.demo {
			every = "@every 2s"
		}
		cfg.Schedules = []scheduler.Schedule{{Name: "dev-heartbeat", Cron: every,
			Job: jobs.Spec{Command: `echo "cron slot fired at $(date -u +%H:%M:%S)"`, Timeout: jobs.Duration(time.Minute)}}}
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	if o.demo {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))

	if o.cluster < 1 || o.cluster > 5 {
		return usageErr("dev: --cluster: want 1 to 5 servers, got %d", o.cluster)
	}
	embedded := natsutil.EmbeddedConfig{Dir: o.dir, Port: o.port, HTTPPort: o.httpPort, SyncAlways: o.syncAlways}
	var creds string
	if !o.noAuth {
		if creds, err = secure(&embedded, o.dir, filepath.Join(o.dir, "auth")); err != nil {
			return err
		}
		cfg.NATS.Creds = creds
		if cfg.Worker.SecretsKeyFile == "" {
			cfg.Worker.SecretsKeyFile = filepath.Join(o.dir, "auth", "secrets.nk")
		}
	}
	var servers []*server.Server
	if o.cluster == 1 {
		srv, err := natsutil.StartEmbedded(embedded)
		if err != nil {
			return err
		}
		servers = append(servers, srv)
	} else {
		embedded.HTTPPort = 0
		if servers, err = natsutil.StartCluster(ctx, o.dir, o.cluster, embedded); err != nil {
			return err
		}
		cfg.Layout.Replicas = min(o.cluster, 3)
	}
	defer func() {
		for _, srv := range servers {
			srv.Shutdown()
			srv.WaitForShutdown()
		}
	}()
	cfg.NATS.URL = natsutil.ClusterURL(servers)
	if creds != "" {
		// The CLI of the same user on this machine finds its way in.
		if err := natsutil.SaveLocalContext(servers[0].ClientURL(), creds); err != nil {
			log.Warn("could not record the local credentials; give the CLI --creds "+creds, "err", err)
		}
	}
	if o.saveContext != "" && !o.demo {
		saveServerContext(c.stderr, o.saveContext, cfg.NATS.URL, creds)
	}
	cfg.Collectors = append(cfg.Collectors, metrics.NewServerCollector(natsutil.Stats(servers[0])))
	if !o.demo {
		fmt.Fprintf(c.stderr, "sandrun dev: embedded NATS at %s (%d server(s), replicas %d, data in %s); Ctrl-C to stop\n",
			cfg.NATS.URL, len(servers), max(cfg.Layout.Replicas, 1), o.dir)
		if creds != "" {
			fmt.Fprintf(c.stderr, "sandrun dev: credentials in %s (the CLI here finds %s; others get their own: sandrun auth add)\n",
				filepath.Dir(creds), filepath.Base(creds))
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	demoErr := make(chan error, 1)
	ready := func(st *jobs.Store, _ *metrics.Metrics) {
		if !o.demo {
			return
		}
		go func() {
			demoErr <- c.runDemo(runCtx, client.New(st).As("manual.admin"))
			stop()
		}()
	}
	if err := app.Run(runCtx, cfg, app.Roles{Worker: true, Scheduler: true}, log, ready); err != nil {
		return err
	}
	if o.demo {
		return <-demoErr
	}
	return nil
}

// demoJobs show the main paths a job can take.
var demoJobs = []struct {
	what string
	spec jobs.Spec
}{
	{"a command that succeeds", jobs.Spec{Command: "echo hello from $(hostname); uname -s"}},
	{"a command that fails (no retries)", jobs.Spec{Command: "echo failing >&2; exit 3", MaxAttempts: 1}},
	{"a flaky command, retried after its backoff", jobs.Spec{
		Command:     `f=/tmp/sandrun-demo-$SANDRUN_DEMO; n=$(cat $f 2>/dev/null || echo 0); echo $((n+1)) > $f; [ $n -ge 1 ] && echo "ok on attempt $((n+1))" || { echo "attempt $((n+1)) fails"; exit 1; }`,
		MaxAttempts: 3, Retry: &jobs.Backoff{Initial: jobs.Duration(time.Second)}}},
	{"a command that outlives its timeout", jobs.Spec{Command: "sleep 30", Timeout: jobs.Duration(time.Second)}},
	{"a dangerous command under the default (deny) policy", jobs.Spec{Command: "rm -rf / --no-preserve-root"}},
}

func (c cli) runDemo(ctx context.Context, cl *client.Client) error {
	tag := fmt.Sprint(time.Now().UnixNano())
	ids := make([]string, len(demoJobs))
	for i, d := range demoJobs {
		spec := d.spec
		spec.Env = map[string]string{"SANDRUN_DEMO": tag}
		sub, err := cl.Submit(ctx, spec)
		if err != nil {
			return err
		}
		ids[i] = sub.ID
		fmt.Fprintf(c.stdout, "submitted %s  %s\n", sub.ID, d.what)
	}
	fmt.Fprintln(c.stdout)
	failed := 0
	for i, id := range ids {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		r, err := cl.Wait(wctx, id)
		cancel()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", id, err)
		}
		out := strings.TrimSpace(r.Stdout.Head + r.Stderr.Head)
		fmt.Fprintf(c.stdout, "%-10s exit=%-3d attempts=%d  %s\n", r.State, r.ExitCode, r.Attempt, demoJobs[i].what)
		if out != "" {
			fmt.Fprintf(c.stdout, "           output: %s\n", strings.ReplaceAll(out, "\n", " | "))
		}
		if r.Error != "" {
			fmt.Fprintf(c.stdout, "           why: %s\n", r.Error)
		}
		want := []jobs.State{jobs.StateSucceeded, jobs.StateFailed, jobs.StateSucceeded, jobs.StateTimedOut, jobs.StateDenied}[i]
		if r.State != want {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d demo jobs ended in an unexpected state", failed)
	}
	// And one from the scheduler: the example schedule fires every 2s.
	cron, err := c.waitCron(ctx, cl)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%-10s exit=%-3d attempts=%d  a cron job of the example schedule dev-heartbeat (%s)\n           output: %s\n",
		cron.State, cron.ExitCode, cron.Attempt, cron.JobID, strings.TrimSpace(cron.Stdout.Head))
	fmt.Fprintln(c.stdout, "\nall demo jobs ended as expected. Run `sandrun dev` to keep a server up, then `sandrun submit --wait -- echo hi` from another terminal.")
	return nil
}

// waitCron waits for the first finished job of the example schedule.
func (c cli) waitCron(ctx context.Context, cl *client.Client) (jobs.Result, error) {
	deadline := time.Now().Add(time.Minute)
	var lastErr error
	for time.Now().Before(deadline) {
		list, err := cl.List(ctx, client.ListFilter{State: jobs.StateSucceeded})
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) {
			// a cluster's stream may be between leaders a moment: ask again
			lastErr = err
			list = nil
		} else if err != nil {
			return jobs.Result{}, err
		}
		for _, st := range list {
			if st.Run.Spec.Labels["schedule"] == "dev-heartbeat" && st.Result != nil {
				return *st.Result, nil
			}
		}
		select {
		case <-ctx.Done():
			return jobs.Result{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if lastErr != nil {
		return jobs.Result{}, fmt.Errorf("no cron job of dev-heartbeat finished within a minute (last: %w)", lastErr)
	}
	return jobs.Result{}, fmt.Errorf("no cron job of dev-heartbeat finished within a minute")
}

// secure turns authentication and encryption at rest on for an embedded
// server: the deployment's credentials in authDir (made on first start,
// owner-only) and the store's key in dataDir. It returns the admin
// credentials.
func secure(e *natsutil.EmbeddedConfig, dataDir, authDir string) (string, error) {
	m, err := auth.Ensure(authDir)
	if err != nil {
		return "", err
	}
	key, err := auth.EncryptionKey(filepath.Join(dataDir, "jetstream.key"))
	if err != nil {
		return "", err
	}
	e.Auth, e.EncryptionKey = m, key
	return m.CredsPath("admin"), nil
}
