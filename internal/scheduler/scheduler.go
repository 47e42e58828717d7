package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	// the slot and the time of publishing (instrumentation, benchmarks).
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

// runner fires one schedule.
type runner struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// lead runs one goroutine per schedule and follows edits of the bucket.
// The definitions and their changes come from one watch (watchDefs), each
// built from the entry's own value: a change is never missed between
// listing and watching, nor replaced by a stale re-read of its key.
func (s *Scheduler) lead(ctx context.Context) {
	// runners is the watch callback's alone: watchDefs calls it on this
	// goroutine.
	runners := map[string]*runner{}
	stop := func(name string) {
		if r := runners[name]; r != nil {
			r.cancel()
			<-r.done
			delete(runners, name)
		}
	}
	defer func() {
		for name := range runners {
			stop(name)
		}
	}()
	apply := func(e jetstream.KeyValueEntry) {
		name := strings.TrimPrefix(e.Key(), defKey(""))
		defer func() { s.m.Schedules.Set(float64(len(runners))) }()
		stop(name)
		if e.Operation() != jetstream.KeyValuePut {
			return // deleted: stays stopped
		}
		sc, err := decodeSchedule(name, e.Value())
		var c compiled
		if err == nil {
			c, err = compile(sc)
		}
		if err != nil {
			s.log.Error("schedule invalid, not firing", "schedule", name, "revision", e.Revision(), "err", err)
			return
		}
		s.log.Debug("schedule loaded", "schedule", name, "revision", e.Revision(), "suspended", sc.Suspended)
		rctx, cancel := context.WithCancel(ctx)
		r := &runner{cancel: cancel, done: make(chan struct{})}
		runners[name] = r
		go func() { defer close(r.done); s.fire(rctx, c) }()
	}
	listed := func() {
		s.m.Schedules.Set(float64(len(runners)))
		s.log.Info("leading", "schedules", len(runners))
	}
	if err := watchDefs(ctx, s.store.JS.Conn(), s.cat.kv, listed, apply); err != nil {
		s.log.Error("load schedules", "err", err)
	}
}

