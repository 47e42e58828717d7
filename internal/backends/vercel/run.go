package vercel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// run is one attempt's command in its running sandbox.
type run struct {
	b        *Backend
	job      job
	sid, cid string
	logs     *httpsandbox.LogStream
	out      [2]*httpsandbox.Sink // stdout, stderr
}

// Run implements backends.Backend. See the package documentation.
func (b *Backend) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	if ctx.Err() != nil {
		return res, fmt.Errorf("vercel: not started: %w", context.Cause(ctx))
	}
	j, err := newJob(spec)
	if err != nil {
		return res, err
	}
	sb, ses, err := b.start(ctx, j)
	if err != nil {
		return res, runErr(ctx, "start sandbox", err)
	}
	defer b.remove(ctx, sb.Name, ses.ID)
	cmd, err := b.api.run(ctx, ses.ID, j.request())
	if err != nil {
		if httpsandbox.HasStatus(err, http.StatusBadRequest, http.StatusUnprocessableEntity) {
			err = fmt.Errorf("%w (cwd?): %w", err, backends.ErrPermanent)
		}
		return res, runErr(ctx, "start the job", err)
	}
	res.StartedAt = time.Now()
	logs := httpsandbox.NewLogStream()
	r := &run{b: b, job: j, sid: ses.ID, cid: cmd.ID, logs: logs, out: logs.Sinks(out)}
	return r.wait(ctx, res)
}

// runErr words a failed step, wrapping the cause of ctx when ctx ended it.
func runErr(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
		return fmt.Errorf("vercel: %s: %w (%w)", step, context.Cause(ctx), err)
	}
	return fmt.Errorf("vercel: %s: %w", step, err)
}

// wait streams the command's output until its exit code is known, or
// stops it when ctx is done first.
func (r *run) wait(ctx context.Context, res backends.Result) (backends.Result, error) {
	// The log stream outlives ctx: a stopped job's last words count.
	lctx, stopLogs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLogs()
	logs := r.logs
	var copied [2]int64
	logs.Start(func() error { return follow(lctx, r.b.api, r.sid, r.cid, r.out, &copied) })

	code, ended, err := r.pollExit(ctx, -1)
	var st httpsandbox.Stopped
	if err == nil && !ended {
		code, ended, st = r.stop(ctx)
	}
	res.FinishedAt = time.Now()
	logErr := logs.Drain(stopLogs, ended, func() error {
		// The ended command's stream replays its log and ends.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), catchUpTimeout)
		defer cancel()
		_, err := followOnce(cctx, r.b.api, r.sid, r.cid, r.out, &copied)
		return err
	})
	if err != nil {
		return res, runErr(ctx, "wait for the job", err)
	}
	st.Fill(&res, code, ended)
	switch {
	case st.Any():
		return res, fmt.Errorf("vercel: stopped: %w", context.Cause(ctx))
	case r.out[0].Err() != nil:
		return res, fmt.Errorf("vercel: writing stdout: %w", r.out[0].Err())
	case r.out[1].Err() != nil:
		return res, fmt.Errorf("vercel: writing stderr: %w", r.out[1].Err())
	case logErr != nil:
		return res, fmt.Errorf("vercel: reading the output: %w", logErr)
	}
	return res, nil
}

// pollExit waits up to d (d < 0: no bound; 0: one look) for the
// command's exit code, or until ctx is done; ended reports whether it
// came. It waits with the API's own wait (…?wait=true).
func (r *run) pollExit(ctx context.Context, d time.Duration) (int, bool, error) {
	if d == 0 {
		cmd, err := r.b.api.command(ctx, r.sid, r.cid)
		if err != nil || cmd.ExitCode == nil {
			return -1, false, err
		}
		return *cmd.ExitCode, true, nil
	}
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	for {
		cmd, err := r.b.api.wait(ctx, r.sid, r.cid)
		switch {
		case err == nil && cmd.ExitCode != nil:
			return *cmd.ExitCode, true, nil
		case ctx.Err() != nil:
			return -1, false, nil
		case err != nil:
			return -1, false, err
		}
	}
}
