package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/worker"
)

// NATSFlags registers the connection flags every command takes.
func NATSFlags(fs *flag.FlagSet, n *NATSConfig) {
	fs.StringVar(&n.URL, "nats-url", n.URL, "NATS server URL(s), comma-separated (env SANDRUN_NATS_URL; default "+natsutil.DefaultURL+")")
	fs.StringVar(&n.Creds, "creds", n.Creds, "NATS credentials file (env SANDRUN_NATS_CREDS)")
	fs.StringVar(&n.TLSCert, "tls-cert", n.TLSCert, "client TLS certificate (env SANDRUN_NATS_TLS_CERT)")
	fs.StringVar(&n.TLSKey, "tls-key", n.TLSKey, "client TLS key (env SANDRUN_NATS_TLS_KEY)")
	fs.StringVar(&n.TLSCA, "tls-ca", n.TLSCA, "CA certificate to verify the server (env SANDRUN_NATS_TLS_CA)")
}

// ParseDaemonFlags builds a daemon Config: the --config file, then
// environment, then flags.
func ParseDaemonFlags(name string, args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", os.Getenv("SANDRUN_CONFIG"), "YAML config file (env SANDRUN_CONFIG)")
	// Parse once to find the file, then again over the file's values so
	// flags win.
	var probe Config
	registerDaemonFlags(fs, &probe)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	cfg, err := LoadFile(*path)
	if err != nil {
		return Config{}, err
	}
	for _, d := range cfg.Deprecations {
		fmt.Fprintf(stderr, "%s: warning: %s\n", name, d)
	}
	applyEnv(&cfg)
	fs2 := flag.NewFlagSet(name, flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	fs2.String("config", "", "")
	registerDaemonFlags(fs2, &cfg)
	if err := fs2.Parse(args); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func registerDaemonFlags(fs *flag.FlagSet, c *Config) {
	NATSFlags(fs, &c.NATS)
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "serve Prometheus metrics on this address (e.g. :9464)")
	fs.BoolVar(&c.Profiles, "profiles", c.Profiles, "also serve Go's runtime profiles (/debug/pprof/) on the metrics address; they need no credentials")
	fs.StringVar(&c.Worker.Name, "name", c.Worker.Name, "worker name (default hostname-pid)")
	fs.Func("queues", "comma-separated queues to serve (default \"default\")", func(s string) error {
		c.Worker.Queues = strings.Split(s, ",")
		return nil
	})
	fs.IntVar(&c.Worker.Slots, "slots", c.Worker.Slots, fmt.Sprintf("jobs run at once (default %d)", worker.DefaultSlots))
	fs.DurationVar(&c.Worker.LeaseTTL, "lease-ttl", c.Worker.LeaseTTL, "job lease TTL (default "+worker.DefaultLeaseTTL.String()+")")
	fs.DurationVar(&c.Worker.DrainTimeout, "drain-timeout", c.Worker.DrainTimeout, "on SIGTERM, how long running jobs may finish (default "+worker.DefaultDrainTimeout.String()+")")
	fs.DurationVar(&c.Worker.KillGrace, "kill-grace", c.Worker.KillGrace, "time between SIGTERM and SIGKILL of a job (default "+worker.DefaultKillGrace.String()+")")
	fs.DurationVar(&c.Worker.ElectionTTL, "election-ttl", c.Worker.ElectionTTL, "leader election TTL (default "+worker.DefaultElectionTTL.String()+")")
	fs.DurationVar(&c.Worker.ReaperScan, "reaper-scan", c.Worker.ReaperScan, "reaper rescan period (default "+worker.DefaultReaperScan.String()+")")
	fs.DurationVar(&c.Worker.WorkspaceIdle, "workspace-idle", c.Worker.WorkspaceIdle, "remove workspaces no job has used this long (default 0: keep them)")
	fs.DurationVar(&c.Worker.PullWait, "pull-wait", c.Worker.PullWait, "how long one pull waits for a message (default "+worker.DefaultPullWait.String()+")")
	fs.Int64Var(&c.Worker.OutputMax, "output-max", c.Worker.OutputMax, fmt.Sprintf("bytes of each output stream kept per attempt; the rest is counted, not kept (default %d)", worker.DefaultOutputMax))
	fs.StringVar(&c.SchedulesFile, "schedules", c.SchedulesFile, "schedules YAML file")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "json or text (default json)")
	fs.IntVar(&c.Layout.Replicas, "replicas", c.Layout.Replicas, "stream and bucket replicas (1, or 3 on a cluster)")
	fs.Func("retention", "how long finished jobs are kept: a duration for every state, or STATE=DURATION,... (succeeded, failed, timed_out, canceled, denied, dead, events); default succeeded=24h, failed, timed_out, denied=168h, canceled=72h, dead=336h, events=1h", func(s string) error {
		return c.Layout.Retention.Set(s)
	})
	fs.StringVar(&c.Worker.SecretsKeyFile, "secrets-key", c.Worker.SecretsKeyFile, "the workers' secrets key (DATA/auth/secrets.nk): opens secret_env values (worker.secrets_key_file)")
}

func applyEnv(c *Config) {
	if v := os.Getenv("SANDRUN_METRICS_ADDR"); v != "" {
		c.MetricsAddr = v
	}
	if v := os.Getenv("SANDRUN_QUEUES"); v != "" {
		c.Worker.Queues = strings.Split(v, ",")
	}
	if v := os.Getenv("SANDRUN_WORKER_NAME"); v != "" {
		c.Worker.Name = v
	}
}

// Logger returns the daemon logger for format ("json" or "text").
func Logger(format string, w io.Writer) (*slog.Logger, error) {
	switch format {
	case "", "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("log_format: %q is not json or text", format)
}

// SignalContext is cancelled on SIGINT or SIGTERM (the drain signal).
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// DaemonMain is the whole of cmd/worker and cmd/scheduler: parse, validate,
// run until signalled. It returns the process exit code.
func DaemonMain(name string, roles Roles, args []string) int {
	cfg, err := ParseDaemonFlags(name, args, os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 2
	}
	log, err := Logger(cfg.LogFormat, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 2
	}
	ctx, cancel := SignalContext()
	defer cancel()
	start := time.Now()
	if err := Run(ctx, cfg, roles, log, nil); err != nil {
		var ce ConfigError
		if errors.As(err, &ce) {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, withFlagNames(ce.Err))
			return 2
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	log.Info("exited", "uptime", time.Since(start).Round(time.Second).String())
	return 0
}

// flagOf names the daemon flag of each worker field its errors name.
var flagOf = map[string]string{
	"worker.slots": "--slots", "worker.lease_ttl": "--lease-ttl", "worker.drain_timeout": "--drain-timeout",
	"worker.kill_grace": "--kill-grace", "worker.election_ttl": "--election-ttl", "worker.reaper_scan": "--reaper-scan",
	"worker.workspace_idle": "--workspace-idle", "worker.pull_wait": "--pull-wait", "worker.output_max": "--output-max",
	"worker.queues": "--queues",
}

// withFlagNames adds, to each line of err that names a worker field, the
// flag that sets it: "worker.reaper_scan (--reaper-scan): ...".
func withFlagNames(err error) string {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		field, rest, ok := strings.Cut(l, ":")
		if f, known := flagOf[strings.SplitN(field, "[", 2)[0]]; ok && known {
			lines[i] = field + " (" + f + "):" + rest
		}
	}
	return strings.Join(lines, "\n")
}
