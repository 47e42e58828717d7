// Command bench runs one workload side by side through sandrun, asynq and
// River on this machine and prints a Markdown report:
//
//	cd bench && go run . -jobs 5000 -concurrency 8
//
// The workload is N jobs that each run `sh -c true` as a child process.
// Every system gets the same N, the same number of concurrent enqueuers
// (goroutines sharing one client) and the same worker concurrency C:
// sandrun's `worker --slots C` with the local backend, asynq's
// Config.Concurrency and River's MaxWorkers on the default queue, whose
// handlers exec the same command with os/exec. The systems run one after
// another, never at once:
//
//   - raw: C goroutines spawning the command with os/exec, no queue — the
//     machine's ceiling for this workload;
//   - sandrun: a `sandrun server` node (embedded NATS, JetStream file
//     storage, replicas 1) and a `sandrun worker` process;
//   - sandrun-secure: the same as shipped: credentials per role, the store
//     encrypted at rest, and a secret variable in every job (sealed to
//     the worker, masked in its output);
//   - sandrun-cluster: three `sandrun server` nodes routed as a cluster,
//     the layout at replicas 3, one worker;
//   - asynq: Debian's redis-server, the asynq client and server in this
//     process;
//   - river: Debian's PostgreSQL (initdb into a temp dir), the River
//     client inserting and working in this process, migrated with
//     rivermigrate first.
//
// Each system first runs a few warm-up jobs, then two measured phases:
//
//  1. throughput: N jobs enqueued as fast as the enqueuers go; throughput
//     is N over the time from just before the first enqueue to the end of
//     the last job. Enqueue→start percentiles of this phase are labelled
//     "under backlog": they are mostly queueing time.
//  2. latency: -latency-jobs jobs, one every -latency-interval (well below
//     every system's capacity), so that enqueue→start is the dispatch
//     latency itself rather than time spent queued.
//
// Enqueue time is taken just before the enqueue call; start time just
// before the exec (asynq and River carry the enqueue time in the job's
// payload; sandrun reads the committed result's started_at, which its
// local backend takes just before starting the process, on the same
// machine's clock). A job's end is, for sandrun, its committed result
// seen through a KV watch (so sandrun's figure includes committing and
// observing the result); for asynq and River, the handler's return.
//
// Fairness, and what differs. Persistence is not alike: sandrun stores
// in JetStream files with NATS's default sync (every 2 minutes; with
// -sync-always, every write); redis runs without persistence (with
// -redis-aof: an append-only file fsynced every second); PostgreSQL runs
// with fsync and synchronous_commit on, its defaults, so every River
// insert and completion waits for a WAL flush. Dispatch is each library's
// default unless set: asynq's processor dequeues from one loop and,
// finding the queue empty, sleeps about TaskCheckInterval (1s;
// -asynq-check-interval) before it looks again, which dominates its
// latency at a slow pace; River fetches on LISTEN/NOTIFY insert
// notifications and on job completions, at most once per FetchCooldown
// (100ms; -river-fetch-cooldown), at most its free worker slots each
// time, and polls every FetchPollInterval (1s) — so for jobs this short
// its default ceiling is about C jobs per 100ms. sandrun's worker holds
// long-poll pulls on a JetStream consumer. The latency phase's default
// pace (one job every 20ms) stays under these ceilings at C=8; the report
// flags a system whose throughput was not twice the pace. sandrun's
// worker and NATS are processes of their own; asynq's and River's workers
// share this process with the enqueuers. Figures taken while other work
// runs on the machine are noise, not results.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// systems are the -systems names, in the order they run.
var systems = []string{"raw", "sandrun", "sandrun-secure", "sandrun-cluster", "asynq", "river"}

// config is one run's settings.
type config struct {
	Jobs            int
	Concurrency     int
	Enqueuers       int
	LatencyJobs     int
	LatencyInterval time.Duration
	Systems         []string
	PhaseTimeout    time.Duration

	SandrunBin string // prebuilt CLI (empty: build it from the parent module)
	SyncAlways bool   // sandrun servers fsync every write
	RedisBin   string
	RedisAOF   bool
	PGBin      string // directory of initdb and postgres

	AsynqCheckInterval     time.Duration // 0: asynq's default
	RiverFetchCooldown     time.Duration // 0: River's default
	RiverFetchPollInterval time.Duration // 0: River's default

	// Log receives progress and the services' warnings (stderr).
	Log io.Writer
}

