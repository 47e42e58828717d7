package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/metrics"
)

// oomPatience bounds how long a container that exited by SIGKILL on its
// own is watched for the engine's OOM flag, looked at every oomCheckEvery.
// The engine learns of the kill and of the exit from two events that a
// loaded host can deliver a second or more apart.
const (
	oomPatience   = 3 * time.Second
	oomCheckEvery = 50 * time.Millisecond
)

// outputDrain bounds how long Run waits for the output stream after the
// container has exited.
const outputDrain = 5 * time.Second

// Run implements backends.Backend: one container per attempt.
func (d *Docker) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("docker: not started: %w", context.Cause(ctx))
	}
	cfg, host, err := d.containerConfig(spec)
	if err != nil {
		return res, fmt.Errorf("docker: %w: %w", err, backends.ErrPermanent)
	}
	// The container's lifecycle calls outlive ctx: a cancel must still be
	// able to kill and remove what was created.
	bg := context.WithoutCancel(ctx)
	if c, ok := d.claim(ctx, spec, cfg, host); ok {
		// A pooled container's image is on the engine, and its job has no
		// workspace.
		if err := d.refuseHostAccess(bg, host); err != nil {
			d.discard(bg, c)
			return res, err
		}
		if res, ran, err := d.runPooled(ctx, spec, c, out); ran {
			return res, err
		}
	}
	if err := d.ensureImage(bg, cfg.Image); err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	if err := d.ensureWorkspace(bg, spec, cfg.Image); err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	if err := d.refuseHostAccess(bg, host); err != nil {
		return res, err
	}
	if spec.Session != "" {
		return d.runSession(ctx, spec, host, out)
	}
	createStart := time.Now()
	created, err := d.api.ContainerCreate(bg, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	d.observe(func(m *metrics.Metrics) prometheus.Observer { return m.ContainerCreate.WithLabelValues(d.cfg.Profile) }, createStart)
	if err != nil {
		return res, fmt.Errorf("docker: create: %w: %w", err, backends.ErrUnavailable)
	}
	id := created.ID
	defer d.remove(ctx, id)

	att, err := d.api.ContainerAttach(bg, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return res, fmt.Errorf("docker: attach: %w", err)
	}
	defer att.Close()
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(nonNil(out.Stdout), nonNil(out.Stderr), att.Reader)
		copied <- err
	}()
	// Wait must be registered before start, or a fast exit is missed.
	waitCtx, stopWait := context.WithCancel(bg)
	defer stopWait()
	wait := d.api.ContainerWait(waitCtx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	// A ctx that ended while the container was made need not start it
	// (and a container's first moments are the worst time to stop it; see
	// initSettle).
	if ctx.Err() != nil {
		return res, fmt.Errorf("docker: not started: %w", context.Cause(ctx))
	}
	startStart := time.Now()
	if _, err := d.api.ContainerStart(bg, id, client.ContainerStartOptions{}); err != nil {
		return res, fmt.Errorf("docker: start: %w", err)
	}
	d.observe(func(m *metrics.Metrics) prometheus.Observer { return m.ContainerStart.WithLabelValues(d.cfg.Profile) }, startStart)
	// The worker's clock, not the engine's: the engine's two timestamps
	// come from different components and can disagree by a millisecond.
	res.StartedAt = time.Now()

	status, stopped, werr := d.await(ctx, bg, id, spec.Grace(), res.StartedAt, wait)
	res.FinishedAt = time.Now()
	if werr != nil {
		return res, fmt.Errorf("docker: wait: %w", werr)
	}
	var copyErr error
	select {
	case copyErr = <-copied:
	case <-time.After(outputDrain):
	}
	return d.ended(ctx, bg, id, res, status, stopped, copyErr)
}

// ended ends both run paths once container id has exited with status: an
// OOM kill is reported as such, otherwise see outcome. bg outlives ctx.
func (d *Docker) ended(ctx, bg context.Context, id string, res backends.Result, status container.WaitResponse, stopped bool, copyErr error) (backends.Result, error) {
	res.ExitCode = int(status.StatusCode)
	if err := d.oomKilled(bg, id, &res, stopped); err != nil {
		return res, err
	}
	return outcome(ctx, res, stopped, copyErr)
}

// await waits for container id's exit, or stops it (see stop) once ctx
// ends; bg outlives ctx. stopped says ctx ended first.
func (d *Docker) await(ctx, bg context.Context, id string, grace time.Duration, started time.Time, wait client.ContainerWaitResult) (status container.WaitResponse, stopped bool, err error) {
	select {
	case status = <-wait.Result:
		return status, false, nil
	case err = <-wait.Error:
		return status, false, err
	case <-ctx.Done():
		status, err = d.stop(bg, id, grace, started, wait)
		return status, true, err
	}
}

