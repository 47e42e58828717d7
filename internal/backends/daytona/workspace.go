package daytona

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// WorkspaceDir is where a job's workspace is mounted in its sandbox.
const WorkspaceDir = "/workspace"

// workspacePrefix starts the names of workspace volumes.
const workspacePrefix = "sandrun-ws-"

// deletedSuffix ends the name the API gives a volume once it is deleted
// (NAME becomes NAME-deleted, and NAME is free again). A live volume
// named like that would collide with it, so such a name gets a "." more
// (which no workspace or deployment name has: the mapping stays one to
// one).
const deletedSuffix = "-deleted"

// workspaceWord is what a deployment's or workspace's name is made of:
// one path segment of the volume's URL, without ".".
var workspaceWord = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// volumeName is the name of the volume that holds workspace name of
// deployment: sandrun-ws-DEPLOYMENT-NAME, as docker names its volumes.
func volumeName(deployment, name string) (string, error) {
	if !workspaceWord.MatchString(name) || deployment != "" && !workspaceWord.MatchString(deployment) {
		return "", fmt.Errorf("daytona: workspace %q of deployment %q: not a name (want [A-Za-z0-9_-]): %w", name, deployment, backends.ErrPermanent)
	}
	v := workspacePrefix + deployment + "-" + name
	if strings.HasSuffix(v, deletedSuffix) {
		v += "."
	}
	return v, nil
}

// Timeouts of the waits for a volume, as context causes.
var (
	errVolumeNotReady = errors.New("volume not ready within start_timeout")
	errVolumeNotGone  = errors.New("volume not deleted within start_timeout")
)

// volumeWait polls a volume, within start_timeout: each call waits a
// little longer (100ms, growing by half up to 1s).
type volumeWait struct {
	ctx     context.Context
	timeout error
	limit   time.Duration
	next    time.Duration
}

// newVolumeWait bounds ctx by start_timeout, with cause timeout.
func (b *Backend) newVolumeWait(ctx context.Context, timeout error) (*volumeWait, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(ctx, b.cfg.StartTimeout, timeout)
	return &volumeWait{ctx: ctx, timeout: timeout, limit: b.cfg.StartTimeout, next: 100 * time.Millisecond}, cancel
}

// pause waits before the next poll; it fails once the wait is over.
func (w *volumeWait) pause(name, state string) error {
	t := time.NewTimer(w.next)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return w.ended(name, state)
	case <-t.C:
	}
	w.next = min(w.next*3/2, time.Second)
	return nil
}

// ended words the end of a wait whose context is done: start_timeout
// passed (unavailable: retried later), or the job's context ended.
func (w *volumeWait) ended(name, state string) error {
	if errors.Is(context.Cause(w.ctx), w.timeout) {
		return fmt.Errorf("volume %s: %w (%s, state %q): %w", name, w.timeout, w.limit, state, backends.ErrUnavailable)
	}
	return context.Cause(w.ctx)
}

// failed words a failed call on volume name.
func (w *volumeWait) failed(name, state string, err error) error {
	if w.ctx.Err() != nil {
		return w.ended(name, state)
	}
	if httpsandbox.HasStatus(err, http.StatusForbidden) {
		return fmt.Errorf("volume %s: %w (workspaces need an API key with the read:volumes, write:volumes and delete:volumes permissions)", name, err)
	}
	return fmt.Errorf("volume %s: %w", name, err)
}

// ensureVolume returns spec's workspace volume once it is ready, made
// (POST /volumes) if there is none. A volume still being deleted (the
// workspace was removed) is waited out, then made anew. A volume in
// state error is a permanent error: nothing repairs it but removing the
// workspace.
func (b *Backend) ensureVolume(ctx context.Context, spec backends.Spec) (volume, error) {
	name, err := volumeName(spec.Deployment, spec.Workspace)
	if err != nil {
		return volume{}, err
	}
	w, cancel := b.newVolumeWait(ctx, errVolumeNotReady)
	defer cancel()
	var refused error // A create the API refused (400): it exists, or the name is refused.
	for {
		v, err := b.api.volumeByName(w.ctx, name)
		if httpsandbox.HasStatus(err, http.StatusNotFound) {
			if refused != nil {
				return v, fmt.Errorf("volume %s: %w: %w", name, refused, backends.ErrPermanent)
			}
			v, err = b.api.createVolume(w.ctx, name)
			if httpsandbox.HasStatus(err, http.StatusBadRequest) {
				refused, err = err, nil // Made meanwhile? The next read tells.
			}
		}
		if err != nil {
			return v, w.failed(name, v.State, err)
		}
		switch v.State {
		case volumeReady:
			return v, nil
		case volumeError:
			return v, fmt.Errorf("volume %s is in state error: %s (removing the workspace deletes it): %w", name, v.reason(), backends.ErrPermanent)
		}
		// pending_create or creating; pending_delete or deleting, and then
		// it is made anew.
		if err := w.pause(name, v.State); err != nil {
			return v, err
		}
	}
}

// RemoveWorkspace implements backends.WorkspaceRemover: it deletes the
// workspace's volume (DELETE /volumes/{id}) and waits, within
// start_timeout, until the API has deleted it. There being none is not an
// error. A volume still mounted by a sandbox (409), or whose deletion
// failed (state error), is a retryable error.
func (b *Backend) RemoveWorkspace(ctx context.Context, deployment, name string) error {
	vname, err := volumeName(deployment, name)
	if err != nil {
		return err
	}
	w, cancel := b.newVolumeWait(ctx, errVolumeNotGone)
	defer cancel()
	asked := false
	for {
		v, err := b.api.volumeByName(w.ctx, vname)
		switch {
		case httpsandbox.HasStatus(err, http.StatusNotFound):
			return nil
		case err != nil:
			return fmt.Errorf("daytona: remove workspace %s: %w", name, w.failed(vname, "", err))
		}
		switch v.State {
		case volumeDeleted:
			return nil
		case volumeError:
			if asked {
				return fmt.Errorf("daytona: remove workspace %s: deleting volume %s failed: %s: %w", name, vname, v.reason(), backends.ErrUnavailable)
			}
			fallthrough
		case volumeReady:
			err := b.api.deleteVolume(w.ctx, v.ID)
			switch {
			case err == nil, httpsandbox.HasStatus(err, http.StatusNotFound):
				asked = true
			case httpsandbox.HasStatus(err, http.StatusConflict):
				return fmt.Errorf("daytona: remove workspace %s: volume %s is still mounted by a sandbox: %w: %w", name, vname, err, backends.ErrUnavailable)
			case httpsandbox.HasStatus(err, http.StatusBadRequest):
				// Its state changed meanwhile: read it again.
			default:
				return fmt.Errorf("daytona: remove workspace %s: %w", name, w.failed(vname, v.State, err))
			}
		}
		// Being made (then deleted), or being deleted.
		if err := w.pause(vname, v.State); err != nil {
			return fmt.Errorf("daytona: remove workspace %s: %w", name, err)
		}
	}
}
