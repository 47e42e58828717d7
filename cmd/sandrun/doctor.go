package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/backends/docker"
	"github.com/sandrun/sandrun/internal/backends/singularity"
	"github.com/sandrun/sandrun/internal/backends/ssh"
	"github.com/sandrun/sandrun/internal/jobs"
)

// doctor checks a worker's configuration: NATS and the layout, every
// backend profile, and for docker the engine and the orphans the reaper
// would remove. It exits non-zero when something is wrong.
func (c cli) doctor(ctx context.Context, args []string) error {
	var n app.NATSConfig
	fs := c.flags("doctor", &n)
	configFile := fs.String("config", "", "worker config file to check (default: the built-in local profile)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := app.LoadFile(*configFile)
	if err != nil {
		return err
	}
	if n.URL == "" {
		n = cfg.NATS
	}
	problems := 0
	report := func(what string, err error, ok string) {
		if err != nil {
			problems++
			fmt.Fprintf(c.stdout, "FAIL  %-22s %v\n", what, err)
			return
		}
		fmt.Fprintf(c.stdout, "ok    %-22s %s\n", what, ok)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, closeFn, err := connect(cctx, n)
	var store *jobs.Store
	if err == nil {
		defer closeFn()
		store = cl.Store()
		report("nats", nil, "layout present, deployment "+store.Deployment)
	} else {
		report("nats", err, "")
	}
	reg, err := app.Backends(cfg.Backends, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		report("backends", err, "")
		return doctorExit(problems)
	}
	defer func() { _ = reg.Close() }()
	if _, err := cfg.Policy.Engine(); err != nil {
		report("policy", err, "")
	} else {
		report("policy", nil, "ceiling and allowlist valid")
	}
	for _, p := range reg.Profiles() {
		be, _ := reg.Get(p)
		if err := be.Validate(cctx); err != nil {
			report("backend "+p, err, "")
			continue
		}
		d, ok := be.(describer)
		if !ok {
			report("backend "+p, nil, be.Kind())
			continue
		}
		desc, err := d.Describe(cctx)
		report("backend "+p, err, desc)
		o, ok := be.(orphanLister)
		if !ok || store == nil {
			continue
		}
		orphans, err := o.Orphans(cctx, store.Deployment, func(id string, attempt int, worker string) bool {
			return attemptLive(cctx, store, id, attempt, worker)
		})
		if err != nil {
			report("orphans "+p, err, "")
			continue
		}
		report("orphans "+p, nil, fmt.Sprintf("%d workload(s) the reaper would remove", len(orphans)))
		for _, o := range orphans {
			fmt.Fprintf(c.stdout, "      %s\n", o)
		}
	}
	return doctorExit(problems)
}

// describer is what doctor asks of backends that can say more than
// Validate; orphanLister of those whose workloads can outlive a worker.
type (
	describer interface {
		Describe(ctx context.Context) (string, error)
	}
	orphanLister interface {
		Orphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) ([]string, error)
	}
)

var (
	_ orphanLister = (*docker.Docker)(nil)
	_ orphanLister = (*ssh.Backend)(nil)
	_ describer    = (*singularity.Backend)(nil)
)

func doctorExit(problems int) error {
	if problems > 0 {
		return fmt.Errorf("%d problem(s) found", problems)
	}
	return nil
}

// attemptLive is the reaper's test seen from outside any worker: the
// attempt is the job's current one, running, under a lease.
func attemptLive(ctx context.Context, st *jobs.Store, id string, attempt int, worker string) bool {
	run, _, err := st.GetRun(ctx, id)
	if err != nil {
		return !errors.Is(err, jobs.ErrNotFound)
	}
	if run.State != jobs.StateRunning || run.Attempt != attempt || run.Worker != worker {
		return false
	}
	_, err = st.State.Get(ctx, jobs.LeaseKey(id))
	return !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted)
}
