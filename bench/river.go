package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// shArgs is the River job: its payload is the enqueue time.
type shArgs struct {
	stamp
}

// Kind names the job kind.
func (shArgs) Kind() string { return "sh_true" }

// shWorker execs the command for each job.
type shWorker struct {
	river.WorkerDefaults[shArgs]
	cur *atomic.Pointer[tracker]
}

// Work runs one job.
func (w *shWorker) Work(ctx context.Context, job *river.Job[shArgs]) error {
	return runJob(ctx, w.cur.Load(), strconv.FormatInt(job.ID, 10), job.Args.time())
}

// riverTarget is River on a private PostgreSQL: one river.Client in this
// process that inserts (outside any transaction of ours) and works the
// default queue with MaxWorkers C.
type riverTarget struct {
	pg     *postgres
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	cur    atomic.Pointer[tracker]
}

// riverOpts configure a River target.
type riverOpts struct {
	pgBin       string
	concurrency int
	enqueuers   int
	// fetchCooldown and fetchPollInterval are River's (0: its defaults,
	// 100ms and 1s; inserts also wake the producer through LISTEN/NOTIFY).
	fetchCooldown, fetchPollInterval time.Duration
	log                              io.Writer
}

// riverPoolConns sizes the pgx pool so that neither the enqueuers nor the
// workers wait for a connection: one each, plus River's own (producer,
// completer, notifier's LISTEN, leader election, maintenance).
func riverPoolConns(o riverOpts) int32 { return int32(o.enqueuers + o.concurrency + 8) }

func startRiver(ctx context.Context, o riverOpts) (_ *riverTarget, err error) {
	t := &riverTarget{}
	defer func() {
		if err != nil {
			_ = t.close()
		}
	}()
	if t.pg, err = startPostgres(ctx, o.pgBin); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(t.pg.url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = riverPoolConns(o)
	if t.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("pgx pool: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(o.log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	driver := riverpgxv5.New(t.pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &shWorker{cur: &t.cur}); err != nil {
		return nil, err
	}
	t.client, err = river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.concurrency}},
		Workers:           workers,
		FetchCooldown:     o.fetchCooldown,
		FetchPollInterval: o.fetchPollInterval,
		Logger:            logger,
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	if err := t.client.Start(ctx); err != nil {
		t.client = nil
		return nil, fmt.Errorf("river start: %w", err)
	}
	return t, nil
}

func (t *riverTarget) track(tr *tracker) { t.cur.Store(tr) }

func (t *riverTarget) enqueue(ctx context.Context) error {
	at := time.Now()
	_, err := t.client.Insert(ctx, shArgs{newStamp(at)}, nil)
	return err
}

func (t *riverTarget) close() error {
	var errs []error
	if t.client != nil {
		// The run's context may be gone (Ctrl-C): stop on a fresh one.
		ctx, cancel := context.WithTimeout(context.Background(), stopWithin)
		errs = append(errs, t.client.Stop(ctx))
		cancel()
	}
	if t.pool != nil {
		t.pool.Close()
	}
	if t.pg != nil {
		errs = append(errs, t.pg.stop())
	}
	return errors.Join(errs...)
}

var _ target = (*riverTarget)(nil)
