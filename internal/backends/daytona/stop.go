package daytona

import (
	"context"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// killWait bounds the wait for a killed job's exit code; signalTimeout
// bounds the execute that sends a signal.
const (
	killWait      = 5 * time.Second
	signalTimeout = 10 * time.Second
)

// stopped records the signals sandrun sent a job.
type stopped struct{ term, kill bool }

func (s stopped) any() bool { return s.term || s.kill }

// fill sets res from the job's end: an exit status 128+N after sandrun
// sent signal N is that signal; a job whose end was never seen after a
// signal was killed with its sandbox.
func (s stopped) fill(res *backends.Result, code int, ended bool) {
	switch {
	case ended && s.term && code == 128+15:
		res.ExitCode, res.Signal = -1, "SIGTERM"
	case ended && s.kill && code == 128+9:
		res.ExitCode, res.Signal = -1, "SIGKILL"
	case ended:
		res.ExitCode = code
	case s.any():
		res.ExitCode, res.Signal = -1, "SIGKILL"
	}
}

// stop ends the job once ctx is done: TERM, then KILL after the grace,
// each followed by a wait for its exit code. A job found already ended is
// not signalled. It has a budget of its own, since ctx is over; what
// survives it ends with the sandbox.
func (r *run) stop(ctx context.Context, poll pollFunc) (int, bool, stopped) {
	var st stopped
	grace := r.job.spec.Grace()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+killWait+2*signalTimeout)
	defer cancel()
	if code, ended, _ := poll(sctx, 0); ended {
		return code, true, st
	}
	for _, sig := range []string{"TERM", "KILL"} {
		wait := grace
		if sig == "KILL" {
			wait, st.kill = killWait, true
		} else {
			st.term = true
		}
		if _, err := r.tb.runScript(sctx, signalScript(sig), signalTimeout); err != nil {
			r.b.cfg.Logger.Warn("daytona: could not signal the job; its sandbox will be deleted", "signal", sig, "err", err)
		}
		if code, ended, _ := poll(sctx, wait); ended {
			return code, true, st
		}
	}
	return -1, false, st
}
