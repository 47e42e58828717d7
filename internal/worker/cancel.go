package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// runningJob is a job this worker runs: who owns it, and how to stop it.
type runningJob struct {
	owner  string
	cancel context.CancelCauseFunc
}

// watchCancels acts on cancel requests. A request counts only for a job of
// the owner whose tokens its key carries (the server lets each identity
// write cancel keys under its own owner alone). A job running here is
// stopped; a job waiting for its next attempt is ended as canceled; a job
// never claimed is ended when a worker claims it (cancelRequested).
func (w *Worker) watchCancels(ctx context.Context, ready chan<- error) {
	loaded := func(err error) {
		if err == nil {
			err = w.loadCancels(ctx)
		}
		ready <- err
	}
	w.store.FollowLive(ctx, w.store.State, jobs.CancelFilter, loaded, func(e jetstream.KeyValueEntry) {
		if e.Operation() != jetstream.KeyValuePut {
			// The request expired (or was removed): forgotten here too.
			w.mu.Lock()
			delete(w.cancels, e.Key())
			w.mu.Unlock()
			return
		}
		owner, id, ok := jobs.ParseCancelKey(e.Key())
		if !ok {
			return
		}
		w.mu.Lock()
		w.cancels[e.Key()] = true
		r, running := w.running[id]
		w.mu.Unlock()
		if running {
			if r.owner == owner.String() {
				r.cancel(errCanceled)
			}
			return
		}
		w.cancelIdle(ctx, owner, id)
	}, w.cancelsLive.Store)
}

// loadCancels reads the cancel requests made before the watch began (the
// watch reports changes only): a job queued before this worker started
// and canceled meanwhile must not run when this worker claims it.
func (w *Worker) loadCancels(ctx context.Context) error {
	lister, err := w.store.State.ListKeysFiltered(ctx, jobs.CancelFilter)
	if err != nil {
		return fmt.Errorf("read cancel requests: %w", err)
	}
	for k := range lister.Keys() {
		w.mu.Lock()
		w.cancels[k] = true
		w.mu.Unlock()
	}
	return nil
}

// cancelRequested reports whether owner asked for job id's cancellation.
func (w *Worker) cancelRequested(owner, id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cancels[jobs.CancelKey(owner, id)]
}

// forgetCancel drops the cancel requests of an ended job.
func (w *Worker) forgetCancel(owner, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.cancels, jobs.CancelKey(owner, id))
}

// cancelIdle ends owner's job id as canceled when it has a record and is
// not running: queued for a next attempt, or waiting for its retry. A job
// with no record yet is left to its claim (its owner is known only from
// its message), and a running one to the worker that holds its lease.
func (w *Worker) cancelIdle(ctx context.Context, owner jobs.Owner, id string) {
	log := w.log.With("job", id)
	run, _, err := w.store.GetRun(ctx, id)
	if err != nil || run.State.Terminal() || run.State == jobs.StateRunning || run.OwnerString() != owner.String() {
		if err == nil && run.State.Terminal() {
			w.forgetCancel(owner.String(), id)
		}
		return
	}
	l, err := lease.Acquire(ctx, w.store.JS, w.store.State, jobs.LeaseKey(id), w.cfg.LeaseTTL, []byte(`{"canceler":"`+w.cfg.Name+`"}`))
	if err != nil {
		if !errors.Is(err, lease.ErrHeld) {
			log.Warn("cancel: acquire lease", "err", err)
		}
		return
	}
	unmarked := false // a batch end marker to be written by whoever sees the lease expire
	defer func() {
		if unmarked {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = l.Release(rctx)
	}()
	// Read again under the lease: only a stale holder's write can move
	// it now, and the compare-and-set below would lose to it.
	run, rev, err := w.store.GetRun(ctx, id)
	if err != nil || run.State.Terminal() || run.State == jobs.StateRunning {
		return
	}
	now := w.now().UTC()
	r := jobs.Result{JobID: id, Queue: run.Spec.Queue, Backend: run.Spec.Backend, State: jobs.StateCanceled,
		Attempt: run.Attempt, ExitCode: -1, Error: "canceled while " + string(run.State), FinishedAt: now}
	if err := w.end(ctx, run, rev, r); err != nil {
		unmarked = errors.Is(err, errUnmarked)
		log.Warn("cancel: commit", "err", err)
		return
	}
	w.forgetCancel(owner.String(), id)
}

// Freeze detection: the detector ticks every freezeTick; a tick that comes
// freezeGap late, or a claim that finds no tick for freezeGap, means the
// process did not run for a while.
const (
	freezeTick  = 100 * time.Millisecond
	freezeGap   = 750 * time.Millisecond
	freezeTrust = 5 * time.Second // how long after a freeze the watches are not trusted
)

// detectFreezes ticks until ctx ends, noting the gaps between its ticks.
func (w *Worker) detectFreezes(ctx context.Context) {
	t := time.NewTicker(freezeTick)
	defer t.Stop()
	w.pulse.Store(time.Now().UnixNano())
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now().UnixNano()
			if time.Duration(now-w.pulse.Load()) > freezeGap {
				w.frozeAt.Store(now)
			}
			w.pulse.Store(now)
		}
	}
}

// recentlyFrozen reports whether the process was stopped a moment ago (or
// is resuming from a stop right now, before the detector has ticked).
func (w *Worker) recentlyFrozen() bool {
	now := time.Now().UnixNano()
	last := w.pulse.Load()
	return last != 0 && time.Duration(now-last) > freezeGap || time.Duration(now-w.frozeAt.Load()) < freezeTrust
}