// validate checks the settings once, naming the flag at fault.
func (c config) validate() error {
	switch {
	case c.Jobs < 1:
		return errors.New("-jobs: must be at least 1")
	case c.Concurrency < 1:
		return errors.New("-concurrency: must be at least 1")
	case c.Enqueuers < 1:
		return errors.New("-enqueuers: must be at least 1")
	case c.LatencyJobs < 1:
		return errors.New("-latency-jobs: must be at least 1")
	case c.LatencyInterval <= 0:
		return errors.New("-latency-interval: must be positive")
	case c.PhaseTimeout <= 0:
		return errors.New("-phase-timeout: must be positive")
	case c.AsynqCheckInterval < 0, c.RiverFetchCooldown < 0, c.RiverFetchPollInterval < 0:
		return errors.New("-asynq-check-interval, -river-fetch-cooldown, -river-poll-interval: must not be negative")
	case len(c.Systems) == 0:
		return errors.New("-systems: name at least one system")
	}
	for _, s := range c.Systems {
		if !slices.Contains(systems, s) {
			return fmt.Errorf("-systems: unknown system %q (known: %s)", s, strings.Join(systems, ","))
		}
	}
	return nil
}

// runs reports whether any of names is among the systems to run.
func (c config) runs(names ...string) bool {
	return slices.ContainsFunc(c.Systems, func(s string) bool { return slices.Contains(names, s) })
}

