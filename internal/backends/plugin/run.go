package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sandrun/sandrun/internal/backends"
)

// cancelSendTimeout bounds writing a cancel request. A plugin that does
// not read it is killed on schedule all the same.
const cancelSendTimeout = time.Second

// Run starts a plugin process, sends it spec in a run request and copies
// the output the plugin sends to out; a nil writer discards. It returns
// once the plugin has sent the run's last event (or failed), and its
// process group is gone.
//
// The error is nil when the run ended with an exit event, whatever the
// exit code. It wraps context.Cause(ctx) when ctx was done before the
// run's end (see the package documentation for how the run is stopped).
// A failing writer does not stop the run: its output is discarded from
// then on and the write error returned at the end.
func (b *Backend) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	c, err := b.newConversation(typeRun, "r")
	if err != nil {
		return res, fmt.Errorf("plugin %s: run: %w: %w", b.path, err, backends.ErrUnavailable)
	}
	id := c.id
	if ctx.Err() != nil {
		return res, b.runError(ctx, id, false, errors.New("not started"))
	}
	if err := checkSpec(spec); err != nil {
		return res, b.runError(ctx, id, false, err)
	}
	c.stdout, c.stderr = guard(out.Stdout), guard(out.Stderr)
	c.log = c.log.With("request", id, "job", spec.JobID, "attempt", spec.Attempt)
	hctx, cancel := context.WithTimeoutCause(ctx, b.timeout, b.timeoutError())
	p, err := b.open(hctx, c)
	cancel()
	if err != nil {
		return res, b.runError(ctx, id, false, err)
	}
	if err := p.send(newRunRequest(id, spec), b.timeout); err != nil {
		err = c.withRejects(b.fail(p, err))
		return res, b.runError(ctx, id, false, fmt.Errorf("sending the request: %w", err))
	}
	res.StartedAt = time.Now() // The host's clock, unless the plugin tells.
	res, stopped, err := b.await(ctx, p, c, spec.Grace(), res)
	// await has stopped the plugin: c is ours.
	return res, b.runError(ctx, id, stopped, c.withRejects(err))
}

// await follows a run until its last event. When ctx is done it stops
// the run: a graceful cancel, a forced one after grace, and the plugin's
// process group killed b.forceMargin after that. It reports whether ctx
// stopped the run.
func (b *Backend) await(ctx context.Context, p *process, c *conversation, grace time.Duration, res backends.Result) (_ backends.Result, stopped bool, _ error) {
	done := ctx.Done()
	step := time.NewTimer(0) // The next step of a stop, armed once ctx is done.
	step.Stop()
	defer step.Stop()
	forced := false
	for {
		select {
		case m := <-p.events:
			if m.err != nil {
				return res, stopped, b.fail(p, m.err)
			}
			switch m.ev.Type {
			case typeStarted:
				res.StartedAt = time.Now()
				if m.ev.StartedAt != nil {
					res.StartedAt = *m.ev.StartedAt
				}
				continue
			case typeExit:
				res.FinishedAt = time.Now()
				res = m.ev.result(res)
				b.finish(p)
				return res, stopped, c.writeError()
			default: // typeError: the conversation passes on nothing else.
				b.finish(p)
				return res, stopped, eventError(m.ev)
			}
		case <-done:
			done, stopped = nil, true
			b.cancel(p, c.id, false)
			step.Reset(grace)
		case <-step.C:
			if !forced {
				forced = true
				b.cancel(p, c.id, true)
				step.Reset(b.forceMargin)
				continue
			}
			p.stop(0)
			return res, stopped, fmt.Errorf("%w: the run had not ended %s after the forced cancel; the plugin was killed",
				ErrTimeout, b.forceMargin)
		}
	}
}

// cancel sends a cancel request. A failure is only logged: a plugin that
// has exited is noticed by its stdout reader, one that does not read is
// killed on schedule.
func (b *Backend) cancel(p *process, id string, force bool) {
	if err := p.send(cancelRequest{Type: typeCancel, ID: id, Force: force}, cancelSendTimeout); err != nil {
		b.log.Warn("plugin: sending cancel", "request", id, "force", force, "err", err)
	}
}

// runError returns err as Run returns it: prefixed with the plugin and
// the request, and wrapping context.Cause(ctx) when ctx was done. A run
// that ended with an exit event before ctx was seen done has no error.
func (b *Backend) runError(ctx context.Context, id string, stopped bool, err error) error {
	prefix := fmt.Sprintf("plugin %s: run %s", b.path, id)
	cause := context.Cause(ctx)
	switch {
	case err == nil && !stopped:
		return nil
	case err == nil:
		return fmt.Errorf("%s: stopped: %w", prefix, cause)
	case cause != nil && !errors.Is(err, cause):
		return fmt.Errorf("%s: stopped: %w; %w", prefix, cause, err)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// eventError converts an error event.
func eventError(ev event) error {
	msg := ev.Message
	if msg == "" {
		msg = "the plugin gave no message"
	}
	if ev.Permanent {
		return fmt.Errorf("%s: %w", msg, backends.ErrPermanent)
	}
	return errors.New(msg)
}

// writeError returns the first error of the output writers, if any.
func (c *conversation) writeError() error {
	switch {
	case c.stdout.err != nil:
		return fmt.Errorf("writing stdout: %w", c.stdout.err)
	case c.stderr.err != nil:
		return fmt.Errorf("writing stderr: %w", c.stderr.err)
	}
	return nil
}

// checkSpec rejects what JSON strings cannot carry unchanged: invalid
// UTF-8 would reach the plugin as U+FFFD. Values are not quoted.
func checkSpec(spec backends.Spec) error {
	for field, s := range map[string]string{"command": spec.Command, "cwd": spec.Dir, "session": spec.Session} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s: not valid UTF-8, which the plugin protocol cannot carry: %w", field, backends.ErrPermanent)
		}
	}
	for k, v := range spec.Env {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("env: %q: not valid UTF-8, which the plugin protocol cannot carry: %w", k, backends.ErrPermanent)
		}
	}
	return nil
}
