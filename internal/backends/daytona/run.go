package daytona

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// sessionID names the job's session; each sandbox runs one job.
const sessionID = "sandrun"

// run is one attempt in its started sandbox.
type run struct {
	b    *Backend
	tb   *toolbox
	job  job
	logs *httpsandbox.LogStream
	out  [2]*httpsandbox.Sink // stdout, stderr
}

// Run implements backends.Backend. See the package documentation.
func (b *Backend) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	if ctx.Err() != nil {
		return res, fmt.Errorf("daytona: not started: %w", context.Cause(ctx))
	}
	j, err := newJob(spec)
	if err != nil {
		return res, err
	}
	var vol *volume
	if spec.Workspace != "" {
		v, err := b.ensureVolume(ctx, spec)
		if err != nil {
			return res, runErr(ctx, "workspace "+spec.Workspace, err)
		}
		vol = &v
	}
	sb, err := b.start(ctx, j, vol)
	if err != nil {
		return res, runErr(ctx, "start sandbox", err)
	}
	defer b.remove(ctx, sb.ID)
	tb, err := b.api.toolbox(sb)
	if err != nil {
		return res, fmt.Errorf("daytona: %w", err)
	}
	logs := httpsandbox.NewLogStream()
	r := &run{b: b, tb: tb, job: j, logs: logs, out: logs.Sinks(out)}
	if b.cfg.Mode == ModeExecute {
		return r.execute(ctx)
	}
	return r.session(ctx)
}

// runErr words a failed step, wrapping the cause of ctx when ctx ended it.
func runErr(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
		return fmt.Errorf("daytona: %s: %w (%w)", step, context.Cause(ctx), err)
	}
	return fmt.Errorf("daytona: %s: %w", step, err)
}

// session runs the job as an asynchronous session command, streaming its
// output until its exit code is known.
func (r *run) session(ctx context.Context) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	if err := r.tb.createSession(ctx, sessionID); err != nil {
		return res, runErr(ctx, "create session", err)
	}
	cid, err := r.tb.exec(ctx, sessionID, r.job.sessionCommand())
	if err != nil {
		return res, runErr(ctx, "start the job", err)
	}
	res.StartedAt = time.Now()

	// The log stream outlives ctx: a stopped job's last words count.
	lctx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLogs()
	logs := r.logs
	lr := &logReader{c: r.tb.c, u: r.tb.logsURL(sessionID, cid), d: newDemux(r.out)}
	logs.Start(func() error { return lr.follow(lctx) })

	poll := func(ctx context.Context, d time.Duration) (int, bool, error) {
		return r.pollExit(ctx, cid, d, logs.Done())
	}
	code, ended, err := poll(ctx, -1)
	var st httpsandbox.Stopped
	if err == nil && !ended {
		code, ended, st = r.stop(ctx, poll)
	}
	res.FinishedAt = time.Now()
	logErr := logs.Drain(stopLogs, ended, func() error {
		return lr.catchUp(context.WithoutCancel(ctx))
	})
	lr.flush()
	if err != nil {
		return res, runErr(ctx, "wait for the job", err)
	}
	return r.finish(ctx, res, code, ended, st, logErr)
}

// pollExit is the session's httpsandbox.PollFunc. Polls start at 50ms and grow to
// PollInterval; the end of the log stream, which comes with the
// command's, brings the next one forward.
func (r *run) pollExit(ctx context.Context, cid string, d time.Duration, logsDone <-chan struct{}) (int, bool, error) {
	var deadline <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	wait := 50 * time.Millisecond
	for {
		st, err := r.tb.command(ctx, sessionID, cid)
		switch {
		case err == nil && st.ExitCode != nil:
			return *st.ExitCode, true, nil
		case ctx.Err() != nil:
			return -1, false, nil
		case err != nil:
			return -1, false, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return -1, false, nil
		case <-deadline:
			t.Stop()
			return -1, false, nil
		case <-logsDone:
			t.Stop()
			logsDone = nil
		case <-t.C:
			wait = min(wait*3/2, r.b.cfg.PollInterval)
		}
	}
}

// finish fills in res from how the job ended and words Run's error.
func (r *run) finish(ctx context.Context, res backends.Result, code int, ended bool, st httpsandbox.Stopped, logErr error) (backends.Result, error) {
	st.Fill(&res, code, ended)
	switch {
	case st.Any():
		return res, fmt.Errorf("daytona: stopped: %w", context.Cause(ctx))
	case r.out[0].Err() != nil:
		return res, fmt.Errorf("daytona: writing stdout: %w", r.out[0].Err())
	case r.out[1].Err() != nil:
		return res, fmt.Errorf("daytona: writing stderr: %w", r.out[1].Err())
	case logErr != nil:
		return res, fmt.Errorf("daytona: reading the output: %w", logErr)
	}
	return res, nil
}
