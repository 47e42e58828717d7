package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// maxRawInDLQ bounds how much of an invalid message is copied to the DLQ.
const maxRawInDLQ = 4 << 10

// handle claims and runs one dispatch message. The order is the claim
// protocol: lease (Create) → read the record (cancel requested? ended?) →
// attempt counted in the record (CAS) → ack. Only then does the job run.
//
// releaseSlot gives the job's concurrency slot back; it is called once the
// command has ended, before the commit.
func (w *Worker) handle(ctx context.Context, ln lane, msg jetstream.Msg, releaseSlot func()) {
	queue := ln.queue
	spec, owner, err := decodeMessage(ln, msg.Subject(), msg.Headers().Get(jetstream.SchedulerHeader), msg.Data())
	if h := w.deps.Handled; h != nil {
		defer h(spec.ID) // the first deferred: it runs last
	}
	if err != nil {
		w.rejectInvalid(ctx, queue, msg, err)
		return
	}
	log := w.log.With("job", spec.ID, "owner", owner.String())

	// A batch item: its batch's record is written at its first claim,
	// and an item of another owner's batch is refused before it can take
	// (or wait for) one of that batch's slots.
	if err := w.ensureBatch(ctx, spec, owner.String()); err != nil {
		if errors.Is(err, errForeignBatch) {
			w.rejectInvalid(ctx, queue, msg, &jobs.FieldError{Field: "labels." + jobs.LabelBatch, Msg: err.Error()})
			return
		}
		log.Warn("claim: batch record", "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}

	// A throttled batch's item runs only in one of its batch's slots.
	slot, throttled, err := w.takeBatchSlot(ctx, spec)
	if err != nil {
		log.Warn("claim: batch slot", "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	if throttled && slot == nil {
		w.m.BatchThrottled.WithLabelValues(queue).Inc()
		w.hold(ctx, msg, spec)
		return
	}
	defer slot.release(ctx)
	if slot != nil {
		free := releaseSlot
		releaseSlot = func() { slot.release(ctx); free() }
	}
	// A workspace's jobs run one at a time, in their submission order.
	ws, _, err := w.takeWorkspace(ctx, spec, owner.String())
	if err != nil {
		log.Warn("claim: workspace", "workspace", spec.Workspace, "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	if spec.Workspace != "" && ws == nil {
		_ = msg.NakWithDelay(throttleDelay(msg))
		return
	}
	defer ws.release(ctx)
	if ws != nil {
		free := releaseSlot
		releaseSlot = func() { ws.release(ctx); free() }
	}

	// A cancel request acknowledged before this claim must stop it. The
	// watch of requests holds them all while it is live; after a
	// reconnect it lags seconds behind the server until it has caught up
	// (TestChaos seed 89 ran a canceled job to its end), and so does it
	// in a process that was stopped a moment ago, whose watch has not
	// yet delivered what arrived meanwhile (seed 12): then the request
	// is read from the server while the lease is taken: in flight
	// together, the two cost one round trip.
	cancelRead := make(chan error, 1)
	canceled := w.cancelRequested(owner.String(), spec.ID)
	if !canceled && (!w.cancelsLive.Load() || w.recentlyFrozen()) {
		go func() {
			c, err := w.store.CancelRequested(ctx, owner.String(), spec.ID)
			canceled = c
			cancelRead <- err
		}()
	} else {
		cancelRead <- nil
	}
	holder, _ := json.Marshal(map[string]any{"worker": w.cfg.Name})
	l, err := lease.Acquire(ctx, w.store.JS, w.store.State, jobs.LeaseKey(spec.ID), w.cfg.LeaseTTL, holder)
	cerr := <-cancelRead
	if err != nil {
		// Someone holds it: a running holder, a canceler, or the reaper.
		// Try again once the lease has had time to settle; if the job
		// has ended by then, this copy is dropped.
		if !errors.Is(err, lease.ErrHeld) {
			log.Warn("claim: acquire lease", "err", err)
		}
		_ = msg.NakWithDelay(max(w.cfg.LeaseTTL/2, time.Second))
		return
	}
	// From here on the job is ours until the lease is released or lost.
	// runCtx stops the run (cancel requests); ctx stays for the writes.
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !w.track(spec.ID, owner.String(), cancel) {
		_ = l.Release(ctx)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	defer w.untrack(spec.ID)
	j := &job{w: w, spec: spec, lease: l, log: log, msgSubject: msg.Subject(), releaseSlot: releaseSlot, batchSlot: slot, wsSlot: ws}
	if cerr != nil {
		log.Warn("claim: read cancel request", "err", cerr)
		j.releaseQuiet(ctx)
		_ = msg.NakWithDelay(time.Second)
		return
	}

	// The claim is one write of the record. A first claim creates it,
	// with the owner and origin the message's subject vouches for; a job
	// that has a record (a retry, a requeue, a stray copy) is read and
	// moved on by compare-and-set, which every other writer does too.
	spec.Origin = owner.Origin
	run := jobs.Run{Spec: spec, Owner: owner, State: jobs.StateRunning, Attempt: 1, Worker: w.cfg.Name, UpdatedAt: w.now().UTC()}
	rev, err := w.store.CreateRun(ctx, run)
	if errors.Is(err, jobs.ErrExists) {
		var ok bool
		run, rev, ok, err = w.claimExisting(ctx, j, queue, msg, owner)
		if !ok {
			return
		}
	}
	if err != nil {
		// Changed under us (cancel of a queued job, dlq retry): let the
		// message come back and decide again on fresh state.
		log.Info("claim: write job record, retrying claim", "err", err)
		j.releaseQuiet(ctx)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	j.spec = run.Spec
	j.attempt = run.Attempt
	j.run = run
	j.rev = rev
	// Every line about the job names it whole.
	j.log = log.With("attempt", j.attempt, "queue", j.spec.Queue, "backend", j.spec.Backend)
	j.log.Debug("job claimed", "spec", j.spec)
	// A plain ack is enough: the lease and the record are the claim. If
	// the ack is lost, a redelivered copy finds the lease or the record.
	_ = msg.Ack()
	w.m.JobsClaimed.WithLabelValues(queue, j.spec.Backend).Inc()
	w.store.PublishEvent(jobs.Event{Kind: "claimed", JobID: spec.ID, Attempt: j.attempt, State: jobs.StateRunning, Worker: w.cfg.Name, Time: w.now().UTC()})

	switch {
	case canceled:
		j.finish(ctx, j.result(jobs.StateCanceled, "canceled before it started"))
	case j.attempt > j.spec.MaxAttempts:
		// Attempts spent by earlier claims whose workers died.
		j.finish(ctx, j.result(jobs.StateDead, fmt.Sprintf("attempts spent (%d of %d): %s", j.attempt-1, j.spec.MaxAttempts, j.run.LastError)))
	default:
		j.execute(ctx, runCtx)
	}
}

// claimExisting claims a job that has a record: it reads it under the
// lease (nothing but another holder's stale write can move it now) and
// counts the attempt by compare-and-set. ok is false when the message was
// dealt with (dropped, refused, or sent back) and the claim is over.
func (w *Worker) claimExisting(ctx context.Context, j *job, queue string, msg jetstream.Msg, owner jobs.Owner) (jobs.Run, uint64, bool, error) {
	id := j.spec.ID
	run, rev, err := w.store.GetRun(ctx, id)
	if err != nil {
		return run, 0, true, err
	}
	switch {
	case run.OwnerString() != owner.String():
		// The ID is another owner's job: never run or touch it.
		j.releaseQuiet(ctx)
		w.rejectInvalid(ctx, queue, msg, &jobs.FieldError{Field: "id",
			Msg: fmt.Sprintf("%q is a job of another submitter; this one came from %s", id, owner)})
		return run, 0, false, nil
	case run.State.Terminal():
		// A copy of a job that has ended (a retry publish that raced, a
		// redelivery after a lost ack, a re-dispatch): its result
		// stands, and the copy is dropped.
		j.releaseQuiet(ctx)
		_ = msg.Ack()
		return run, 0, false, nil
	}
	if early := run.NextAttemptAt.Sub(w.now()); run.State == jobs.StateRetryWait && early > 0 {
		// A copy that came before its backoff ended (the reaper's
		// reschedule of a retry stuck behind a backlog, once the
		// duplicate window had passed): it waits for its time, so that
		// attempts never run back to back.
		j.releaseQuiet(ctx)
		_ = msg.NakWithDelay(early)
		return run, 0, false, nil
	}
	// Queued, waiting for its retry, or running under a holder that is
	// gone (we hold its lease): the next attempt.
	run.Attempt++
	run.State = jobs.StateRunning
	run.Worker = w.cfg.Name
	run.UpdatedAt = w.now().UTC()
	run.NextAttemptAt = time.Time{}
	rev, err = w.store.UpdateRun(ctx, run, rev)
	return run, rev, true, err
}

// decodeMessage turns a dispatch message into a spec and its owner (from
// the subject, which only that owner may publish to), or says why it is
// not a job.
func decodeMessage(ln lane, subject, scheduler string, data []byte) (jobs.Spec, jobs.Owner, error) {
	queue := ln.queue
	q, profile, owner, ok := jobs.ParseJobSubject(subject)
	if !ok || q != queue || profile != ln.profile {
		return jobs.Spec{}, jobs.Owner{}, &jobs.FieldError{Field: "subject", Msg: fmt.Sprintf("%q is not %s", subject, jobs.LaneSubject(queue, ln.profile, "ORIGIN.NAME"))}
	}
	if err := checkScheduler(scheduler, owner); err != nil {
		return jobs.Spec{}, jobs.Owner{}, err
	}
	spec, err := jobs.DecodeJSON(data)
	if err != nil {
		return jobs.Spec{}, jobs.Owner{}, err
	}
	if spec.ID == "" {
		return jobs.Spec{}, jobs.Owner{}, &jobs.FieldError{Field: "id", Msg: "is required on the wire (submit assigns one)"}
	}
	if spec.Queue != queue {
		return jobs.Spec{}, jobs.Owner{}, &jobs.FieldError{Field: "queue", Msg: fmt.Sprintf("is %q but the message was published to queue %q", spec.Queue, queue)}
	}
	if profile != "" && spec.WithDefaults().Backend != profile {
		return jobs.Spec{}, jobs.Owner{}, &jobs.FieldError{Field: "backend", Msg: fmt.Sprintf("is %q but the message was published to the lane of profile %q", spec.Backend, profile)}
	}
	if err := checkSealed(spec); err != nil {
		return jobs.Spec{}, jobs.Owner{}, err
	}
	return spec, owner, nil
}

// checkScheduler refuses a message the server published for a message
// schedule (Nats-Scheduler names the schedule's subject) unless whoever
// could publish the schedule could publish the job itself. The server
// publishes a schedule's message to its target subject without checking
// the publisher's permissions there, so a submitter could otherwise
// schedule a job onto another identity's subject and run under its
// origin. Delayed retries come from sandrun.jobs.delay.ID, which only
// workers may publish, to the subject of the job's own owner.
func checkScheduler(scheduler string, owner jobs.Owner) error {
	if scheduler == "" || jobs.IsDelaySubject(scheduler) {
		return nil
	}
	if _, _, from, ok := jobs.ParseJobSubject(scheduler); ok && from == owner {
		return nil
	}
	return &jobs.FieldError{Field: "subject", Msg: fmt.Sprintf("scheduled by %q, which may not publish jobs as %s", scheduler, owner)}
}

// rejectInvalid moves a message that is not a valid job to the DLQ, with
// the reason and the start of its body, and removes it from the queue.
func (w *Worker) rejectInvalid(ctx context.Context, queue string, msg jetstream.Msg, cause error) {
	reason := "invalid"
	if errors.Is(cause, jobs.ErrTooLarge) {
		reason = "too_large"
	}
	w.m.InvalidMessages.WithLabelValues(reason).Inc()
	data := msg.Data()
	raw := redactRawEnv(data)
	raw = raw[:min(len(raw), maxRawInDLQ)]
	id := jobs.NewID(w.now())
	if meta, err := msg.Metadata(); err == nil {
		id = fmt.Sprintf("invalid-%s-%d", queue, meta.Sequence.Stream)
	}
	entry := jobs.DLQEntry{
		JobID:   id,
		Queue:   queue,
		Reason:  "not a valid job: " + cause.Error(),
		Time:    w.now().UTC(),
		Raw:     toValidUTF8(raw),
		RawSize: len(data),
		Subject: msg.Subject(),
	}
	if err := w.store.PublishDLQ(ctx, entry); err != nil {
		w.log.Warn("dlq: publish invalid message", "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	w.log.Warn("invalid message moved to the DLQ", "dlq_id", id, "size", len(data), "reason", cause)
	w.endRefused(ctx, queue, msg, cause)
	_ = msg.DoubleAck(ctx)
}

// endRefused ends the job a refused message names, when it has no record
// yet, with a failed result that says why: its submitter's `--wait`
// returns instead of waiting forever on a job no worker will run (a spec
// a newer client wrote, one over the wire limit). Only the subject's own
// owner's ID is ended, and never for a message a schedule put on that
// subject: the owner did not publish it, and a record would squat the ID.
func (w *Worker) endRefused(ctx context.Context, queue string, msg jetstream.Msg, cause error) {
	q, _, owner, ok := jobs.ParseJobSubject(msg.Subject())
	if !ok || q != queue || msg.Headers().Get(jetstream.SchedulerHeader) != "" {
		return
	}
	var named struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(msg.Data(), &named) != nil || !jobs.ValidID(named.ID) {
		return
	}
	id := named.ID
	now := w.now().UTC()
	r := jobs.Result{JobID: id, Queue: queue, State: jobs.StateFailed, ExitCode: -1, Worker: w.cfg.Name,
		Error: "refused by worker " + w.cfg.Name + ", not a valid job: " + cause.Error(), FinishedAt: now}
	// One write that exists only if the ID has no record: an existing
	// record is its job's, valid or not, and is left alone.
	run := jobs.Run{Spec: jobs.Spec{ID: id, Queue: queue, Origin: owner.Origin}, Owner: owner,
		State: r.State, LastError: r.Error, UpdatedAt: now, Result: &r}
	if _, err := w.store.CreateRun(ctx, run); err != nil {
		if !errors.Is(err, jobs.ErrExists) {
			w.log.Warn("refused message: record its end", "job", id, "owner", owner.String(), "err", err)
		}
		return
	}
	code := r.ExitCode
	w.store.PublishEvent(jobs.Event{Kind: jobs.EventFinished, JobID: id, State: r.State, Worker: r.Worker, Time: now, Message: r.Error, ExitCode: &code})
}

func toValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("%q", b)
}

// redactRawEnv returns data with every env value replaced, when data is a
// JSON object with an env map: an invalid spec may still carry secrets,
// and which of them are secret cannot be trusted from an invalid spec.
func redactRawEnv(data []byte) []byte {
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return dropEnv(data)
	}
	var env map[string]json.RawMessage
	raw, ok := obj["env"]
	if !ok {
		return data
	}
	if json.Unmarshal(raw, &env) != nil {
		delete(obj, "env")
		out, _ := json.Marshal(obj)
		return out
	}
	for k := range env {
		env[k] = json.RawMessage(`"` + jobs.Redacted + `"`)
	}
	obj["env"], _ = json.Marshal(env)
	out, err := json.Marshal(obj)
	if err != nil {
		return data
	}
	return out
}

// dropEnv returns the bytes of a message that does not parse up to where
// an env part may begin: what follows may hold secret values, and which
// of them are secret cannot be read from it.
func dropEnv(data []byte) []byte {
	if i := bytes.Index(data, []byte(`"env"`)); i >= 0 {
		return append(data[:i:i], "…[env dropped: the message does not parse]"...)
	}
	if i := bytes.Index(data, []byte(`env`)); i >= 0 { // escaped quotes or keys
		return append(data[:i:i], "…[env dropped: the message does not parse]"...)
	}
	return data
}