func main() {
	cfg := config{Log: os.Stderr}
	var sys string
	flag.IntVar(&cfg.Jobs, "jobs", 5000, "jobs in each system's throughput phase (N)")
	flag.IntVar(&cfg.Concurrency, "concurrency", 8, "jobs each system's worker runs at once (C)")
	flag.IntVar(&cfg.Enqueuers, "enqueuers", 16, "goroutines enqueueing at once in the throughput phase")
	flag.IntVar(&cfg.LatencyJobs, "latency-jobs", 300, "jobs in the paced latency phase")
	flag.DurationVar(&cfg.LatencyInterval, "latency-interval", 20*time.Millisecond, "pace of the latency phase: one job every this long")
	flag.StringVar(&sys, "systems", strings.Join(systems, ","), "comma-separated systems to run")
	flag.DurationVar(&cfg.PhaseTimeout, "phase-timeout", 10*time.Minute, "limit on each phase of each system")
	flag.StringVar(&cfg.SandrunBin, "sandrun-bin", "", "sandrun CLI to run (default: build ../cmd/sandrun)")
	flag.BoolVar(&cfg.SyncAlways, "sync-always", false, "run sandrun's NATS servers with --sync-always (fsync every write)")
	flag.StringVar(&cfg.RedisBin, "redis-server", "", "redis-server binary (default: from PATH)")
	flag.BoolVar(&cfg.RedisAOF, "redis-aof", false, "run redis with appendonly yes, appendfsync everysec (default: no persistence)")
	flag.StringVar(&cfg.PGBin, "pg-bin", "", "directory of PostgreSQL's initdb and postgres (default: newest /usr/lib/postgresql/*/bin)")
	flag.DurationVar(&cfg.AsynqCheckInterval, "asynq-check-interval", 0, "asynq TaskCheckInterval (0: asynq's default, 1s)")
	flag.DurationVar(&cfg.RiverFetchCooldown, "river-fetch-cooldown", 0, "River FetchCooldown (0: River's default, 100ms)")
	flag.DurationVar(&cfg.RiverFetchPollInterval, "river-poll-interval", 0, "River FetchPollInterval (0: River's default, 1s)")
	flag.Parse()
	cfg.Systems = strings.Split(sys, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	rep, err := run(ctx, cfg)
	if rep != nil {
		rep.write(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run runs the selected systems one after another. A system that fails
// gets a row with its error and the others still run; the error returned
// then joins every failure.
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "bench-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	rep := newReport(cfg)
	var errs []error
	fail := func(system string, err error) {
		rep.add(result{System: system, Err: err})
		errs = append(errs, fmt.Errorf("%s: %w", system, err))
	}
	for _, s := range systems {
		if !slices.Contains(cfg.Systems, s) {
			continue
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		fmt.Fprintf(cfg.Log, "== %s\n", s)
		start, err := starter(ctx, &cfg, rep, tmp, s)
		if err != nil {
			fail(s, err)
			continue
		}
		res, err := measure(ctx, cfg, s, start)
		if err != nil {
			fail(s, err)
			continue
		}
		rep.add(res)
	}
	return rep, errors.Join(errs...)
}

// starter resolves what system s needs (binaries, versions) and returns
// how to start it; nil for raw, which has no target. The sandrun CLI it
// builds is kept in cfg for the next sandrun system.
func starter(ctx context.Context, cfg *config, rep *report, tmp, s string) (func(context.Context) (target, error), error) {
	switch s {
	case "raw":
		return nil, nil
	case "sandrun", "sandrun-secure", "sandrun-cluster":
		if cfg.SandrunBin == "" {
			fmt.Fprintln(cfg.Log, "building the sandrun CLI")
			bin, err := buildSandrun(ctx, tmp)
			if err != nil {
				return nil, err
			}
			cfg.SandrunBin = bin
		}
		rep.setVersion("nats-server", natsServerVersion(cfg.SandrunBin))
		o := sandrunOpts{bin: cfg.SandrunBin, nodes: 1, slots: cfg.Concurrency, syncAlways: cfg.SyncAlways}
		if s == "sandrun-cluster" {
			o.nodes = 3
		}
		o.secure = s == "sandrun-secure"
		return func(ctx context.Context) (target, error) { return startSandrun(ctx, o) }, nil
	case "asynq":
		bin, err := findRedis(cfg.RedisBin)
		if err != nil {
			return nil, err
		}
		rep.setVersion("redis-server", redisVersion(bin))
		o := asynqOpts{redisBin: bin, concurrency: cfg.Concurrency, aof: cfg.RedisAOF, checkInterval: cfg.AsynqCheckInterval}
		return func(ctx context.Context) (target, error) { return startAsynq(ctx, o) }, nil
	case "river":
		dir := cfg.PGBin
		if dir == "" {
			var err error
			if dir, err = findPostgresBin(); err != nil {
				return nil, err
			}
		}
		rep.setVersion("postgres", postgresVersion(dir))
		o := riverOpts{pgBin: dir, concurrency: cfg.Concurrency, enqueuers: cfg.Enqueuers,
			fetchCooldown: cfg.RiverFetchCooldown, fetchPollInterval: cfg.RiverFetchPollInterval, log: cfg.Log}
		return func(ctx context.Context) (target, error) { return startRiver(ctx, o) }, nil
	}
	return nil, fmt.Errorf("unknown system %q", s)
}

// findRedis returns bin, or redis-server from PATH.
func findRedis(bin string) (string, error) {
	if bin == "" {
		bin = "redis-server"
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("no redis-server (Debian package redis-server, or -redis-server PATH): %w", err)
	}
	return p, nil
}

// measure runs system s's phases; start is nil for raw.
func measure(ctx context.Context, cfg config, s string, start func(context.Context) (target, error)) (res result, err error) {
	res.System = s
	if start == nil {
		fmt.Fprintf(cfg.Log, "   %d spawns, %d at once\n", cfg.Jobs, cfg.Concurrency)
		res.Throughput, err = rawSpawnRate(ctx, cfg.Jobs, cfg.Concurrency)
		return res, err
	}
	t, err := start(ctx)
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := t.close(); cerr != nil && err == nil {
			err = fmt.Errorf("stop: %w", cerr)
		}
	}()
	if err := warmUp(ctx, t, cfg.PhaseTimeout); err != nil {
		return res, err
	}
	fmt.Fprintf(cfg.Log, "   throughput: %d jobs, %d enqueuers, concurrency %d\n", cfg.Jobs, cfg.Enqueuers, cfg.Concurrency)
	if res.Throughput, err = throughput(ctx, t, cfg.Jobs, cfg.Enqueuers, cfg.PhaseTimeout); err != nil {
		return res, err
	}
	fmt.Fprintf(cfg.Log, "   latency: %d jobs, one every %s\n", cfg.LatencyJobs, cfg.LatencyInterval)
	if res.Latency, err = paced(ctx, t, cfg.LatencyJobs, cfg.LatencyInterval, cfg.PhaseTimeout); err != nil {
		return res, err
	}
	res.HasLatency = true
	return res, nil
}
