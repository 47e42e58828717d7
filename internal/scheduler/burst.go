package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// A cron burst: every slot due by now, fired as one pipeline.

// Defaults of the dispatch pipeline.
const (
	// dispatchInFlight bounds the job publishes awaiting their acks.
	dispatchInFlight = 512
	// ackTimeout bounds the wait for one publish's ack; the slot is then
	// retried under the same message ID (a duplicate is dropped).
	ackTimeout = 10 * time.Second
)

var errAckTimeout = errors.New("no publish ack within the timeout")

// fireDue handles every slot due by now: a suspended schedule's slot is
// skipped, one whose overlap policy needs its previous run's state is
// checked off the loop, and the rest are published together.
func (d *dispatcher) fireDue(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	fires := d.ready
	d.ready = nil
	now := d.now()
	for len(d.due) > 0 && !d.due[0].at.After(now) {
		e := d.popDue()
		f := fire{e: e, slot: e.at, kind: e.kind}
		switch {
		case e.c.Suspended:
			d.skip(f, "suspended", "suspended")
		case e.c.Overlap != OverlapAllow && e.lastJob != "":
			d.checkOverlap(ctx, f)
		default:
			fires = append(fires, f)
		}
	}
	if len(fires) > 0 {
		d.dispatch(ctx, fires)
	}
}

func (d *dispatcher) popDue() *entry {
	e := d.due[0]
	d.unarm(e)
	return e
}

// published is a fire whose job was published, awaiting its ack.
type published struct {
	fire
	id   string
	ack  jetstream.PubAckFuture
	sent time.Time
}

// dispatch publishes the fires' jobs as one asynchronous pipeline — at
// most inFlight awaiting their acks — and records each fire as its ack
// comes in. State writes wait until the burst is settled. A fire whose
// publish fails is retried off the loop. Once ctx is done no publish
// starts, and those in flight are still settled: the next leader fires
// the rest again (under the same message IDs).
func (d *dispatcher) dispatch(ctx context.Context, fires []fire) {
	d.w.pause.Lock()
	defer d.w.pause.Unlock()
	// The schedules fired are armed for their next slot once the burst is
	// settled: finding a cron's next slot is not free, and no ack of the
	// burst waits for it.
	d.bursting = true
	defer func() {
		d.bursting = false
		for _, e := range d.settled {
			d.release(e)
		}
		clear(d.settled)
		d.settled = d.settled[:0]
	}()
	inFlight := cmp.Or(d.s.inFlight, dispatchInFlight)
	var queue []published // in flight, oldest first
	settle := func(p published, wait bool) bool {
		var err error
		if wait {
			t := time.NewTimer(max(ackTimeout-time.Since(p.sent), 0))
			select {
			case <-p.ack.Ok():
			case err = <-p.ack.Err():
			case <-t.C:
				err = errAckTimeout
			}
			t.Stop()
		} else {
			select {
			case <-p.ack.Ok():
			case err = <-p.ack.Err():
			default:
				return false
			}
		}
		if err != nil {
			d.retry(ctx, p.fire, err)
		} else {
			// A duplicate is a slot a previous leader published: fired.
			d.fired(p.fire, p.id, d.now())
		}
		return true
	}
	for i, f := range fires {
		if ctx.Err() != nil {
			d.log.Info("leadership ended during a burst; the next leader fires the rest", "unfired", len(fires)-i)
			break
		}
		// Record what was acked already; wait only when the pipeline is full.
		for len(queue) > 0 && settle(queue[0], len(queue) >= inFlight) {
			queue = queue[1:]
		}
		spec, err := d.spec(ctx, f)
		var ack jetstream.PubAckFuture
		if err == nil {
			ack, err = d.s.store.PublishJobAsync(spec, d.s.cfg.Owner, spec.ID)
		}
		if err != nil {
			d.retry(ctx, f, err)
			continue
		}
		queue = append(queue, published{fire: f, id: spec.ID, ack: ack, sent: time.Now()})
	}
	for _, p := range queue {
		settle(p, true)
	}
}

// spec is the job of fire f.
func (d *dispatcher) spec(ctx context.Context, f fire) (jobs.Spec, error) {
	spec := jobTemplate(f.e.c.Schedule, f.slot)
	spec.ID = SlotID(f.e.name, f.slot)
	spec.SubmittedAt = d.now().UTC()
	return d.s.client.Seal(ctx, spec)
}

// fired records a fire whose job was published at at.
func (d *dispatcher) fired(f fire, jobID string, at time.Time) {
	s := d.s
	if f.kind == "slot" {
		s.m.FireLag.Observe(at.Sub(f.slot).Seconds())
		if s.cfg.OnFire != nil {
			s.cfg.OnFire(f.slot, at)
		}
	}
	s.m.ScheduleFires.WithLabelValues(f.kind).Inc()
	d.handled(f, Fire{Slot: f.slot, At: at, JobID: jobID, Kind: f.kind}, jobID)
}

