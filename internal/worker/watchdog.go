package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// errAbandoned marks a backend's Run that had not returned abandonAfter
// after its context was done: the backend broke the contract that it
// stops the workload and returns promptly (backends.Backend, step 3), and
// the workload may still be running.
var errAbandoned = errors.New("backend run abandoned: it ignored its context")

// runWatched calls run(ctx) and returns what it returns, unless ctx is
// done and run has not returned abandonAfter later. Then it gives up on
// run: it returns a Result with ExitCode -1 and an error that wraps
// errAbandoned and context.Cause(ctx) and says how long it waited. The
// attempt thus ends as its cause says (timed out, canceled, lease lost,
// drained); test errAbandoned first to tell the two apart.
//
// abandonAfter counts from ctx's end, so it should exceed the kill grace
// the backend was given plus its own teardown. A non-positive one
// abandons a run that has not returned by the time ctx is done.
//
// An abandoned run is left behind, not stopped: nothing can stop a
// goroutine from outside. Its goroutine ends when run returns, if it
// ever does, and what run returns then is dropped. Until then the
// backend may still write to the Output it was given: its writers must
// stay safe to call after runWatched has returned, and what they receive
// then belongs to no attempt.
func runWatched(ctx context.Context, abandonAfter time.Duration, run func(context.Context) (backends.Result, error)) (backends.Result, error) {
	type outcome struct {
		res backends.Result
		err error
	}
	// Buffered: an abandoned run's goroutine still sends, and then ends.
	done := make(chan outcome, 1)
	go func() {
		res, err := run(ctx)
		done <- outcome{res, err}
	}()

	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
	}
	t := time.NewTimer(abandonAfter)
	defer t.Stop()
	select {
	case o := <-done:
		return o.res, o.err
	case <-t.C:
	}
	// A run that returned as the timer fired is not abandoned.
	select {
	case o := <-done:
		return o.res, o.err
	default:
	}
	return backends.Result{ExitCode: -1}, fmt.Errorf("%w: still running %s after its context ended: %w",
		errAbandoned, abandonAfter, context.Cause(ctx))
}
