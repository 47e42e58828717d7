package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// reap is the reaper, run by the leader of the "reaper" role until ctx
// is done. It watches lease expiry markers and rescans job records
// periodically (markers are missed while nobody watches).
func (w *Worker) reap(ctx context.Context) {
	expired := make(chan string, 1024)
	var follow sync.WaitGroup
	follow.Go(func() {
		w.store.Follow(ctx, w.store.State, jobs.LeaseKey(">"), nil, func(e jetstream.KeyValueEntry) {
			// Expiry (a MaxAge/TTL marker) shows as a purge; a holder's
			// own release is a delete and needs nothing.
			if e.Operation() != jetstream.KeyValuePurge {
				return
			}
			select {
			case expired <- strings.TrimPrefix(e.Key(), jobs.LeaseKey("")):
			case <-ctx.Done():
			}
		})
	})
	follow.Go(func() { w.announceBatches(ctx) })
	defer follow.Wait()
	w.rescan(ctx)
	t := time.NewTicker(w.cfg.ReaperScan)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.rescan(ctx)
		case id := <-expired:
			w.recover(ctx, id)
		}
	}
}

// rescan recovers every running job that has no lease.
func (w *Worker) rescan(ctx context.Context) {
	lister, err := w.store.State.ListKeysFiltered(ctx, jobs.RunKey(">"))
	if err != nil {
		w.log.Warn("reaper: list jobs", "err", err)
		return
	}
	var ids []string
	for k := range lister.Keys() {
		ids = append(ids, strings.TrimPrefix(k, jobs.RunKey("")))
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		run, _, err := w.store.GetRun(ctx, id)
		if err != nil || (run.State != jobs.StateRunning && run.State != jobs.StateRetryWait && run.State != jobs.StateQueued) {
			continue
		}
		if run.State == jobs.StateRetryWait && w.now().Before(run.NextAttemptAt.Add(w.cfg.ClaimWindow)) {
			continue
		}
		if run.State == jobs.StateQueued && w.now().Before(run.UpdatedAt.Add(w.cfg.ClaimWindow)) {
			continue // queued a moment ago: its message is on its way
		}
		_, err = w.store.State.Get(ctx, jobs.LeaseKey(id))
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			w.recover(ctx, id)
		}
	}
}

// recover takes the lease of a job whose holder is gone and moves the job
// on: finalize a committed result, requeue a running job for its next
// attempt, dead-letter it when attempts are spent, or reschedule a lost
// retry.
func (w *Worker) recover(ctx context.Context, id string) {
	log := w.log.With("role", "reaper", "job", id)
	l, err := lease.Acquire(ctx, w.store.JS, w.store.State, jobs.LeaseKey(id), w.cfg.LeaseTTL, []byte(`{"reaper":"`+w.cfg.Name+`"}`))
	if err != nil {
		if !errors.Is(err, lease.ErrHeld) {
			log.Warn("reaper: acquire lease", "err", err)
		}
		return
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = l.Release(rctx)
	}()
	run, rev, err := w.store.GetRun(ctx, id)
	if err != nil {
		if !errors.Is(err, jobs.ErrNotFound) {
			log.Warn("reaper: read job", "err", err)
		}
		return
	}
	switch run.State {
	case jobs.StateRunning:
		lost := fmt.Sprintf("attempt %d: worker %s stopped renewing its lease (crashed, frozen or cut off)", run.Attempt, run.Worker)
		if run.Attempt >= run.Spec.MaxAttempts {
			r := jobs.Result{JobID: id, Queue: run.Spec.Queue, Backend: run.Spec.Backend, State: jobs.StateDead,
				Attempt: run.Attempt, ExitCode: -1, Error: lost, Worker: run.Worker, FinishedAt: w.now().UTC()}
			if err := w.end(ctx, run, rev, r); err != nil {
				log.Warn("reaper: commit dead", "err", err)
				return
			}
			w.m.ReaperRecovered.WithLabelValues("dead").Inc()
			log.Warn("job dead: attempts spent by lost workers", "attempts", run.Attempt)
			return
		}
		// Publish first: a message without the record change is claimed
		// normally; a record change without a message would strand it.
		if err := w.store.PublishJob(ctx, run.Spec, run.OwnerString(), fmt.Sprintf("%s.a%d.reap", id, run.Attempt)); err != nil {
			log.Warn("reaper: requeue publish", "err", err)
			return
		}
		run.State = jobs.StateQueued
		run.LastError = lost
		run.Worker = ""
		run.UpdatedAt = w.now().UTC()
		if _, err := w.store.UpdateRun(ctx, run, rev); err != nil {
			log.Warn("reaper: requeue record (the job is queued anyway)", "err", err)
		}
		w.m.ReaperRecovered.WithLabelValues("requeued").Inc()
		w.m.Retries.WithLabelValues(run.Spec.Queue).Inc()
		w.store.PublishEvent(jobs.Event{Kind: "requeued", JobID: id, Attempt: run.Attempt, State: jobs.StateQueued, Time: w.now().UTC(), Message: lost})
		log.Info("job requeued after lease expiry", "attempt", run.Attempt)
	case jobs.StateQueued:
		// Queued, unclaimed for a claim window: its message may never
		// have been published (a requeue or hand-back that died between
		// its two writes). Publish it again, deduplicated per attempt
		// for the server's window; a copy of a message that exists is
		// dropped or waits at its claim.
		if err := w.store.PublishJob(ctx, run.Spec, run.OwnerString(), fmt.Sprintf("%s.a%d.requeue", id, run.Attempt)); err != nil {
			log.Warn("reaper: re-publish queued job", "err", err)
			return
		}
		w.m.ReaperRecovered.WithLabelValues("republished").Inc()
	case jobs.StateRetryWait:
		// The worker recorded the retry but may have died before
		// scheduling it; scheduling again is deduplicated.
		at := run.NextAttemptAt
		if now := w.now(); at.Before(now) {
			at = now
		}
		if err := w.store.ScheduleJob(ctx, run.Spec, run.OwnerString(), at, retryMsgID(id, run.Attempt)); err != nil {
			log.Warn("reaper: reschedule retry", "err", err)
		}
	}
}
