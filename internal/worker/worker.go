package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
	"github.com/sandrun/sandrun/internal/metrics"
)

// Causes given to a running job's context; the executor maps them to the
// job's outcome.
var (
	errTimeout   = errors.New("job timed out")
	errCanceled  = errors.New("job canceled")
	errLeaseLost = errors.New("job lease lost")
	errDrained   = errors.New("worker shutting down")
)

// Worker serves queues. Create it with New and call Run once.
type Worker struct {
	cfg   Config
	deps  Deps
	store *jobs.Store
	log   *slog.Logger
	m     *metrics.Metrics
	now   func() time.Time

	slots chan struct{}

	limits batchLimits // throttled batches' max_parallel
	// batchOwners remembers the owner of each batch whose record this
	// worker wrote or read (ensureBatch).
	batchOwners struct {
		mu sync.Mutex
		m  map[string]string
	}

	mu      sync.Mutex
	running map[string]runningJob // job id -> its owner and cancel
	// cancels are the cancel requests seen (jobs.CancelKey(owner, id)),
	// for jobs that were not running here when they arrived: a claim
	// honours them. Removed when the job ends.
	cancels map[string]bool
	// cancelsLive is true while the watch of cancel requests is caught up
	// with the server: then cancels holds every request but those made in
	// the last moment, which the check before a start catches.
	cancelsLive atomic.Bool
	// pulse is the wall-clock time (UnixNano) of the freeze detector's
	// last tick, and frozeAt of the last gap it found: a process that was
	// stopped (SIGSTOP, a frozen VM) resumes with watches that have not
	// yet delivered what arrived meanwhile, so for a while its claims read
	// cancel requests from the server (TestChaos seed 12).
	pulse, frozeAt atomic.Int64
	jobWG          sync.WaitGroup
}

// New validates cfg (after filling defaults) and deps.
func New(cfg Config, deps Deps) (*Worker, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	return &Worker{
		cfg:     cfg,
		deps:    deps,
		store:   deps.Store,
		log:     deps.Logger.With("worker", cfg.Name),
		m:       deps.Metrics,
		now:     deps.Now,
		slots:   make(chan struct{}, cfg.Slots),
		running: make(map[string]runningJob),
		cancels: make(map[string]bool),
	}, nil
}

// initSeries creates the per-queue and per-backend series at zero, so
// that a dashboard or alert sees 0 rather than nothing before the first
// event (absent is not zero in PromQL).
func (w *Worker) initSeries() {
	for _, p := range w.deps.Backends.Profiles() {
		w.m.ScriptTimeouts.WithLabelValues(p)
		w.m.OOMKills.WithLabelValues(p)
		w.m.HostAccessRefusals.WithLabelValues(p)
		w.m.OrphansReaped.WithLabelValues(p)
		for _, kind := range []string{"permanent", "unavailable", "other"} {
			w.m.BackendErrors.WithLabelValues(p, kind)
		}
	}
	for _, q := range w.cfg.Queues {
		w.m.JobsRunning.WithLabelValues(q)
		w.m.Retries.WithLabelValues(q)
		w.m.BatchThrottled.WithLabelValues(q)
	}
	for _, a := range []string{"requeued", "dead", "republished", "canceled"} {
		w.m.ReaperRecovered.WithLabelValues(a)
	}
}

// Name returns the worker's name.
func (w *Worker) Name() string { return w.cfg.Name }

