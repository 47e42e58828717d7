package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/scheduler"
	"github.com/sandrun/sandrun/internal/secrets"
	"github.com/sandrun/sandrun/internal/worker"
)

// Roles selects what Run starts.
type Roles struct {
	Worker    bool
	Scheduler bool
}

// Run connects, ensures the JetStream layout and runs the selected roles
// until ctx is done. Every configuration error is reported before anything
// starts. ready, if set, is called once everything is running.
func Run(ctx context.Context, cfg Config, roles Roles, log *slog.Logger, ready func(*jobs.Store, *metrics.Metrics)) (err error) {
	defer func() {
		// Interrupted while starting (Ctrl-C, SIGTERM before the layout
		// was ready) is a stop like any other, not a failure.
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			log.Info("stopped while starting", "err", err)
			err = nil
		}
	}()
	// Validate everything first: nothing should fail at 3 a.m.
	m := metrics.New()
	m.Registry.MustRegister(cfg.Collectors...)
	var (
		wcfg  = cfg.Worker.WithDefaults()
		deps  worker.Deps
		sched []scheduler.Schedule
	)
	if roles.Worker || roles.Scheduler {
		if err := wcfg.Validate(); err != nil {
			return ConfigError{err}
		}
	}
	if roles.Worker {
		if deps.Forward, err = cfg.Forwards(); err != nil {
			return err
		}
		if deps.Backends, err = Backends(cfg.Backends, m, log); err != nil {
			return err
		}
		defer func() { _ = deps.Backends.Close() }()
		if deps.Policy, err = cfg.Policy.Engine(); err != nil {
			return err
		}
		if wcfg.SecretsKeyFile != "" {
			if deps.Secrets, err = secrets.LoadKey(wcfg.SecretsKeyFile); err != nil {
				return fmt.Errorf("worker.secrets_key_file: %w", err)
			}
		}
		if err := deps.Backends.ValidateAll(ctx); err != nil {
			return err
		}
	}
	if roles.Scheduler {
		if sched, err = cfg.LoadSchedules(); err != nil {
			return err
		}
	}
	if addr, err := m.Serve(ctx, cfg.MetricsAddr, cfg.Profiles, log); err != nil {
		return fmt.Errorf("metrics_addr: %w", err)
	} else if addr != nil {
		// The bound address, so that ":0" can be found (tests, ad hoc runs).
		log.Info("metrics served", "metrics_addr", addr.String())
	}
	conn, err := cfg.NATS.Conn("sandrun-"+wcfg.Name, true)
	if err != nil {
		return err
	}
	layout := cfg.Layout.jobs()
	schedOwner := ""
	if conn.CredsFile != "" {
		id, err := identityOf(conn.CredsFile)
		if err != nil {
			return err
		}
		// Each identity keeps to what the server lets it change.
		layout.KeepSchedules = id.Role == auth.RoleWorker
		if roles.Scheduler && id.Role == auth.RoleScheduler {
			schedOwner = id.Owner()
		}
		if roles.Scheduler && id.Role != auth.RoleScheduler && id.Role != auth.RoleAdmin {
			return fmt.Errorf("nats.creds: the scheduler needs a scheduler or admin identity, %s is a %s", id.Name, id.Role)
		}
		if roles.Worker && id.Role != auth.RoleWorker && id.Role != auth.RoleAdmin {
			return fmt.Errorf("nats.creds: a worker needs a worker or admin identity, %s is a %s", id.Name, id.Role)
		}
	}
	nc, js, err := natsutil.Connect(ctx, conn, log)
	if err != nil {
		return err
	}
	defer nc.Close()
	store, err := jobs.EnsureLayout(ctx, js, nc.ConnectedServerVersion(), layout)
	if err != nil {
		return err
	}
	for _, op := range jobs.WriteOps {
		m.WriteRetries.WithLabelValues(op)
	}
	store.OnRetry = func(what string, attempt int, err error) {
		op, _, _ := strings.Cut(what, " ")
		m.WriteRetries.WithLabelValues(op).Inc()
		log.Warn("write failed, retrying", "write", what, "attempt", attempt, "err", err)
	}
	return runRoles(ctx, nc, store, m, wcfg, deps, sched, schedOwner, roles, log, ready)
}

// identityOf reads the identity of a .creds file.
func identityOf(credsFile string) (auth.Identity, error) {
	data, err := os.ReadFile(credsFile)
	if err != nil {
		return auth.Identity{}, fmt.Errorf("nats.creds: %w", err)
	}
	id, err := auth.IdentityOf(data)
	if err != nil {
		return auth.Identity{}, fmt.Errorf("nats.creds %s: %w", credsFile, err)
	}
	return id, nil
}

func runRoles(ctx context.Context, nc *nats.Conn, store *jobs.Store, m *metrics.Metrics, wcfg worker.Config,
	deps worker.Deps, sched []scheduler.Schedule, schedOwner string, roles Roles, log *slog.Logger, ready func(*jobs.Store, *metrics.Metrics)) error {
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	if roles.Worker {
		deps.Store, deps.Metrics, deps.Logger = store, m, log
		w, err := worker.New(wcfg, deps)
		if err != nil {
			return err
		}
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				errs <- err
			}
		})
	}
	if roles.Scheduler {
		s, err := scheduler.New(scheduler.Config{Schedules: sched, ID: wcfg.Name, ElectionTTL: wcfg.ElectionTTL, Owner: schedOwner}, store, m, log)
		if err != nil {
			return err
		}
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				errs <- err
			}
		})
	}
	if ready != nil {
		ready(store, m)
	}
	wg.Wait()
	// Let asynchronous event publishes land before the connection closes.
	_ = nc.Flush()
	close(errs)
	return <-errs
}

// ConfigError is Run's error for a configuration that does not validate:
// nothing was started (a daemon exits 2, as for a bad flag).
type ConfigError struct{ Err error }

func (e ConfigError) Error() string { return e.Err.Error() }
func (e ConfigError) Unwrap() error { return e.Err }
