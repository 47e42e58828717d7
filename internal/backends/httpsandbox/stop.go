package httpsandbox

import (
	"context"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// KillWait bounds the wait for a killed job's exit code.
const KillWait = 5 * time.Second

// Stopped records the signals sandrun sent a job.
type Stopped struct{ Term, Kill bool }

// Any reports whether a signal was sent.
func (s Stopped) Any() bool { return s.Term || s.Kill }

// Fill sets res from the job's end: an exit status 128+N after sandrun
// sent signal N is that signal; a job whose end was never seen after a
// signal was killed with its sandbox.
func (s Stopped) Fill(res *backends.Result, code int, ended bool) {
	switch {
	case ended && s.Term && code == 128+15:
		res.ExitCode, res.Signal = -1, "SIGTERM"
	case ended && s.Kill && code == 128+9:
		res.ExitCode, res.Signal = -1, "SIGKILL"
	case ended:
		res.ExitCode = code
	case s.Any():
		res.ExitCode, res.Signal = -1, "SIGKILL"
	}
}

// PollFunc waits up to d (d < 0: no bound; 0: one look) for the job's
// exit code, or until ctx is done; ended reports whether it came.
type PollFunc func(ctx context.Context, d time.Duration) (code int, ended bool, err error)

// Stop ends the job once ctx is done: TERM, then KILL after grace, each
// sent by signal (kill false, then true) and followed by a wait for its
// exit code with poll. A job found already ended is not signalled. It has
// a budget of its own, grace+KillWait+extra, since ctx is over; what
// survives it ends with the sandbox. signal handles its own failures.
func Stop(ctx context.Context, grace, extra time.Duration, poll PollFunc, signal func(ctx context.Context, kill bool)) (int, bool, Stopped) {
	var st Stopped
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+KillWait+extra)
	defer cancel()
	if code, ended, _ := poll(sctx, 0); ended {
		return code, true, st
	}
	for _, kill := range []bool{false, true} {
		wait := grace
		if kill {
			wait, st.Kill = KillWait, true
		} else {
			st.Term = true
		}
		signal(sctx, kill)
		if code, ended, _ := poll(sctx, wait); ended {
			return code, true, st
		}
	}
	return -1, false, st
}
