package worker

import (
	"context"
	"encoding/json"
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
// is done. One watch of the job records and leases keeps an index of the
// jobs that have not ended and of the leases that are held: a lease's
// expiry marker recovers its job at once, and a periodic pass over the
// index (not over every record: finished jobs cost nothing) recovers what
// the markers missed while nobody watched.
func (w *Worker) reap(ctx context.Context) {
	var follow sync.WaitGroup
	follow.Go(func() { w.announceBatches(ctx) })
	if w.cfg.WorkspaceIdle > 0 {
		follow.Go(func() { w.expireWorkspaces(ctx) })
	}
	defer follow.Wait()
	for ctx.Err() == nil {
		if err := w.reapWatching(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("reaper: watch of jobs and leases ended; starting again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// reapIndex is what the reaper knows of the jobs that have not ended, and
// of the leases held, from its watch.
type reapIndex struct {
	live   map[string]jobs.Run // non-terminal job records, by ID (the spec dropped)
	leased map[string]bool     // held leases, by job ID
	// unmarked holds the batch items whose end is committed and whose
	// end marker the watch has not brought yet, by marker key: their
	// worker writes it right after the commit, and a worker that died in
	// between leaves it to the reaper (repairBatchEnds).
	unmarked map[string]unmarkedEnd
}

// unmarkedEnd is a committed batch item end without its marker yet.
type unmarkedEnd struct {
	id    string
	since time.Time
}

// reapWatching runs the reaper on one watch, which it builds its index
// from; it returns when the watch ends.
func (w *Worker) reapWatching(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kw, err := w.store.State.WatchFiltered(ctx, []string{jobs.RunKey(">"), jobs.LeaseKey(">"), jobs.BatchEndKey("*", "*", "*")})
	if err != nil {
		return err
	}
	defer func() { _ = kw.Stop() }()
	idx := reapIndex{live: map[string]jobs.Run{}, leased: map[string]bool{}, unmarked: map[string]unmarkedEnd{}}
	t := time.NewTicker(w.cfg.ReaperScan)
	defer t.Stop()
	loaded := false
	var seen, prev uint64 // the newest revision the watch delivered; the bucket's newest at the last pass
	stalled := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			// A watch that stops delivering (an ordered consumer that
			// did not come back after a server restart) leaves the
			// index stale, and a job it never saw start is never
			// recovered: when, at two passes in a row, the watch has not
			// delivered what the bucket held at the pass before, build
			// it again.
			if last, err := w.newestRevision(ctx); err == nil {
				if prev > 0 && seen < prev {
					if stalled++; stalled >= 2 {
						return fmt.Errorf("watch stalled at revision %d, the bucket at %d", seen, last)
					}
				} else {
					stalled = 0
				}
				prev = last
			}
			if loaded {
				w.rescan(ctx, idx)
				w.repairBatchEnds(ctx, idx)
				w.wakeHeld(ctx)
			}
			if h := w.deps.ReaperPass; h != nil {
				h()
			}
		case e, ok := <-kw.Updates():
			if !ok {
				return errors.New("watch closed")
			}
			if e == nil { // every record and lease there was is indexed
				loaded = true
				w.m.ReaperIndexed.Set(float64(len(idx.live)))
				w.rescan(ctx, idx)
				continue
			}
			seen = max(seen, e.Revision())
			if id, expired := idx.apply(e, w.now()); expired && loaded {
				w.recover(ctx, id)
			}
			w.m.ReaperIndexed.Set(float64(len(idx.live)))
		}
	}
}

// newestRevision is the revision of the newest job record or lease the
// bucket holds (what the reaper's watch should have delivered by now).
func (w *Worker) newestRevision(ctx context.Context) (uint64, error) {
	st, err := w.store.Stream(ctx, "KV_"+w.store.State.Bucket())
	if err != nil {
		return 0, err
	}
	var newest uint64
	for _, key := range []string{jobs.RunKey(">"), jobs.LeaseKey(">")} {
		m, err := st.GetLastMsgForSubject(ctx, "$KV."+w.store.State.Bucket()+"."+key)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		newest = max(newest, m.Sequence)
	}
	return newest, nil
}

// apply folds one watch entry into the index. expired is true for a
// lease's expiry marker.
func (x reapIndex) apply(e jetstream.KeyValueEntry, now time.Time) (id string, expired bool) {
	if _, _, _, ok := jobs.ParseBatchEndKey(e.Key()); ok {
		if e.Operation() == jetstream.KeyValuePut {
			delete(x.unmarked, e.Key())
		}
		return "", false
	}
	if id, ok := strings.CutPrefix(e.Key(), jobs.LeaseKey("")); ok {
		held := e.Operation() == jetstream.KeyValuePut
		if held {
			x.leased[id] = true
		} else {
			delete(x.leased, id)
		}
		// A holder releases its lease (a purge) after its last write of
		// the record, which this watch has seen: only the lease of a job
		// still running can be gone with its holder (an expiry marker).
		return id, !held && x.live[id].State == jobs.StateRunning
	}
	id = strings.TrimPrefix(e.Key(), jobs.RunKey(""))
	// Only what the pass decides on: every record write reaches the
	// reaper, and decoding its spec and result would be wasted.
	var run struct {
		State         jobs.State `json:"state"`
		UpdatedAt     time.Time  `json:"updated_at"`
		NextAttemptAt time.Time  `json:"next_attempt_at"`
		Spec          struct {
			Labels map[string]string `json:"labels"`
		} `json:"spec"`
	}
	if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &run) != nil || run.State.Terminal() {
		delete(x.live, id)
		if run.State.Terminal() && strings.Contains(id, ".") {
			if batch, suffix, ok := jobs.BatchItemOf(jobs.Spec{ID: id, Labels: run.Spec.Labels}); ok {
				x.unmarked[jobs.BatchEndKey(batch, run.State, suffix)] = unmarkedEnd{id: id, since: now}
			}
		}
		return id, false
	}
	x.live[id] = jobs.Run{Spec: jobs.Spec{ID: id}, State: run.State, UpdatedAt: run.UpdatedAt, NextAttemptAt: run.NextAttemptAt}
	return id, false
}

// repairBatchEnds writes the end markers of batch items whose end was
// committed a lease TTL ago or more, whose lease is gone and whose marker
// never came: their worker died between the commit and the marker (or
// could not write it, and left its lease to expire for this).
func (w *Worker) repairBatchEnds(ctx context.Context, idx reapIndex) {
	now := w.now()
	for key, u := range idx.unmarked {
		if ctx.Err() != nil {
			return
		}
		if now.Sub(u.since) < w.cfg.LeaseTTL || idx.leased[u.id] {
			continue
		}
		run, _, err := w.store.GetRun(ctx, u.id)
		if errors.Is(err, jobs.ErrNotFound) || (err == nil && (run.Result == nil || !run.State.Terminal())) {
			delete(idx.unmarked, key) // gone, or open again (a rerun)
			continue
		}
		if err != nil {
			w.log.Warn("reaper: read ended batch item", "job", u.id, "err", err)
			continue
		}
		if _, err := w.store.MarkBatchEnd(ctx, run); err != nil {
			w.log.Warn("reaper: write batch end marker", "job", u.id, "err", err)
			continue
		}
		w.m.ReaperRecovered.WithLabelValues("batch_end").Inc()
		w.log.Info("reaper: wrote the end marker of a batch item whose worker did not", "job", u.id, "state", run.State)
		// The watch brings the marker, which removes the entry; a key
		// that differs (the record changed meanwhile) waits for its own.
		u.since = now
		idx.unmarked[key] = u
	}
}

// rescan recovers, from the index, every running job that has no lease,
// every retry whose dispatch is overdue, and every queued job no worker
// claimed within a claim window.
func (w *Worker) rescan(ctx context.Context, idx reapIndex) {
	now := w.now()
	var due []string
	for id, run := range idx.live {
		switch run.State {
		case jobs.StateRunning:
			if idx.leased[id] {
				continue
			}
		case jobs.StateRetryWait:
			if now.Before(run.NextAttemptAt.Add(w.cfg.ClaimWindow)) {
				continue
			}
		case jobs.StateQueued:
			if now.Before(run.UpdatedAt.Add(w.cfg.ClaimWindow)) {
				continue // queued a moment ago: its message is on its way
			}
		default:
			continue
		}
		due = append(due, id)
	}
	for _, id := range due {
		if ctx.Err() != nil {
			return
		}
		w.recover(ctx, id)
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
	unmarked := false // a batch end marker to be written by whoever sees the lease expire
	defer func() {
		if unmarked {
			return
		}
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
	if run.State.Terminal() {
		return
	}
	// A job its owner asked to cancel ends canceled, whatever its worker
	// left it as: not requeued, and not dead when its attempts are spent.
	canceled := w.cancelRequested(run.OwnerString(), id)
	if !canceled {
		if canceled, err = w.store.CancelRequested(ctx, run.OwnerString(), id); err != nil {
			log.Warn("reaper: read cancel request", "err", err)
			return
		}
	}
	if canceled {
		r := jobs.Result{JobID: id, Queue: run.Spec.Queue, Backend: run.Spec.Backend, State: jobs.StateCanceled,
			Attempt: run.Attempt, ExitCode: -1, Error: "canceled while " + string(run.State), Worker: run.Worker, FinishedAt: w.now().UTC()}
		if err := w.end(ctx, run, rev, r); err != nil {
			unmarked = errors.Is(err, errUnmarked)
			log.Warn("reaper: commit canceled", "err", err)
			return
		}
		w.forgetCancel(run.OwnerString(), id)
		w.m.ReaperRecovered.WithLabelValues("canceled").Inc()
		return
	}
	switch run.State {
	case jobs.StateRunning:
		lost := fmt.Sprintf("attempt %d: worker %s stopped renewing its lease (crashed, frozen or cut off)", run.Attempt, run.Worker)
		if run.Attempt >= run.Spec.MaxAttempts {
			r := jobs.Result{JobID: id, Queue: run.Spec.Queue, Backend: run.Spec.Backend, State: jobs.StateDead,
				Attempt: run.Attempt, ExitCode: -1, Error: lost, Worker: run.Worker, FinishedAt: w.now().UTC()}
			if err := w.end(ctx, run, rev, r); err != nil {
				unmarked = errors.Is(err, errUnmarked)
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
