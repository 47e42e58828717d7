package modal

import (
	"context"
	"crypto/rand"
	"fmt"
	"path"
	"syscall"
	"time"

	modal "github.com/modal-labs/modal-client/go"
	"golang.org/x/sys/unix"

	"github.com/sandrun/sandrun/internal/backends"
)

// wrapper is each job's exec: it writes its pid — its process group's id,
// as an exec leads its own group — to the pid file ($0), then becomes the
// job's shell ($1) with stdin from /dev/null (an exec's stdin is a pipe
// that stays open).
const wrapper = `echo $$ >"$0" 2>/dev/null; exec /bin/sh -c "$1" </dev/null`

// exit is what an exec's Wait reported: a code when known, else an error
// or nothing (the wait was given up).
type exit struct {
	code  int
	known bool
	err   error
}

// execute runs spec's command in w, waits for it or stops it when ctx is
// done, ends what it left, and returns once its output has been copied.
func (b *Backend) execute(ctx context.Context, w *workload, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	bg := context.WithoutCancel(ctx)
	pidfile := path.Join(b.cfg.StateDir, ".sandrun-"+rand.Text()+".pid")
	res.StartedAt = time.Now()
	ectx, cancel := context.WithTimeout(bg, rpcTimeout)
	proc, err := w.sb.Exec(ectx, []string{"/bin/sh", "-c", wrapper, pidfile, spec.Command},
		&modal.SandboxExecParams{Workdir: workdir(spec), Env: spec.Env})
	cancel()
	if err != nil {
		w.unused(bg)
		return res, classify("exec", err)
	}
	output := copyOutput(proc, out)
	waited, stopWaiting := waitFor(bg, proc)
	defer stopWaiting()

	var st exit
	stopped := false
	select {
	case st = <-waited:
	case <-ctx.Done():
		select {
		case st = <-waited: // It ended as ctx did: its pid may be another's now.
		default:
			stopped = true
			st = b.stop(bg, w, pidfile, spec.Grace(), waited)
		}
	}
	res.FinishedAt = time.Now()
	var expired error
	if !stopped && st.known && st.code == 128+int(syscall.SIGKILL) {
		expired = b.expired(bg, w)
	}
	if expired != nil {
		w.abandon(bg)
	} else {
		w.endJob(bg, pidfile)
	}
	if w.workspace {
		b.awaitEnd(bg, w.sb)
	}
	outErr := output.drain()
	res, err = outcome(ctx, res, st, stopped, outErr)
	if expired != nil {
		err = expired
	}
	return res, err
}

// expired tells a job that Modal killed because its sandbox's timeout
// passed from one that died of SIGKILL: for a job sandbox that is the
// profile's sandbox_timeout, which a retry would meet again; a session's
// sandbox may just have been old, and the session is given up.
func (b *Backend) expired(ctx context.Context, w *workload) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	code, err := w.sb.Poll(ctx, nil)
	if err != nil || code == nil || *code != 124 {
		return nil
	}
	if w.session != nil {
		return fmt.Errorf("modal: session %s: sandbox %s reached its timeout (sandbox_timeout %s): %w",
			w.session.key, w.sb.SandboxID, b.cfg.SandboxTimeout, backends.ErrUnavailable)
	}
	return fmt.Errorf("modal: sandbox %s reached its timeout (sandbox_timeout %s, or the job's deadline): %w",
		w.sb.SandboxID, b.cfg.SandboxTimeout, backends.ErrPermanent)
}

// waitFor waits for proc on a goroutine. The channel receives its exit;
// stop gives the wait up and returns once the goroutine has ended.
func waitFor(ctx context.Context, proc *modal.ContainerProcess) (<-chan exit, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch, done := make(chan exit, 1), make(chan struct{})
	go func() {
		defer close(done)
		code, err := proc.Wait(ctx, nil)
		ch <- exit{code: code, known: err == nil, err: err}
	}()
	return ch, func() { cancel(); <-done }
}

// outcome is Run's result and error. A stopped command that died of
// signal N (which Modal reports as 128+N) gets exit code -1 and the
// signal's name; one whose exit never came was killed with the sandbox.
// A command that ran to completion keeps its code, even above 128.
func outcome(ctx context.Context, res backends.Result, st exit, stopped bool, outErr error) (backends.Result, error) {
	if st.known {
		res.ExitCode = st.code
		if name := unix.SignalName(syscall.Signal(st.code - 128)); stopped && st.code > 128 && name != "" {
			res.ExitCode, res.Signal = -1, name
		}
	} else if stopped {
		res.Signal = "SIGKILL"
	}
	switch {
	case stopped:
		return res, fmt.Errorf("modal: stopped: %w", context.Cause(ctx))
	case st.err != nil:
		return res, classify("wait", st.err)
	case outErr != nil:
		return res, outErr
	}
	return res, nil
}

// unused gives back a workload whose job never started: a job sandbox is
// terminated at once.
func (w *workload) unused(ctx context.Context) {
	if w.session == nil {
		w.b.terminate(ctx, w.sb)
	}
}