// fire is one schedule's loop: catch up the slots missed since the last
// one handled, then fire each slot as it comes, until ctx is done.
func (s *Scheduler) fire(ctx context.Context, c compiled) {
	f := &firer{s: s, c: c, log: s.log.With("schedule", c.Name)}
	if err := f.load(ctx); err != nil {
		f.log.Error("load state", "err", err)
		return
	}
	f.catchUp(ctx)
	for {
		next := c.slots.Next(f.st.LastSlot)
		if next.IsZero() {
			f.log.Warn("schedule has no future slots")
			return
		}
		t := time.NewTimer(max(next.Sub(s.cfg.Now()), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		f.handle(ctx, next, "slot")
	}
}

// firer holds one schedule's state while its scheduler leads.
type firer struct {
	s   *Scheduler
	c   compiled
	log *slog.Logger
	st  State
	rev uint64
}

func (f *firer) load(ctx context.Context) error {
	st, rev, err := f.s.cat.state(ctx, f.c.Name)
	if err != nil {
		return err
	}
	f.st, f.rev = st, rev
	if f.st.LastSlot.IsZero() {
		// A new schedule starts from now: nothing before it was missed.
		return f.save(ctx, func(st *State) { st.LastSlot = f.s.cfg.Now() })
	}
	return nil
}

// save applies change to the state and stores it by CAS; on a conflict
// (a CLI trigger) it re-reads and applies the change again.
func (f *firer) save(ctx context.Context, change func(*State)) error {
	for {
		change(&f.st)
		data, err := json.Marshal(f.st)
		if err != nil {
			return err
		}
		var rev uint64
		if f.rev == 0 {
			rev, err = f.s.cat.kv.Create(ctx, stateKey(f.c.Name), data)
		} else {
			rev, err = f.s.cat.kv.Update(ctx, stateKey(f.c.Name), data, f.rev)
		}
		if err == nil {
			f.rev = rev
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		if f.st, f.rev, err = f.s.cat.state(ctx, f.c.Name); err != nil {
			return err
		}
	}
}

// catchUp handles the slots between the last one handled and now: those
// inside the catch-up window fire (all, or the latest), older ones are
// counted as missed.
func (f *firer) catchUp(ctx context.Context) {
	now := f.s.cfg.Now()
	var inWindow []time.Time
	var missed int64
	last := f.st.LastSlot
	for range maxCatchup {
		slot := f.c.slots.Next(last)
		if slot.IsZero() || slot.After(now) {
			break
		}
		last = slot
		if now.Sub(slot) <= f.c.Window() {
			inWindow = append(inWindow, slot)
		} else {
			missed++
		}
	}
	if f.c.Catchup == CatchupLatest && len(inWindow) > 1 {
		missed += int64(len(inWindow) - 1)
		inWindow = inWindow[len(inWindow)-1:]
	}
	if missed > 0 {
		f.s.m.ScheduleMissed.Add(float64(missed))
		f.log.Warn("slots missed while no scheduler led", "missed", missed, "catchup_window", f.c.Window())
		skippedTo := last
		if len(inWindow) > 0 {
			skippedTo = inWindow[0].Add(-time.Nanosecond)
		}
		if err := f.save(ctx, func(st *State) {
			st.Missed += missed
			st.LastSlot = skippedTo
			st.record(Fire{Slot: skippedTo, At: now, Kind: "missed", Reason: fmt.Sprintf("%d slots older than the %s catch-up window", missed, f.c.Window())})
		}); err != nil {
			f.log.Error("record missed slots", "err", err)
		}
	}
	for _, slot := range inWindow {
		if ctx.Err() != nil {
			return
		}
		f.handle(ctx, slot, "catchup")
	}
}

// handle fires (or skips) one slot and records it. A slot whose job
// cannot be submitted is retried until it leaves its catch-up window.
func (f *firer) handle(ctx context.Context, slot time.Time, kind string) {
	s := f.s
	if f.c.Suspended {
		s.m.ScheduleSkipped.WithLabelValues("suspended").Inc()
		f.record(ctx, Fire{Slot: slot, At: s.cfg.Now(), Kind: "skipped", Reason: "suspended"}, "")
		return
	}
	if f.c.Overlap != OverlapAllow && f.st.LastJob != "" {
		st, err := s.client.Status(ctx, f.st.LastJob)
		// No record yet: the previous run is queued, not yet claimed.
		if queued := errors.Is(err, jobs.ErrNotFound); queued || (err == nil && !st.State().Terminal()) {
			state := st.State()
			if queued {
				state = jobs.StateQueued
			}
			if f.c.Overlap == OverlapForbid {
				s.m.ScheduleSkipped.WithLabelValues("overlap").Inc()
				f.record(ctx, Fire{Slot: slot, At: s.cfg.Now(), Kind: "skipped",
					Reason: fmt.Sprintf("previous run %s is %s (overlap: forbid)", f.st.LastJob, state)}, "")
				return
			}
			if _, err := s.client.Cancel(ctx, f.st.LastJob); err != nil {
				f.log.Warn("replace: cancel of the previous run failed", "job", f.st.LastJob, "err", err)
			}
		}
	}
	spec := jobTemplate(f.c.Schedule, slot)
	spec.ID = SlotID(f.c.Name, slot)
	wait := 100 * time.Millisecond
	for {
		// A submit once begun is finished even if leadership ends: the
		// slot's job ID makes a second attempt by the next leader a no-op,
		// while a half-done submit would leave a record without a message.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err := f.submit(sctx, spec)
		cancel()
		if err == nil {
			break
		}
		s.m.ScheduleErrors.Inc()
		if ctx.Err() != nil || s.cfg.Now().Sub(slot) > max(f.c.Window(), time.Minute) {
			f.log.Error("fire failed; giving the slot up", "slot", slot, "err", err)
			return
		}
		f.log.Warn("fire failed, retrying", "slot", slot, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
	now := s.cfg.Now()
	if kind == "slot" {
		s.m.FireLag.Observe(now.Sub(slot).Seconds())
		if s.cfg.OnFire != nil {
			s.cfg.OnFire(slot, now)
		}
	}
	s.m.ScheduleFires.WithLabelValues(kind).Inc()
	f.record(ctx, Fire{Slot: slot, At: now, JobID: spec.ID, Kind: kind}, spec.ID)
}

// submit records and dispatches the slot's job in one round trip. If the
// job exists already (a previous leader fired the slot), it is dispatched
// again under the same message ID: a leader that died between recording
// and publishing leaves no hole, and JetStream drops the duplicate
// otherwise.
func (f *firer) submit(ctx context.Context, spec jobs.Spec) error {
	now := f.s.cfg.Now().UTC()
	spec.SubmittedAt = now
	spec, err := f.s.client.Seal(ctx, spec)
	if err != nil {
		return err
	}
	err = f.s.store.SubmitPipelined(ctx, spec, f.s.cfg.Owner, spec.ID)
	if errors.Is(err, jobs.ErrExists) {
		// Fired before (by a leader that died before recording the slot):
		// the dispatch above was deduplicated or is a harmless copy.
		return nil
	}
	return err
}

func (f *firer) record(ctx context.Context, fire Fire, jobID string) {
	if err := f.save(ctx, func(st *State) {
		if fire.Slot.After(st.LastSlot) {
			st.LastSlot = fire.Slot
		}
		if jobID != "" {
			st.LastJob = jobID
		}
		st.record(fire)
	}); err != nil && ctx.Err() == nil {
		f.log.Error("record slot", "slot", fire.Slot, "err", err)
	}
}