// skip records a slot that does not fire, counted under label.
func (d *dispatcher) skip(f fire, label, reason string) {
	d.s.m.ScheduleSkipped.WithLabelValues(label).Inc()
	d.handled(f, Fire{Slot: f.slot, At: d.now(), Kind: "skipped", Reason: reason}, "")
}

// handled moves e past slot f (in memory now, in the bucket by the state
// writer) and arms it for its next slot.
func (d *dispatcher) handled(f fire, rec Fire, jobID string) {
	e := f.e
	if f.slot.After(e.cursor) {
		e.cursor = f.slot
	}
	for len(e.catchup) > 0 && !e.catchup[0].After(f.slot) {
		e.catchup = e.catchup[1:]
	}
	if jobID != "" {
		e.lastJob = jobID
	}
	d.w.add(e.name, func(st *State) {
		// A slot older than the stored one (a record of a previous
		// leader landing late) changes neither the slot nor the job the
		// overlap policy follows.
		if !rec.Slot.Before(st.LastSlot) {
			st.LastSlot = rec.Slot
			if jobID != "" {
				st.LastJob = jobID
			}
		}
		st.record(rec)
	})
	if d.bursting {
		d.settled = append(d.settled, e)
		return
	}
	d.release(e)
}

// checkOverlap reads the state of the schedule's previous run off the
// loop: while it runs (or waits in its queue), forbid skips the slot and
// replace cancels it before the slot fires.
func (d *dispatcher) checkOverlap(ctx context.Context, f fire) {
	e := f.e
	e.busy = true
	prev, policy := e.lastJob, e.c.Overlap
	d.goOff(ctx, func() {
		st, err := d.s.client.Status(ctx, prev)
		// No record yet: the previous run is queued, not yet claimed.
		queued := errors.Is(err, jobs.ErrNotFound)
		running := queued || (err == nil && !st.State().Terminal())
		state := st.State()
		if queued {
			state = jobs.StateQueued
		}
		if running && policy == OverlapReplace {
			if _, err := d.s.client.Cancel(ctx, prev); err != nil {
				d.log.Warn("replace: cancel of the previous run failed", "schedule", e.name, "job", prev, "err", err)
			}
		}
		d.post(ctx, func() {
			switch {
			case !d.current(e):
			case e.c.Suspended:
				d.skip(f, "suspended", "suspended")
			case running && policy == OverlapForbid:
				d.skip(f, "overlap", fmt.Sprintf("previous run %s is %s (overlap: forbid)", prev, state))
			default:
				d.ready = append(d.ready, f) // in this iteration's burst
			}
		})
	})
}

// retry submits a fire whose publish failed again, off the loop, until it
// succeeds or its slot leaves its catch-up window (at least a minute);
// a slot given up is recorded as missed.
func (d *dispatcher) retry(ctx context.Context, f fire, err error) {
	e := f.e
	e.busy = true
	d.s.m.ScheduleErrors.Inc()
	d.log.Warn("fire failed, retrying", "schedule", e.name, "slot", f.slot, "err", err)
	c := e.c
	d.work.Go(func() {
		id, err := d.resubmit(ctx, c, f.slot)
		d.post(ctx, func() {
			switch {
			case !d.current(e):
			case err == nil:
				d.fired(f, id, d.now())
			default:
				d.log.Error("fire failed; giving the slot up", "schedule", e.name, "slot", f.slot, "err", err)
				d.s.m.ScheduleMissed.Inc()
				d.handled(f, Fire{Slot: f.slot, At: d.now(), Kind: "missed", Reason: fmt.Sprintf("dispatch failed: %v", err)}, "")
			}
		})
	})
}

// resubmit publishes c's job for slot, waiting for each attempt's ack,
// with backoff.
func (d *dispatcher) resubmit(ctx context.Context, c compiled, slot time.Time) (string, error) {
	s := d.s
	wait := 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
		spec := jobTemplate(c.Schedule, slot)
		spec.ID = SlotID(c.Name, slot)
		spec.SubmittedAt = s.cfg.Now().UTC()
		// A submit once begun is finished even if leadership ends: the
		// slot's job ID makes a second attempt by the next leader a no-op.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
		spec, err := s.client.Seal(sctx, spec)
		if err == nil {
			err = s.store.SubmitPipelined(sctx, spec, s.cfg.Owner, spec.ID)
		}
		cancel()
		if err == nil || errors.Is(err, jobs.ErrExists) {
			// ErrExists: fired before (by a leader that died before
			// recording the slot); the dispatch was deduplicated.
			return spec.ID, nil
		}
		s.m.ScheduleErrors.Inc()
		if s.cfg.Now().Sub(slot) > max(c.Window(), time.Minute) {
			return "", err
		}
		d.log.Warn("fire failed, retrying", "schedule", c.Name, "slot", slot, "err", err)
	}
}
