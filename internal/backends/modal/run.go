package modal

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
)

// maxArgBytes is the SDK's limit on an exec's argument bytes.
const maxArgBytes = 1 << 16

// Run implements backends.Backend: it runs spec in its own sandbox, or in
// its session's, and copies the output to out as it is produced (a nil
// writer discards).
//
// The error is nil when the command ran to completion, whatever its exit
// code. It wraps context.Cause(ctx) when ctx ended the run or was done
// before it started; backends.ErrPermanent when Modal cannot run the spec
// or the profile (an invalid env name, a relative Dir without a workspace,
// a bad image); and backends.ErrUnavailable when Modal or the credentials
// fail. A failing writer does not stop the job: its output is discarded
// from then on and the write error returned once the command has ended.
//
// With spec.Workspace, the workspace's volume is mounted at WorkspaceDir
// (see mountWorkspace) and Run returns only once the job's sandbox has
// ended, when Modal has written the job's changes back to the volume.
func (b *Backend) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	if ctx.Err() != nil {
		return res, notStarted(ctx)
	}
	if err := b.checkSpec(spec); err != nil {
		return res, err
	}
	c, err := b.connect(ctx)
	if err != nil {
		if !errors.Is(err, backends.ErrPermanent) && !errors.Is(err, backends.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", err, backends.ErrUnavailable)
		}
		return res, failed(ctx, err)
	}
	img, err := c.builtImage(ctx, b.cfg.Image)
	if err != nil {
		return res, failed(ctx, err)
	}
	w, err := b.acquire(ctx, c, img, spec)
	if err != nil {
		return res, failed(ctx, err)
	}
	defer w.release()
	if ctx.Err() != nil {
		w.unused(ctx)
		return res, notStarted(ctx)
	}
	return b.execute(ctx, w, spec, out)
}

// checkSpec refuses, as permanent, what Modal cannot run.
func (b *Backend) checkSpec(spec backends.Spec) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("modal: %s: %w", fmt.Sprintf(format, args...), backends.ErrPermanent)
	}
	if spec.Dir != "" && !path.IsAbs(spec.Dir) && spec.Workspace == "" {
		return bad("dir %q: must be absolute (or relative to a workspace)", spec.Dir)
	}
	if spec.Workspace != "" && spec.Session != "" {
		return bad("workspace %q and session %q: cannot be combined", spec.Workspace, spec.Session)
	}
	for k, v := range spec.Env {
		if !envNameRE.MatchString(k) {
			return bad("env %q: Modal takes only letters, digits and '_', not starting with a digit", k)
		}
		if strings.ContainsRune(v, 0) {
			return bad("env %q: the value holds a NUL byte", k)
		}
	}
	if strings.ContainsRune(spec.Command, 0) {
		return bad("command holds a NUL byte")
	}
	if n := len(spec.Command) + len(wrapper) + len(b.cfg.StateDir) + 64; n > maxArgBytes {
		return bad("command is %d bytes; Modal takes at most %d", len(spec.Command), maxArgBytes-(n-len(spec.Command)))
	}
	if o := spec.Container; o != nil {
		if o.Image != "" || len(o.Mounts) > 0 || o.Privileged || o.PidMode != "" || o.IpcMode != "" ||
			o.UTSMode != "" || len(o.Devices) > 0 || len(o.CapAdd) > 0 ||
			(o.Network != "" && (o.Network != "none" || b.cfg.Network != NetworkBlocked)) {
			return bad("container options: the modal backend takes image, network and resources from its profile (%s); use a profile per variant", b.cfg.Image)
		}
	}
	return nil
}
