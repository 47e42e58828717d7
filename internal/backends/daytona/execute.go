package daytona

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// answer is what an execute brought back.
type answer struct {
	resp executeResponse
	err  error
}

// execute runs the job as one synchronous execute (mode: execute). Its
// API timeout is the job's remaining deadline plus executeMargin, so that
// ctx ends first; the request itself outlives ctx, so that a job stopped
// by a signal still reports its exit code.
func (r *run) execute(ctx context.Context) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	timeout := r.b.cfg.ExecuteTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl) + r.b.executeMargin
	}
	secs := max(1, int(math.Ceil(timeout.Seconds())))
	req := executeRequest{Command: r.job.executeCommand(), Cwd: r.job.workdir(), Envs: r.job.env, Timeout: secs}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx),
		time.Duration(secs)*time.Second+r.job.spec.Grace()+httpsandbox.KillWait+2*signalTimeout)
	defer cancel()
	answers := make(chan answer, 1)
	res.StartedAt = time.Now()
	go func() {
		resp, err := r.tb.execute(ectx, req)
		answers <- answer{resp, err}
	}()

	var a *answer // The answer, once it came.
	poll := func(ctx context.Context, d time.Duration) (int, bool, error) {
		if a == nil {
			var t <-chan time.Time
			if d >= 0 {
				timer := time.NewTimer(d)
				defer timer.Stop()
				t = timer.C
			}
			select {
			case got := <-answers:
				a = &got
			case <-ctx.Done():
				return -1, false, nil
			case <-t:
				return -1, false, nil
			}
		}
		if a.err != nil || a.resp.ExitCode == nil {
			return -1, false, a.err
		}
		return *a.resp.ExitCode, true, nil
	}
	code, ended, _ := poll(ctx, -1)
	var st httpsandbox.Stopped
	if a == nil {
		code, ended, st = r.stop(ctx, poll)
	}
	res.FinishedAt = time.Now()
	if a == nil { // Stopped, and no answer yet: the sandbox goes anyway.
		st.Fill(&res, code, ended)
		return res, fmt.Errorf("daytona: stopped: %w", context.Cause(ctx))
	}
	if a.err != nil {
		return r.executeFailed(ctx, res, a.err, secs, st)
	}
	_, _ = r.out[0].Write([]byte(a.resp.Result))
	if code == -1 && !st.Any() {
		return res, fmt.Errorf("daytona: execute: the sandbox's shell did not start the job (exit code -1)")
	}
	return r.finish(ctx, res, code, ended, st, nil)
}

// answerLost reports whether err is an execute whose answer never came
// although the job may have started: the connection broke (or the
// toolbox's proxy answered 5xx for it). Execute has no ID to ask for the
// output again, so it is gone, and the job is reported unavailable, never
// as a success with an empty output. A 429 came before the job started.
func answerLost(err error) bool {
	return errors.Is(err, backends.ErrUnavailable) && !httpsandbox.HasStatus(err, http.StatusTooManyRequests)
}

// executeFailed words an execute that brought no exit code. A 408 is the
// daemon's timeout, which killed the job: if ctx is not done yet, it is
// given up to executeMargin to be, and then the job timed out; otherwise
// the daemon was early, which a retry may not repeat.
func (r *run) executeFailed(ctx context.Context, res backends.Result, err error, secs int, st httpsandbox.Stopped) (backends.Result, error) {
	if !isExecuteTimeout(err) {
		if st.Any() || ctx.Err() != nil {
			res.Signal = "SIGKILL"
		}
		if answerLost(err) {
			err = fmt.Errorf("%w; the job may have run, but execute mode gets its output and exit code only in "+
				"this answer, so both are lost (mode: session streams them and survives a broken connection)", err)
		}
		return res, runErr(ctx, "execute", err)
	}
	res.Signal = "SIGKILL"
	if ctx.Err() == nil {
		t := time.NewTimer(r.b.executeMargin)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("daytona: execute timed out: %w", context.Cause(ctx))
	}
	return res, fmt.Errorf("daytona: execute: the daemon's timeout of %ds passed before the job's deadline: %w", secs, err)
}
