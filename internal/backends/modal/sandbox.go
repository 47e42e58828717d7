package modal

import (
	"context"
	"fmt"
	"strconv"
	"time"

	modal "github.com/modal-labs/modal-client/go"

	"github.com/sandrun/sandrun/internal/backends"
)

// Tags on every sandbox this backend creates, for finding orphans.
const (
	TagManaged    = "sandrun-managed" // "true"
	TagDeployment = "sandrun-deployment"
	TagJob        = "sandrun-job"
	TagAttempt    = "sandrun-attempt"
	TagWorker     = "sandrun-worker"
	// TagSession holds a session sandbox's key, TagUsed the Unix time its
	// last job started; TagJob and TagAttempt name that job.
	TagSession = "sandrun-session"
	TagUsed    = "sandrun-used"
)

const (
	// createTimeout bounds a sandbox's creation (scheduling included).
	createTimeout = 5 * time.Minute
	// stopMargin is added to a job's deadline and kill grace for a job
	// sandbox's own timeout: time to stop the job and read its output.
	stopMargin = 30 * time.Second
	// rpcTimeout bounds a short call (terminate, tags) made after the
	// job's context is done.
	rpcTimeout = 30 * time.Second
)

// tags are the tags of spec's sandbox or, with session set, of its
// session's sandbox as its latest job leaves it. Empty values are left out.
func tags(spec backends.Spec, session bool) map[string]string {
	t := map[string]string{TagManaged: "true", TagAttempt: strconv.Itoa(spec.Attempt)}
	for k, v := range map[string]string{TagDeployment: spec.Deployment, TagJob: spec.JobID, TagWorker: spec.Worker} {
		if v != "" {
			t[k] = v
		}
	}
	if session {
		t[TagSession] = spec.Session
		t[TagUsed] = strconv.FormatInt(time.Now().Unix(), 10)
	}
	return t
}

// createParams is the sandbox for spec: the profile's resources (request
// and hard limit alike), network and workdir, and a timeout. A job
// sandbox lives as long as the job's deadline allows, plus its kill grace
// and stopMargin, within SandboxTimeout; a session sandbox gets
// SandboxTimeout and goes after SessionIdle without a job.
func (b *Backend) createParams(ctx context.Context, spec backends.Spec) *modal.SandboxCreateParams {
	session := spec.Session != ""
	life := b.cfg.SandboxTimeout
	if dl, ok := ctx.Deadline(); ok && !session {
		life = min(life, time.Until(dl)+spec.Grace()+stopMargin)
	}
	p := &modal.SandboxCreateParams{
		CPU:            b.cfg.CPU,
		CPULimit:       b.cfg.CPU,
		MemoryMiB:      b.cfg.MemoryMiB,
		MemoryLimitMiB: b.cfg.MemoryMiB,
		Timeout:        wholeSeconds(life),
		Workdir:        b.cfg.Workdir,
		Regions:        b.cfg.Regions,
		Tags:           tags(spec, session),
	}
	if session {
		p.IdleTimeout = wholeSeconds(b.cfg.SessionIdle)
	}
	switch b.cfg.Network {
	case NetworkBlocked:
		p.BlockNetwork = true
	case NetworkAllowlist:
		p.OutboundCIDRAllowlist = &modal.Allowlist{Entries: b.cfg.AllowedCIDRs}
	}
	return p
}

// wholeSeconds rounds d up to whole seconds, at least one, as Modal takes
// timeouts.
func wholeSeconds(d time.Duration) time.Duration {
	return max(time.Second, (d + time.Second - 1).Truncate(time.Second))
}

// create makes a sandbox. It returns as soon as ctx is done; a creation
// still under way then goes on in the background, and the sandbox it
// makes is terminated, so that none is left behind untracked.
func (b *Backend) create(ctx context.Context, c *conn, img *modal.Image, params *modal.SandboxCreateParams) (*modal.Sandbox, error) {
	type created struct {
		sb  *modal.Sandbox
		err error
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errClosed
	}
	b.background.Add(1) // Under mu: Close waits only once no more can start.
	b.mu.Unlock()
	got, abandoned := make(chan created), make(chan struct{})
	go func() {
		defer b.background.Done()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
		defer cancel()
		sb, err := c.sdk.Sandboxes.Create(cctx, c.app, img, params)
		select {
		case got <- created{sb, err}:
		case <-abandoned:
			if err == nil {
				b.terminate(ctx, sb)
				_ = sb.Detach()
			}
		}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			return nil, classify("create sandbox", r.err)
		}
		return r.sb, nil
	case <-ctx.Done():
		close(abandoned)
		return nil, fmt.Errorf("modal: not started: %w", context.Cause(ctx))
	}
}

// terminate ends sb, whatever ctx says. Output already produced can
// still be read; Detach lets go of the connection once that is done. A
// failure is only logged: the sandbox's tags let the reaper find it.
func (b *Backend) terminate(ctx context.Context, sb *modal.Sandbox) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rpcTimeout)
	defer cancel()
	if _, err := sb.Terminate(tctx, nil); err != nil {
		b.cfg.Logger.Warn("modal: terminate sandbox", "sandbox", sb.SandboxID, "err", err)
	}
}
