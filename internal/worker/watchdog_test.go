package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

const abandonAfter = time.Minute

var errStop = errors.New("test: job timed out")

// TestWatchdogAbandonsRunThatIgnoresContext: a run that goes on after its
// context ended is given up abandonAfter later, with an error that wraps
// both errAbandoned and the context's cause; it is left running.
func TestWatchdogAbandonsRunThatIgnoresContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		release, ran := make(chan struct{}), make(chan struct{})
		time.AfterFunc(10*time.Second, func() { cancel(errStop) })
		begun := time.Now()
		res, err := runWatched(ctx, abandonAfter, func(context.Context) (backends.Result, error) {
			defer close(ran)
			<-release // Never looks at its context.
			return backends.Result{ExitCode: 0}, nil
		})
		if took, want := time.Since(begun), 10*time.Second+abandonAfter; took != want {
			t.Errorf("runWatched returned after %s, want %s (the stop, then abandonAfter)", took, want)
		}
		if !errors.Is(err, errAbandoned) || !errors.Is(err, errStop) || !strings.Contains(err.Error(), abandonAfter.String()) {
			t.Errorf("error %v, want one wrapping errAbandoned and the cause, naming %s", err, abandonAfter)
		}
		if res.ExitCode != -1 {
			t.Errorf("result %+v, want exit code -1", res)
		}
		select {
		case <-ran:
			t.Error("the run had returned: it was not abandoned")
		default:
		}
		// The abandoned goroutine ends when the run does.
		close(release)
		<-ran
		synctest.Wait()
	})
}

// TestWatchdogKeepsWhatRunReturns: a run that returns on its own, or stops
// within abandonAfter of its context's end, has its own result and error.
func TestWatchdogKeepsWhatRunReturns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		stopAt   time.Duration // 0: never.
		run      func(context.Context) (backends.Result, error)
		wantTook time.Duration
		wantRes  backends.Result
		wantErr  error
	}{
		{
			name: "finishes before its context ends",
			run: func(context.Context) (backends.Result, error) {
				time.Sleep(3 * time.Second)
				return backends.Result{ExitCode: 2}, nil
			},
			wantTook: 3 * time.Second,
			wantRes:  backends.Result{ExitCode: 2},
		},
		{
			name:   "honours its context, with a teardown inside abandonAfter",
			stopAt: 10 * time.Second,
			run: func(ctx context.Context) (backends.Result, error) {
				<-ctx.Done()
				time.Sleep(abandonAfter - time.Second)
				return backends.Result{ExitCode: -1, Signal: "SIGKILL"}, fmt.Errorf("stopped: %w", context.Cause(ctx))
			},
			wantTook: 10*time.Second + abandonAfter - time.Second,
			wantRes:  backends.Result{ExitCode: -1, Signal: "SIGKILL"},
			wantErr:  errStop,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				if tt.stopAt > 0 {
					time.AfterFunc(tt.stopAt, func() { cancel(errStop) })
				}
				begun := time.Now()
				res, err := runWatched(ctx, abandonAfter, tt.run)
				if took := time.Since(begun); took != tt.wantTook {
					t.Errorf("runWatched returned after %s, want %s", took, tt.wantTook)
				}
				if res != tt.wantRes {
					t.Errorf("result %+v, want the run's %+v", res, tt.wantRes)
				}
				if errors.Is(err, errAbandoned) || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Errorf("error %v, want the run's own (%v)", err, tt.wantErr)
				}
			})
		})
	}
}

// TestRecentlyFrozen: a claim reads cancel requests from the server while
// the process is resuming from a stop (no tick of the detector for
// freezeGap) and for freezeTrust after a gap the detector saw; otherwise
// it trusts its watch.
func TestRecentlyFrozen(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var w Worker
		if w.recentlyFrozen() {
			t.Fatal("a worker that has not started its detector is frozen")
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go w.detectFreezes(ctx)
		time.Sleep(2 * time.Second)
		if w.recentlyFrozen() {
			t.Fatal("ticking regularly, yet frozen")
		}
		// Resuming from a stop: the last tick is older than freezeGap.
		w.pulse.Store(time.Now().Add(-3 * time.Second).UnixNano())
		if !w.recentlyFrozen() {
			t.Fatal("no tick for 3 s, yet not frozen")
		}
		time.Sleep(freezeTick + time.Millisecond) // the detector ticks, sees the gap
		if !w.recentlyFrozen() || w.frozeAt.Load() == 0 {
			t.Fatal("the detector did not note the gap")
		}
		time.Sleep(freezeTrust)
		if w.recentlyFrozen() {
			t.Fatalf("still frozen %s after the gap", freezeTrust)
		}
	})
}
