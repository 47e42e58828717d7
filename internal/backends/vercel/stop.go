package vercel

import (
	"context"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// killWait bounds the wait for a killed job's exit code.
const killWait = 5 * time.Second

// stopped records the signals sandrun sent a job.
type stopped struct{ term, kill bool }

func (s stopped) any() bool { return s.term || s.kill }

// fill sets res from the job's end: an exit code 128+N after sandrun sent
// signal N is that signal; a job whose end was never seen after a signal
// was killed with its sandbox.
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

// stop ends the job once ctx is done: SIGTERM (15) through the kill
// endpoint, then SIGKILL (9) after the grace, each followed by a wait for
// its exit code. A job found already ended is not signalled. It has a
// budget of its own, since ctx is over; what survives it ends with the
// sandbox.
func (r *run) stop(ctx context.Context) (int, bool, stopped) {
	var st stopped
	grace := r.job.spec.Grace()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+killWait+2*r.b.cfg.RequestTimeout)
	defer cancel()
	if code, ended, _ := r.pollExit(sctx, 0); ended {
		return code, true, st
	}
	for _, sig := range []int{15, 9} {
		wait := grace
		if sig == 9 {
			wait, st.kill = killWait, true
		} else {
			st.term = true
		}
		if err := r.b.api.kill(sctx, r.sid, r.cid, sig); err != nil {
			// A command that ended meanwhile cannot be killed: its exit
			// code is on its way.
			r.b.cfg.Logger.Debug("vercel: kill failed", "signal", sig, "err", err)
		}
		if code, ended, _ := r.pollExit(sctx, wait); ended {
			return code, true, st
		}
	}
	return -1, false, st
}
