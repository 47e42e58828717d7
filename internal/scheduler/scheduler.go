package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
	"github.com/sandrun/sandrun/internal/metrics"
)

// Config of a scheduler.
type Config struct {
	// Schedules seed the schedules bucket at start (the file); schedules
	// added with the CLI live in the bucket alone.
	Schedules []Schedule
	// ID names this candidate in elections and logs.
	ID string
	// ElectionTTL is the leadership lease (default 15s): a dead leader
	// is replaced within about this long.
	ElectionTTL time.Duration
	// Now is the clock (default time.Now); tests inject one.
	Now func() time.Time
	// OnFire, if set, is called after each slot's job is published, with
	// the slot and the time its publish was acknowledged (instrumentation,
	// benchmarks). It runs on the dispatcher's goroutine: it must return
	// at once.
	OnFire func(slot, published time.Time)
	// Owner is the ORIGIN.NAME cron jobs are published under: the
	// scheduler identity's (default DefaultOwner). The server lets the
	// scheduler publish under its own alone.
	Owner string
}

// DefaultOwner is the owner of cron jobs of the built-in scheduler
// identity.
const DefaultOwner = "cron.scheduler"

// Scheduler fires schedules while it leads.
type Scheduler struct {
	cfg    Config
	cat    *Catalog
	store  *jobs.Store
	client *client.Client
	log    *slog.Logger
	m      *metrics.Metrics
	// inFlight bounds the job publishes of a burst awaiting their acks
	// (default dispatchInFlight); tests lower it.
	inFlight int
}

// maxCatchup bounds the missed slots enumerated at takeover per schedule.
const maxCatchup = 100_000

// New validates cfg.
func New(cfg Config, store *jobs.Store, m *metrics.Metrics, log *slog.Logger) (*Scheduler, error) {
	if err := Validate(cfg.Schedules); err != nil {
		return nil, err
	}
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner
	}
	if cfg.ElectionTTL == 0 {
		cfg.ElectionTTL = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cat := NewCatalog(store)
	cat.now = cfg.Now
	return &Scheduler{cfg: cfg, cat: cat, store: store, client: client.New(store).As(cfg.Owner), log: log.With("role", "scheduler"), m: m}, nil
}

// Run seeds the bucket, then campaigns for leadership and fires schedules
// while leading, until ctx is done. A leader that loses its lease stops
// firing at once.
func (s *Scheduler) Run(ctx context.Context) error {
	// Series at zero before the first event: absent is not zero in PromQL.
	for _, k := range []string{"slot", "catchup", "trigger"} {
		s.m.ScheduleFires.WithLabelValues(k)
	}
	for _, r := range []string{"overlap", "suspended"} {
		s.m.ScheduleSkipped.WithLabelValues(r)
	}
	s.m.Leader.WithLabelValues("scheduler")
	for _, sc := range s.cfg.Schedules {
		if err := s.cat.Put(ctx, sc, true); err != nil {
			return fmt.Errorf("seed schedule %s: %w", sc.Name, err)
		}
	}
	el := &lease.Elector{JS: s.store.JS, KV: s.store.Elections, Role: "scheduler", ID: s.cfg.ID, TTL: s.cfg.ElectionTTL, Logger: s.log,
		OnChange: func(l bool) {
			if l {
				s.m.Leader.WithLabelValues("scheduler").Set(1)
				s.m.LeaderChanges.WithLabelValues("scheduler").Inc()
			} else {
				s.m.Leader.WithLabelValues("scheduler").Set(0)
			}
		}}
	el.Run(ctx, s.lead)
	return nil
}

// lead fires the schedules while this scheduler leads: one dispatcher
// (dispatch.go) fires every schedule's slots, a burst at a time, and one
// state writer (statewriter.go) stores what it handled. The definitions
// and their changes come from one watch (watchDefs), each built from the
// entry's own value: a change is never missed between listing and
// watching, nor replaced by a stale re-read of its key. lead returns once
// ctx is done and the dispatcher's publishes are settled and its records
// stored (or the time for that has passed).
func (s *Scheduler) lead(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	d := newDispatcher(s)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { d.w.run(ctx, stop) })
	wg.Go(func() {
		d.run(ctx)
		close(stop) // the last records are in: the writer's last round
	})
	defer func() {
		cancel()
		wg.Wait()
		s.m.Schedules.Set(0) // none loaded while not leading
	}()
	listed := func() {
		d.post(ctx, func() { s.log.Info("leading", "schedules", len(d.entries)) })
	}
	apply := func(e jetstream.KeyValueEntry) { d.post(ctx, func() { d.apply(ctx, e) }) }
	if err := watchDefs(ctx, s.store.JS.Conn(), s.cat.kv, listed, apply); err != nil {
		s.log.Error("load schedules", "err", err)
	}
}
