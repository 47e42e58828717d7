// Package client is the Go API for submitting and following sandrun jobs:
// submit one job or a batch, wait for results (with a callback per
// finished batch item), stream output, cancel. The sandrun CLI is built on
// it; agents that fan work out to subagents use it directly:
//
//	c, err := client.Connect(ctx, client.Options{URL: "nats://127.0.0.1:4222"})
//	...
//	defer c.Close()
//	sub, err := c.SubmitBatch(ctx, client.BatchOptions{ID: "eval-42"}, specs)
//	err = c.WaitBatch(ctx, "eval-42", func(it client.BatchItem) { ... })
//
// See examples/fanout for a complete program.
package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// Client talks to one sandrun deployment through its JetStream layout. It
// is safe for concurrent use.
type Client struct {
	store *jobs.Store
	now   func() time.Time
	nc    *nats.Conn // owned when made by Connect
}

// Options say how to reach a deployment's NATS. Empty fields fall back to
// SANDRUN_NATS_URL, SANDRUN_NATS_CREDS, SANDRUN_NATS_TLS_CERT,
// SANDRUN_NATS_TLS_KEY and SANDRUN_NATS_TLS_CA, and the URL to the
// embedded server of `sandrun dev` (nats://127.0.0.1:4222).
type Options struct {
	URL       string // comma-separated seed URLs
	CredsFile string // NATS credentials (JWT + nkey seed)
	TLSCert   string // client certificate (mutual TLS)
	TLSKey    string
	TLSCA     string // CA to verify the server
	// Name is the connection name shown in the server's monitoring
	// (default "sandrun-client").
	Name string
}

// Connect dials NATS and opens the deployment's JetStream layout. Close
// the client when done.
func Connect(ctx context.Context, o Options) (*Client, error) {
	if o.Name == "" {
		o.Name = "sandrun-client"
	}
	nc, js, err := natsutil.Connect(ctx, natsutil.ConnConfig{URL: o.URL, CredsFile: o.CredsFile,
		TLSCert: o.TLSCert, TLSKey: o.TLSKey, TLSCA: o.TLSCA, Name: o.Name}.FromEnv(), nil)
	if err != nil {
		return nil, err
	}
	st, err := jobs.OpenLayout(ctx, js, nc.ConnectedServerVersion())
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := New(st)
	c.nc = nc
	return c, nil
}

// New returns a client over an open store (for code that already holds
// sandrun's layout, such as the scheduler).
func New(store *jobs.Store) *Client {
	return &Client{store: store, now: time.Now}
}

// Close waits (up to 5s) for asynchronous publishes to be acknowledged and
// closes the connection Connect opened. It does nothing for a client made
// by New.
func (c *Client) Close() {
	if c.nc == nil {
		return
	}
	select {
	case <-c.store.JS.PublishAsyncComplete():
	case <-time.After(5 * time.Second):
	}
	c.nc.Close()
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
