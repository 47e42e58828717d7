package worker

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
)

// reapOrphans runs every backend's orphan reaper now and then every
// ReaperScan until ctx is done.
func (w *Worker) reapOrphans(ctx context.Context) {
	t := time.NewTicker(w.cfg.ReaperScan)
	defer t.Stop()
	for {
		for _, p := range w.deps.Backends.Profiles() {
			be, _ := w.deps.Backends.Get(p)
			r, ok := be.(backends.OrphanReaper)
			if !ok {
				continue
			}
			n, err := r.ReapOrphans(ctx, w.store.Deployment, func(id string, attempt int, worker string) bool { return w.attemptLive(ctx, id, attempt, worker) })
			if n > 0 {
				w.m.OrphansReaped.WithLabelValues(p).Add(float64(n))
				w.log.Warn("orphaned workloads removed", "backend", p, "count", n)
			}
			if err != nil && ctx.Err() == nil {
				w.log.Warn("orphan reaper", "backend", p, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// attemptLive reports whether a workload of job id's attempt, started by
// worker, may still be wanted. This worker knows its own jobs; for another
// worker's, the attempt must be the job's current one, running, under a
// lease. When unsure (a read failed), it says live: a wrong removal kills
// a running job, a late one only wastes a container for a while.
func (w *Worker) attemptLive(ctx context.Context, id string, attempt int, worker string) bool {
	if worker == w.cfg.Name && id == "" {
		return true // this worker's own session or pool
	}
	if worker == w.cfg.Name {
		w.mu.Lock()
		_, mine := w.running[id]
		w.mu.Unlock()
		return mine
	}
	if id == "" {
		// A workload of the worker, not of one attempt (a session, a
		// warm pool): live while the worker holds its registration, a
		// lease of the lease TTL in the workers bucket.
		_, err := w.store.Workers.Get(ctx, worker)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return false
		}
		return true
	}
	run, _, err := w.store.GetRun(ctx, id)
	if errors.Is(err, jobs.ErrNotFound) {
		return false
	}
	if err != nil || run.State != jobs.StateRunning || run.Attempt != attempt || run.Worker != worker {
		return err != nil
	}
	_, err = w.store.State.Get(ctx, jobs.LeaseKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return false
	}
	return true
}
