package vercel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// Tags on every sandbox sandrun creates (the API allows five): they tie
// it to its job attempt for orphan reaping.
const (
	TagManaged    = "sandrun-managed"
	TagDeployment = "sandrun-deployment"
	TagJob        = "sandrun-job"
	TagAttempt    = "sandrun-attempt"
	TagWorker     = "sandrun-worker"
)

// timeoutMargin is added to a job's remaining deadline and grace to make
// its sandbox's timeout; cleanupTimeout bounds removing a sandbox.
const (
	timeoutMargin  = time.Minute
	cleanupTimeout = time.Minute
)

// tags returns the tags of spec's sandbox.
func tags(spec backends.Spec) map[string]string {
	return httpsandbox.LabelKeys{Managed: TagManaged, Deployment: TagDeployment, Job: TagJob,
		Attempt: TagAttempt, Worker: TagWorker}.Of(spec)
}

// createRequest is the create request for j: a fresh name (the tags say
// whose it is), and a timeout that outlasts the job's deadline a little.
func (b *Backend) createRequest(ctx context.Context, j job) createSandboxRequest {
	timeout := b.cfg.SandboxTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl)+j.spec.Grace()+timeoutMargin)
	}
	name := make([]byte, 10)
	_, _ = rand.Read(name)
	return createSandboxRequest{
		ProjectID:     b.api.creds.project,
		Name:          "sandrun-" + hex.EncodeToString(name),
		Runtime:       b.cfg.Runtime,
		Resources:     resources{VCPUs: b.cfg.VCPUs},
		Timeout:       timeout.Milliseconds(),
		Tags:          tags(j.spec),
		NetworkPolicy: networkPolicy{Mode: b.cfg.NetworkPolicy},
	}
}

// start creates j's sandbox and waits until its session runs. A sandbox
// it created is removed again when it fails.
func (b *Backend) start(ctx context.Context, j job) (namedSandbox, session, error) {
	sb, ses, err := b.api.create(ctx, b.createRequest(ctx, j))
	if err != nil {
		if httpsandbox.HasStatus(err, http.StatusBadRequest, http.StatusPaymentRequired, http.StatusNotFound, http.StatusUnprocessableEntity) {
			err = fmt.Errorf("%w: %w", err, backends.ErrPermanent)
		}
		return sb, ses, err
	}
	if err := b.waitRunning(ctx, &ses); err != nil {
		b.remove(ctx, sb.Name, ses.ID)
		return sb, ses, err
	}
	return sb, ses, nil
}

// errStartTimeout ends a wait for a sandbox that is too slow to start.
var errStartTimeout = errors.New("sandbox not running within start_timeout")

// waitRunning polls ses until it runs (100ms, growing by half up to 1s),
// within StartTimeout.
func (b *Backend) waitRunning(ctx context.Context, ses *session) error {
	ctx, cancel := context.WithTimeoutCause(ctx, b.cfg.StartTimeout, errStartTimeout)
	defer cancel()
	ended := func() error { // ctx is done: the job's, or the start's time is up.
		if errors.Is(context.Cause(ctx), errStartTimeout) {
			return fmt.Errorf("session %s: %w (%s, status %s): %w", ses.ID, errStartTimeout, b.cfg.StartTimeout, ses.Status, backends.ErrUnavailable)
		}
		return context.Cause(ctx)
	}
	wait := 100 * time.Millisecond
	for {
		switch ses.Status {
		case statusRunning:
			return nil
		case statusFailed, statusAborted, statusStopped:
			return fmt.Errorf("session %s is %s: %w", ses.ID, ses.Status, backends.ErrUnavailable)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ended()
		case <-t.C:
		}
		wait = min(wait*3/2, time.Second)
		got, err := b.api.session(ctx, ses.ID)
		if err != nil && ctx.Err() != nil {
			return ended()
		}
		if err != nil {
			return err
		}
		*ses = got
	}
}

// remove stops a sandbox's session and deletes the sandbox once its job
// is over, on a budget of its own (ctx may be done). A failure is logged:
// the orphan reaper, or the sandbox's timeout, will end it.
func (b *Backend) remove(ctx context.Context, name, sid string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := errors.Join(b.api.stopSession(ctx, sid), b.api.remove(ctx, name)); err != nil {
		b.cfg.Logger.Warn("vercel: sandbox not removed; the orphan reaper or its timeout will end it", "sandbox", name, "err", err)
	}
}