// Run serves until ctx is done, then drains: it stops claiming, lets
// running jobs finish for up to DrainTimeout, stops the rest and hands
// them back to the queue, and returns once every goroutine it started has
// exited. It returns an error only if the worker could not start.
func (w *Worker) Run(ctx context.Context) error {
	// Per queue, the lane of jobs that name no lane first (its filter
	// narrowed from the whole queue, in layouts from before lanes), then
	// one lane per profile this worker has: a job waits for a worker with
	// its profile instead of failing on the first of its queue.
	consumers := make(map[lane]jetstream.Consumer)
	for _, q := range w.cfg.Queues {
		for _, p := range append([]string{""}, w.deps.Backends.Profiles()...) {
			c, err := w.store.EnsureLane(ctx, q, p, jobs.QueueConfig{ClaimWindow: w.cfg.ClaimWindow})
			if err != nil {
				return err
			}
			consumers[lane{q, p}] = c
		}
	}
	if err := w.publishSealKey(ctx); err != nil {
		return err
	}
	w.m.Slots.Set(float64(w.cfg.Slots))
	w.initSeries()
	w.m.Registry.MustRegister(metrics.NewStateCollector(stateSource{store: w.store, consumers: consumers}))

	// Jobs outlive ctx (they drain); they stop on jobsCancel.
	jobsCtx, jobsCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer jobsCancel(errDrained)

	var bg sync.WaitGroup
	bgCtx, bgCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { bgCancel(); bg.Wait() }()

	// The cancel watcher must run before the first claim so that no
	// cancel request falls between a claim's check and its registration.
	watchReady := make(chan error, 1)
	bg.Go(func() { w.watchCancels(bgCtx, watchReady) })
	bg.Go(func() { w.detectFreezes(bgCtx) })
	if err := <-watchReady; err != nil {
		return err
	}
	bg.Go(func() { w.register(bgCtx) })
	bg.Go(func() { w.reapOrphans(bgCtx) })
	if !w.cfg.NoReaper {
		el := &lease.Elector{
			JS: w.store.JS, KV: w.store.Elections, Role: "reaper", ID: w.cfg.Name,
			TTL: w.cfg.ElectionTTL, Logger: w.deps.Logger,
			OnChange: func(leader bool) { w.m.Leader.WithLabelValues("reaper").Set(b2f(leader)) },
		}
		bg.Go(func() { el.Run(bgCtx, w.reap) })
	}

	w.log.Info("worker started", "queues", w.cfg.Queues, "slots", w.cfg.Slots,
		"backends", w.deps.Backends.Profiles(), "lease_ttl", w.cfg.LeaseTTL)
	var pullers sync.WaitGroup
	for ln, c := range consumers {
		pullers.Go(func() { w.pull(ctx, jobsCtx, ln, c) })
	}
	<-ctx.Done()
	pullers.Wait()

	w.log.Info("draining", "running", w.runningCount(), "timeout", w.cfg.DrainTimeout)
	done := make(chan struct{})
	go func() { w.jobWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.DrainTimeout):
		w.log.Warn("drain timeout: handing running jobs back", "running", w.runningCount())
		jobsCancel(errDrained)
		<-done
	}
	w.log.Info("worker stopped")
	return nil
}

// lane is one of a queue's dispatch lanes: the jobs for one backend
// profile, or (profile "") the jobs that name no lane.
type lane struct{ queue, profile string }

