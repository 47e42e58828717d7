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
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// Client talks to one sandrun deployment through its JetStream layout. It
// is safe for concurrent use.
type Client struct {
	store *jobs.Store
	now   func() time.Time
	nc    *nats.Conn // owned when made by Connect
	// owner is the identity's ORIGIN.NAME that submissions are published
	// under; the server refuses any other (jobs.JobSubject).
	owner string
	seal  *sealKey
	// onRecord, when set (tests), is called with each record a walk of
	// the jobstate stream reads, before it is handled.
	onRecord func(seq uint64)
}

// Options say how to reach a deployment's NATS. Empty fields are filled
// as the CLI fills them: from the context named by Context or
// $SANDRUN_CONTEXT; else from SANDRUN_NATS_URL, SANDRUN_NATS_CREDS,
// SANDRUN_NATS_TLS_CERT, SANDRUN_NATS_TLS_KEY and SANDRUN_NATS_TLS_CA;
// else from the current context (`sandrun context use`, or the one
// `sandrun dev` saved); else the URL of `sandrun dev`
// (nats://127.0.0.1:4222).
type Options struct {
	URL       string // comma-separated seed URLs
	CredsFile string // NATS credentials (JWT + nkey seed)
	TLSCert   string // client certificate (mutual TLS)
	TLSKey    string
	TLSCA     string // CA to verify the server
	// Name is the connection name shown in the server's monitoring
	// (default "sandrun-client").
	Name string
	// Context names a saved context (`sandrun context ls`).
	Context string
}

// Connect dials NATS and opens the deployment's JetStream layout. Close
// the client when done.
func Connect(ctx context.Context, o Options) (*Client, error) {
	if o.Name == "" {
		o.Name = "sandrun-client"
	}
	cc, _, err := natsutil.ConnConfig{URL: o.URL, CredsFile: o.CredsFile,
		TLSCert: o.TLSCert, TLSKey: o.TLSKey, TLSCA: o.TLSCA, Name: o.Name, Context: o.Context}.Resolve()
	if err != nil {
		return nil, err
	}
	owner := jobs.AnonymousOwner
	if cc.CredsFile != "" {
		data, err := os.ReadFile(cc.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("nats.creds: %w", err)
		}
		id, err := auth.IdentityOf(data)
		if err != nil {
			return nil, fmt.Errorf("nats.creds %s: %w", cc.CredsFile, err)
		}
		owner = id.Owner()
	}
	nc, js, err := natsutil.Connect(ctx, cc, nil)
	if err != nil {
		return nil, err
	}
	st, err := jobs.OpenLayout(ctx, js, nc.ConnectedServerVersion())
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := New(st).As(owner)
	c.nc = nc
	return c, nil
}

// New returns a client over an open store (for code that already holds
// sandrun's layout, such as the scheduler). It submits as
// jobs.AnonymousOwner until As names another owner.
func New(store *jobs.Store) *Client {
	return &Client{store: store, now: time.Now, owner: jobs.AnonymousOwner, seal: &sealKey{}}
}

// As returns a copy of c that submits as owner (ORIGIN.NAME). The server
// lets a connection publish only under its own identity's owner.
func (c *Client) As(owner string) *Client {
	cc := *c
	cc.owner = owner
	return &cc
}

// Owner is the ORIGIN.NAME c submits as.
func (c *Client) Owner() string { return c.owner }

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

// Submit validates spec, assigns its ID if empty and publishes it under
// the client's owner. An invalid spec is rejected before anything is
// written. The job record appears when a worker claims the job (until
// then Status reports jobs.ErrNotFound); a spec whose ID was submitted
// before (within the deduplication window) is ErrExists.
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
	spec, err := c.Seal(ctx, spec)
	if err != nil {
		return jobs.Spec{}, err
	}
	if err := spec.Validate(); err != nil { // sealed values are longer
		return jobs.Spec{}, err
	}
	if err := c.store.SubmitPipelined(ctx, spec, c.owner, spec.ID); err != nil {
		if errors.Is(err, jobs.ErrExists) {
			return jobs.Spec{}, err
		}
		return jobs.Spec{}, fmt.Errorf("publish %s: %w", spec.ID, err)
	}
	if spec.Workspace != "" {
		// The job's place in its workspace's order, written once the job
		// is in the queue: a place with no job behind it would hold the
		// workspace up.
		key := jobs.WorkspaceQueueKey(c.owner, spec.Workspace, spec.SubmittedAt, spec.ID)
		if _, err := c.store.State.Put(ctx, key, []byte(spec.ID)); err != nil {
			return spec, fmt.Errorf("job %s submitted, but its place in workspace %s was not recorded (it runs after the jobs recorded before it finish): %w", spec.ID, spec.Workspace, err)
		}
	}
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
	if errors.Is(err, jobs.ErrNotFound) {
		if at, ok := c.store.Expired(ctx, id); ok {
			return Status{}, fmt.Errorf("%s: %w at %s", id, jobs.ErrExpired, at.UTC().Format(time.RFC3339))
		}
	}
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
	CancelRequested CancelOutcome = "requested" // a worker will stop the job, or end it before it starts
	CancelTooLate   CancelOutcome = "too_late"  // the job had already ended
)

// Cancel asks for job id to be canceled. The request is a key only its
// owner may write; workers act on it: a running job's worker stops the
// workload, and a job not running is ended as canceled by the next worker
// that sees the request (or claims the job). Wait for the result to know
// when it took effect.
func (c *Client) Cancel(ctx context.Context, id string) (CancelOutcome, error) {
	owner := c.owner
	run, _, err := c.store.GetRun(ctx, id)
	switch {
	case err == nil:
		if run.State.Terminal() {
			return CancelTooLate, nil
		}
		owner = run.OwnerString()
	case !errors.Is(err, jobs.ErrNotFound):
		return "", err
	}
	if err := c.store.RequestCancel(ctx, owner, id); err != nil {
		return "", err
	}
	return CancelRequested, nil
}