// refuseHostAccess is Run's backstop for a job whose container reaches
// the host on a profile that does not allow it (the worker refuses such
// jobs before Run).
func (d *Docker) refuseHostAccess(ctx context.Context, host *container.HostConfig) error {
	reasons, err := hostAccess(ctx, host, d.volumeDriverOptions, d.cfg.AllowedVolumeDrivers)
	if err != nil {
		return fmt.Errorf("docker: %w", err)
	}
	if len(reasons) > 0 && !d.cfg.AllowHostAccess {
		return fmt.Errorf("docker: host access refused (%s): %w", strings.Join(reasons, "; "), backends.ErrPermanent)
	}
	return nil
}

// oomKilled reports, as Run's error, that the exited container id was
// killed for its memory limit, and sets res's signal. The engine learns
// of the kill and of the exit from two events, in either order: an exit
// by SIGKILL (137) without the flag is looked at again for up to
// oomPatience, unless the worker stopped the container itself (its own
// SIGKILL explains the exit, and a cancel should not wait).
func (d *Docker) oomKilled(ctx context.Context, id string, res *backends.Result, stopped bool) error {
	deadline := time.Now().Add(oomPatience)
	for {
		info, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil || info.Container.State == nil {
			return nil
		}
		if info.Container.State.OOMKilled {
			break
		}
		if stopped || res.ExitCode != 128+int(syscall.SIGKILL) || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(oomCheckEvery):
		}
	}
	d.count(func(m *metrics.Metrics) prometheus.Counter { return m.OOMKills.WithLabelValues(d.cfg.Profile) })
	res.Signal = "SIGKILL"
	return fmt.Errorf("docker: %w (exit %d: killed for exceeding its %d-byte memory limit): %w", ErrOOM, res.ExitCode, d.cfg.MemoryBytes, backends.ErrPermanent)
}

// outcome ends both run paths: a workload stopped by ctx reports the
// signal that ended it (exit 128+N) and an error wrapping the cause; one
// that ended on its own reports its exit code, or the output stream's error.
func outcome(ctx context.Context, res backends.Result, stopped bool, copyErr error) (backends.Result, error) {
	if stopped {
		if sig := res.ExitCode - 128; res.ExitCode > 128 && sig < 65 {
			res.Signal = unixSignalName(syscall.Signal(sig))
			res.ExitCode = -1
		}
		return res, fmt.Errorf("docker: stopped: %w", context.Cause(ctx))
	}
	if copyErr != nil {
		return res, fmt.Errorf("docker: output: %w", copyErr)
	}
	return res, nil
}

// ErrOOM is wrapped by Run's error when the kernel killed the container for
// its memory limit. It also wraps backends.ErrPermanent: the same job would
// be killed again, so it is not retried.
var ErrOOM = errors.New("oom: out of memory")

// initSettle is how long after its start a container may still lose a
// SIGTERM when the worker cannot watch its init (see initReady): its PID 1
// (runc's init, then docker-init) has no handler for the first moments,
// and a PID 1 without one ignores the signal. stop then sends SIGTERM
// again once a container that young is initSettle old.
const initSettle = time.Second

// stop sends SIGTERM to the container (its PID 1; the kernel kills the rest
// of its PID namespace with it), then SIGKILL after grace, and waits for
// the exit. started is when the container started, or zero for one that
// has run for a while. A young container's SIGTERM waits for its init to
// be ready (initReady), or is sent again at initSettle when the worker
// cannot tell.
func (d *Docker) stop(ctx context.Context, id string, grace time.Duration, started time.Time, wait client.ContainerWaitResult) (container.WaitResponse, error) {
	term := func() { _, _ = d.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGTERM"}) }
	begun := time.Now()
	var again <-chan time.Time
	if age := time.Since(started); age < initWatch && !d.initReady(ctx, id, min(grace, initWatch-age)) && age < initSettle {
		again = time.After(initSettle - age)
	}
	term()
	t := time.NewTimer(grace - time.Since(begun))
	defer t.Stop()
	for killed := false; !killed; {
		select {
		case s := <-wait.Result:
			return s, nil
		case err := <-wait.Error:
			return container.WaitResponse{}, err
		case <-again:
			again = nil
			term()
		case <-t.C:
			killed = true
		}
	}
	_, _ = d.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
	select {
	case s := <-wait.Result:
		return s, nil
	case err := <-wait.Error:
		return container.WaitResponse{}, err
	case <-time.After(30 * time.Second):
		return container.WaitResponse{}, errors.New("container did not exit 30s after SIGKILL")
	}
}

func nonNil(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func unixSignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return fmt.Sprintf("signal %d", int(s))
}