// pull fetches messages of one lane while a slot is free, until ctx is
// done: never more messages than it can start at once, so nothing sits in
// a client buffer counting down its claim window. A worker pulls from
// several lanes, so a pull that waits for a message holds no slot: a
// message that arrives when the other lanes have taken every slot is
// handed straight back for another worker.
func (w *Worker) pull(ctx, jobsCtx context.Context, ln lane, c jetstream.Consumer) {
	for {
		// Pull only while there is room to run what comes.
		select {
		case <-ctx.Done():
			return
		case w.slots <- struct{}{}:
		}
		free := 1 + w.takeFreeSlots()
		var msgs []jetstream.Msg
		var err error
		if free > 1 {
			msgs, err = w.fetchNow(c, free)
		}
		for i := len(msgs); i < free; i++ {
			<-w.slots
		}
		if len(msgs) == 0 && err == nil {
			msgs, err = w.fetchWait(ctx, c)
			if len(msgs) == 1 && !w.tryTakeSlot() {
				_ = msgs[0].Nak()
				w.m.HandedBack.WithLabelValues(ln.queue).Inc()
				msgs = nil
			}
		}
		if err != nil && ctx.Err() == nil {
			w.log.Warn("fetch failed", "queue", ln.queue, "profile", ln.profile, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
		for _, msg := range msgs {
			if ctx.Err() != nil {
				// Fetched while shutting down: hand it straight back.
				_ = msg.Nak()
				<-w.slots
				continue
			}
			w.jobWG.Go(func() {
				// The slot is given back as soon as the command has
				// ended, so the next job starts while this one commits.
				release := sync.OnceFunc(func() { <-w.slots })
				defer release()
				w.handle(jobsCtx, ln, msg, release)
			})
		}
	}
}

// tryTakeSlot reserves a free slot without waiting.
func (w *Worker) tryTakeSlot() bool {
	select {
	case w.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// takeFreeSlots reserves every other free slot without waiting.
func (w *Worker) takeFreeSlots() int {
	n := 0
	for {
		select {
		case w.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
}

// fetchNow returns up to n messages that are there now.
func (w *Worker) fetchNow(c jetstream.Consumer, n int) ([]jetstream.Msg, error) {
	batch, err := c.FetchNoWait(n)
	if err != nil {
		return nil, err
	}
	var out []jetstream.Msg
	for m := range batch.Messages() {
		out = append(out, m)
	}
	return out, ignoreNoMessages(batch.Error())
}

// fetchWait waits up to PullWait for one message. Timeouts are not
// errors.
func (w *Worker) fetchWait(ctx context.Context, c jetstream.Consumer) ([]jetstream.Msg, error) {
	fctx, cancel := context.WithTimeout(ctx, w.cfg.PullWait)
	defer cancel()
	batch, err := c.Fetch(1, jetstream.FetchContext(fctx))
	if err != nil {
		return nil, ignoreNoMessages(err)
	}
	var out []jetstream.Msg
	for m := range batch.Messages() {
		out = append(out, m)
	}
	return out, ignoreNoMessages(batch.Error())
}

func ignoreNoMessages(err error) error {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, jetstream.ErrNoMessages) {
		return nil
	}
	return err
}

func (w *Worker) track(id, owner string, cancel context.CancelCauseFunc) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.running[id]; dup {
		return false
	}
	w.running[id] = runningJob{owner: owner, cancel: cancel}
	return true
}

func (w *Worker) untrack(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.running, id)
}

func (w *Worker) runningCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// register keeps this worker's entry in the workers bucket while it runs.
func (w *Worker) register(ctx context.Context) {
	profiles := map[string]jobs.WorkerProfile{}
	for _, p := range w.deps.Backends.Profiles() {
		be, _ := w.deps.Backends.Get(p)
		wp := jobs.WorkerProfile{Kind: be.Kind()}
		if d, ok := be.(backends.Describer); ok {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			wp.Description, _ = d.Describe(dctx)
			cancel()
		}
		profiles[p] = wp
	}
	info, _ := json.Marshal(jobs.WorkerInfo{Name: w.cfg.Name, Queues: w.cfg.Queues, Slots: w.cfg.Slots,
		Backends: w.deps.Backends.Profiles(), Profiles: profiles, StartedAt: w.now().UTC()})
	// A registration lost to a fault (a heartbeat that could not land
	// while a stream leader moved) is taken again: a worker that outlives
	// the fault is listed again, after at most its lease TTL.
	retry := max(w.cfg.LeaseTTL/2, time.Second)
	for warned := false; ; {
		if w.registerOnce(ctx, info) || ctx.Err() != nil {
			return
		}
		if !warned {
			warned = true
			w.log.Warn("worker registration failed (status will not list this worker until it succeeds)")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

// registerOnce holds the registration until ctx ends (true) or the entry
// is lost or cannot be taken (false).
func (w *Worker) registerOnce(ctx context.Context, info []byte) bool {
	l, err := lease.Acquire(ctx, w.store.JS, w.store.Workers, w.cfg.Name, w.cfg.LeaseTTL, info)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Debug("worker registration", "err", err)
		}
		return false
	}
	w.log.Debug("worker registered")
	k := lease.Keep(l, lease.KeeperConfig{Value: info})
	ended := false
	select {
	case <-ctx.Done():
		ended = true
	case <-k.Lost():
		w.log.Warn("worker registration lost; taking it again", "err", k.Err())
	}
	k.Stop()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = l.Release(rctx)
	return ended
}

// stateSource reads the JetStream state behind the worker's metrics: its
// queues' consumers and the layout's streams (KV buckets and the object
// store are streams too).
type stateSource struct {
	store     *jobs.Store
	consumers map[lane]jetstream.Consumer
}

// layoutStreams are the streams whose sizes are exported.
var layoutStreams = []string{jobs.StreamJobs, jobs.StreamEvents, jobs.StreamDLQ,
	"KV_" + jobs.BucketState, "KV_" + jobs.BucketSchedules, jobs.StreamOutputs}

func (d stateSource) JetStreamState(ctx context.Context) (metrics.JetStreamState, error) {
	st := metrics.JetStreamState{Consumers: map[string]metrics.ConsumerState{}, Streams: map[string]metrics.StreamState{}}
	for ln, c := range d.consumers {
		info, err := c.Info(ctx)
		if err != nil {
			return st, err
		}
		// A queue's depth is the sum of the lanes this worker serves.
		cs := st.Consumers[ln.queue]
		cs.Pending += info.NumPending
		cs.AckPending += uint64(info.NumAckPending)
		cs.Redelivered += uint64(info.NumRedelivered)
		st.Consumers[ln.queue] = cs
	}
	for _, name := range layoutStreams {
		s, err := d.store.JS.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return st, err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return st, err
		}
		st.Streams[name] = metrics.StreamState{Messages: info.State.Msgs, Bytes: info.State.Bytes}
		if name == jobs.StreamDLQ {
			st.DLQ = info.State.Msgs
		}
	}
	return st, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
