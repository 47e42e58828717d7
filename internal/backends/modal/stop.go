package modal

import (
	"context"
	"errors"
	"time"

	modal "github.com/modal-labs/modal-client/go"
)

// killWait is how long a job has to report its exit after SIGKILL, and
// again after its sandbox was terminated, before it is given up on.
const killWait = 5 * time.Second

// signalScript sends signal $1 to the process group led by the pid in the
// file $0. In "stop" mode ($2) the job still runs: it waits up to 2s for
// the file (the job may have just started) and, should the exec not lead
// a group, signals the process itself. In "leftovers" mode the job has
// ended: only its group is signalled — its pid may be another's by now —
// and the file is removed. It exits 3 when there is no pid to signal.
const signalScript = `i=0
if [ "$2" = stop ]; then
	while [ ! -s "$0" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
fi
p=$(cat "$0" 2>/dev/null)
[ "$2" = leftovers ] && rm -f "$0"
[ -n "$p" ] || exit 3
kill -s "$1" -- "-$p" 2>/dev/null && exit 0
[ "$2" = stop ] && kill -s "$1" "$p" 2>/dev/null
exit 0`

// errNoPid: the job's pid file was never written.
var errNoPid = errors.New("the job's pid is unknown")

// stop ends a job whose context is done: SIGTERM to its process group,
// SIGKILL once grace has passed, and if even that does not end it, its
// sandbox is given up. It returns the job's exit, if it reported one.
func (b *Backend) stop(ctx context.Context, w *workload, pidfile string, grace time.Duration, waited <-chan exit) exit {
	within := func(d time.Duration) (exit, bool) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case st := <-waited:
			return st, true
		case <-t.C:
			return exit{}, false
		}
	}
	if err := b.signal(ctx, w.sb, pidfile, "TERM", false); err != nil {
		b.cfg.Logger.Warn("modal: cannot stop the job gracefully", "sandbox", w.sb.SandboxID, "err", err)
	} else if st, ok := within(grace); ok {
		return st
	}
	if err := b.signal(ctx, w.sb, pidfile, "KILL", false); err == nil {
		if st, ok := within(killWait); ok {
			return st
		}
	}
	w.abandon(ctx)
	st, _ := within(killWait)
	return st
}

// signal runs signalScript in sb, in "leftovers" mode when the job has
// ended, and waits for it.
func (b *Backend) signal(ctx context.Context, sb *modal.Sandbox, pidfile, sig string, leftovers bool) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	mode := "stop"
	if leftovers {
		mode = "leftovers"
	}
	p, err := sb.Exec(ctx, []string{"/bin/sh", "-c", signalScript, pidfile, sig, mode},
		&modal.SandboxExecParams{Stdout: modal.Ignore, Stderr: modal.Ignore})
	if err != nil {
		return classify("signal "+sig, err)
	}
	code, err := p.Wait(ctx, nil)
	switch {
	case err != nil:
		return classify("signal "+sig, err)
	case code == 3:
		return errNoPid
	}
	return nil
}
