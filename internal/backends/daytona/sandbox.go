package daytona

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// Labels on every sandbox sandrun creates: they tie it to its job attempt
// for orphan reaping.
const (
	LabelManaged    = "io.sandrun.managed"
	LabelDeployment = "io.sandrun.deployment"
	LabelJob        = "io.sandrun.job"
	LabelAttempt    = "io.sandrun.attempt"
	LabelWorker     = "io.sandrun.worker"
)

// cleanupTimeout bounds deleting a sandbox after its job.
const cleanupTimeout = time.Minute

// labels returns the labels of spec's sandbox.
func labels(spec backends.Spec) map[string]string {
	return httpsandbox.LabelKeys{Managed: LabelManaged, Deployment: LabelDeployment, Job: LabelJob,
		Attempt: LabelAttempt, Worker: LabelWorker}.Of(spec)
}

// createBody is the CreateSandbox for j: from the job's or the profile's
// image (with the resources), else from the profile's snapshot; with the
// workspace's volume vol, if any, mounted at WorkspaceDir.
func (b *Backend) createBody(j job, vol *volume) createSandbox {
	body := createSandbox{
		Labels:           labels(j.spec),
		Target:           b.cfg.Target,
		NetworkBlockAll:  b.cfg.NetworkBlockAll,
		AutoStopInterval: b.cfg.autoStop,
	}
	if vol != nil {
		body.Volumes = []sandboxVolume{{VolumeID: vol.ID, MountPath: WorkspaceDir}}
	}
	image := b.cfg.Image
	if c := j.spec.Container; c != nil && c.Image != "" {
		image = c.Image
	}
	if image == "" {
		body.Snapshot = b.cfg.Snapshot
		return body
	}
	body.BuildInfo = &createBuildInfo{DockerfileContent: "FROM " + image + "\n"}
	body.CPU, body.Memory, body.Disk = b.cfg.CPU, b.cfg.MemoryGB, b.cfg.DiskGB
	return body
}

// start creates j's sandbox, with the workspace's volume vol if any, and
// waits until it has started. A sandbox it created is deleted again when
// it fails.
func (b *Backend) start(ctx context.Context, j job, vol *volume) (sandbox, error) {
	sb, err := b.api.create(ctx, b.createBody(j, vol))
	if err != nil {
		if httpsandbox.HasStatus(err, http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity) {
			what := "image or snapshot?"
			if vol != nil {
				what = "image, snapshot or workspace volume?"
			}
			err = fmt.Errorf("%w (%s): %w", err, what, backends.ErrPermanent)
		}
		return sb, err
	}
	if err := b.waitStarted(ctx, &sb); err != nil {
		b.remove(ctx, sb.ID)
		return sb, err
	}
	return sb, nil
}

// errStartTimeout ends a wait for a sandbox that is too slow to start.
var errStartTimeout = errors.New("sandbox not started within start_timeout")

// waitStarted polls sb until it is started (100ms, growing by half up
// to 1s), within StartTimeout.
func (b *Backend) waitStarted(ctx context.Context, sb *sandbox) error {
	ctx, cancel := context.WithTimeoutCause(ctx, b.cfg.StartTimeout, errStartTimeout)
	defer cancel()
	ended := func() error { // ctx is done: the job's, or the start's time is up.
		if errors.Is(context.Cause(ctx), errStartTimeout) {
			return fmt.Errorf("sandbox %s: %w (%s, state %s): %w", sb.ID, errStartTimeout, b.cfg.StartTimeout, sb.State, backends.ErrUnavailable)
		}
		return context.Cause(ctx)
	}
	wait := 100 * time.Millisecond
	for {
		switch sb.State {
		case stateStarted:
			return nil
		case stateBuildFailed:
			return fmt.Errorf("sandbox %s: build failed: %s: %w", sb.ID, sb.ErrorReason, backends.ErrPermanent)
		case stateError:
			if sb.Recoverable {
				return fmt.Errorf("sandbox %s: %s: %w", sb.ID, sb.ErrorReason, backends.ErrUnavailable)
			}
			return fmt.Errorf("sandbox %s: %s: %w", sb.ID, sb.ErrorReason, backends.ErrPermanent)
		case stateDestroyed, stateDestroying:
			return fmt.Errorf("sandbox %s was deleted while starting", sb.ID)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ended()
		case <-t.C:
		}
		wait = min(wait*3/2, time.Second)
		got, err := b.api.get(ctx, sb.ID)
		if err != nil && ctx.Err() != nil {
			return ended()
		}
		if err != nil {
			return err
		}
		*sb = got
	}
}

// remove deletes sandbox id once its job is over, on a budget of its own
// (ctx may be done). A failure is logged: the orphan reaper, or the
// sandbox's auto-stop, will get it.
func (b *Backend) remove(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := b.api.remove(ctx, id); err != nil {
		b.cfg.Logger.Warn("daytona: sandbox not deleted; the orphan reaper or its auto-stop will end it",
			"sandbox", id, "err", err)
	}
}
