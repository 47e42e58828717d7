// Package client is the Go API for submitting and following sandrun jobs.
// The CLI is built on it; agents that fan work out use it directly.
package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// Client talks to one sandrun deployment through its JetStream layout.
type Client struct {
	store *jobs.Store
	now   func() time.Time
}

// New returns a client over store.
func New(store *jobs.Store) *Client {
	return &Client{store: store, now: time.Now}
}

// Store returns the underlying store.
func (c *Client) Store() *jobs.Store { return c.store }

// Submit validates spec, assigns its ID if empty, records it as queued and
// publishes it. An invalid spec is rejected before anything is written; a
// failed publish removes the record again, so nothing is half-submitted.
func (c *Client) Submit(ctx context.Context, spec jobs.Spec) (jobs.Spec, error) {
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return jobs.Spec{}, err
	}
	now := c.now().UTC()
	if spec.ID == "" {
		spec.ID = jobs.NewID(now)
	}
	if spec.SubmittedAt.IsZero() {
		spec.SubmittedAt = now
	}
	if _, err := c.store.CreateRun(ctx, jobs.Run{Spec: spec, State: jobs.StateQueued, UpdatedAt: now}); err != nil {
		return jobs.Spec{}, err
	}
	if err := c.store.PublishJob(ctx, spec, spec.ID); err != nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.store.DeleteRun(uctx, spec.ID)
		return jobs.Spec{}, fmt.Errorf("publish %s: %w", spec.ID, err)
	}
	c.store.PublishEvent(jobs.Event{Kind: "submitted", JobID: spec.ID, State: jobs.StateQueued, Time: now})
	return spec, nil
}

// Status is a job's record and, once it ended, its result.
type Status struct {
	Run    jobs.Run     `json:"run"`
	Result *jobs.Result `json:"result,omitempty"`
}

// State returns the job's current state, preferring the committed result.
func (s Status) State() jobs.State {
	if s.Result != nil {
		return s.Result.State
	}
	return s.Run.State
}

// Status returns the job's record (secrets redacted) and result.
func (c *Client) Status(ctx context.Context, id string) (Status, error) {
	run, _, err := c.store.GetRun(ctx, id)
	if err != nil {
		return Status{}, err
	}
	run.Spec = run.Spec.Redacted()
	st := Status{Run: run}
	res, err := c.store.GetResult(ctx, id)
	switch {
	case err == nil:
		st.Result = &res
	case !errors.Is(err, jobs.ErrNotFound):
		return Status{}, err
	}
	return st, nil
}

// CancelOutcome says what Cancel did.
type CancelOutcome string

// Cancel outcomes.
const (
	CancelDone      CancelOutcome = "canceled"  // the job was not running; it is now canceled
	CancelRequested CancelOutcome = "requested" // the job is running; its worker will stop it
	CancelTooLate   CancelOutcome = "too_late"  // the job had already ended
)

// Cancel cancels a job. A job that is not running is canceled at once
// (under its lease, so no worker can claim it meanwhile); a running job's
// worker sees the request and stops the workload.
func (c *Client) Cancel(ctx context.Context, id string) (CancelOutcome, error) {
	// Flag the record first (CAS): a worker claiming the job reads the
	// flag in the same record it must update, so a claim and a cancel
	// cannot pass each other unseen. Then tell a running worker.
	for {
		run, rev, err := c.store.GetRun(ctx, id)
		if err != nil {
			return "", err
		}
		if run.State.Terminal() {
			return CancelTooLate, nil
		}
		if run.CancelRequested {
			break
		}
		run.CancelRequested = true
		if _, err := c.store.UpdateRun(ctx, run, rev); err == nil {
			break
		} else if !errors.Is(err, jobs.ErrConflict) {
			return "", err
		}
	}
	if err := c.store.RequestCancel(ctx, id); err != nil {
		return "", err
	}
	l, err := lease.Acquire(ctx, c.store.JS, c.store.State, jobs.LeaseKey(id), 30*time.Second, []byte(`{"canceler":true}`))
	if errors.Is(err, lease.ErrHeld) {
		return CancelRequested, nil
	}
	if err != nil {
		return "", err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = l.Release(rctx)
	}()
	run, _, err := c.store.GetRun(ctx, id)
	if err != nil {
		return "", err
	}
	if run.State.Terminal() {
		return CancelTooLate, nil
	}
	now := c.now().UTC()
	r := jobs.Result{JobID: id, Queue: run.Spec.Queue, Backend: run.Spec.Backend, State: jobs.StateCanceled,
		Attempt: run.Attempt, ExitCode: -1, Error: "canceled while " + string(run.State), FinishedAt: now}
	if err := l.Fenced(func(rev uint64) error { return c.store.CommitResult(ctx, r, rev) }); err != nil {
		return "", err
	}
	run.State = jobs.StateCanceled
	run.UpdatedAt = now
	run.NextAttemptAt = time.Time{}
	if err := l.Fenced(func(rev uint64) error { return c.store.PutRunFenced(ctx, run, rev) }); err != nil {
		return "", err
	}
	code := -1
	c.store.PublishEvent(jobs.Event{Kind: jobs.EventFinished, JobID: id, Attempt: run.Attempt, State: jobs.StateCanceled, Time: now, ExitCode: &code, Message: r.Error})
	return CancelDone, nil
}
