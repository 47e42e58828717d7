package backendtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// These sub-tests end jobs early, or leave processes behind, and check
// that Run stops the whole workload, returns within the contract's bound
// and reports why.

// treeCommand ignores SIGTERM at every level, starts a child, a grandchild
// shell and a great-grandchild that all hold stdout open, prints their
// pids and then "ready" once all of them run.
const treeCommand = `trap '' TERM
sleep 300 & echo "pid $!"
sh -c 'echo "pid $$"; sleep 300 & echo "pid $!"; echo ready; wait' &
wait`

func (s *suite) testDoneBeforeRun(t *testing.T) {
	t.Parallel()
	cause := errors.New("backendtest: cancelled before Run")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	stdout, stderr := newRecorder(""), newRecorder("")
	begun := time.Now()
	o := awaitReturn(t, start(ctx, s.newBackend(t), backends.Spec{Command: "exit 0"}, stdout, stderr),
		begun.Add(s.opts.StopMargin))
	if !errors.Is(o.err, cause) {
		t.Errorf("Run error %v, want one wrapping the cause %q", o.err, cause)
	}
}

// testDeadline lets a deadline stop a job that exits on SIGTERM; with a
// long KillGrace, Run returning soon shows the stop began gracefully.
func (s *suite) testDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	stdout, stderr := newRecorder(""), newRecorder("")
	spec := backends.Spec{Command: "echo ready; exec sleep 300", KillGrace: time.Minute}
	o := awaitReturn(t, start(ctx, s.newBackend(t), spec, stdout, stderr), deadline.Add(s.opts.StopMargin))
	if !errors.Is(o.err, context.DeadlineExceeded) {
		t.Fatalf("Run error %v, want one wrapping context.DeadlineExceeded", o.err)
	}
	if strings.Contains(stdout.String(), "ready") && (o.res.ExitCode != -1 || o.res.Signal != "SIGTERM") {
		t.Errorf("exit code %d, signal %q; want -1, SIGTERM", o.res.ExitCode, o.res.Signal)
	}
}

// testGracefulCancel checks that the workload gets SIGTERM first and may
// exit on its own terms: the error still wraps the cancel cause.
func (s *suite) testGracefulCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stdout, stderr := newRecorder("ready"), newRecorder("")
	spec := backends.Spec{
		Command:   `trap 'echo got-term; exit 7' TERM; sleep 300 & echo "pid $!"; echo ready; wait`,
		KillGrace: time.Minute,
	}
	done := start(ctx, s.newBackend(t), spec, stdout, stderr)
	waitReady(t, stdout, stderr, done)

	cause := errors.New("backendtest: graceful cancel")
	cancelled := time.Now()
	cancel(cause)
	o := awaitReturn(t, done, cancelled.Add(s.opts.StopMargin))
	if !errors.Is(o.err, cause) {
		t.Errorf("Run error %v, want one wrapping the cause %q", o.err, cause)
	}
	if o.res.ExitCode != 7 || !strings.Contains(stdout.String(), "got-term") {
		t.Errorf("exit code %d, stdout %q; want 7 from the job's TERM trap", o.res.ExitCode, stdout)
	}
	s.assertGone(t, stdout.pids(t))
}

// testCancelKillsTree cancels a job whose processes all ignore SIGTERM and
// hold stdout: they must all be killed once KillGrace has passed, not
// before, and Run must return soon after.
func (s *suite) testCancelKillsTree(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stdout, stderr := newRecorder("ready"), newRecorder("")
	spec := backends.Spec{Command: treeCommand, KillGrace: grace}
	done := start(ctx, s.newBackend(t), spec, stdout, stderr)
	waitReady(t, stdout, stderr, done)

	cause := errors.New("backendtest: cancel a process tree")
	cancelled := time.Now()
	cancel(cause)
	o := awaitReturn(t, done, cancelled.Add(grace+s.opts.StopMargin))
	if !errors.Is(o.err, cause) {
		t.Errorf("Run error %v, want one wrapping the cause %q", o.err, cause)
	}
	if took := o.returned.Sub(cancelled); took < grace {
		t.Errorf("Run returned %s after cancel, before KillGrace %s: the job ignores SIGTERM, so it was not stopped gracefully first", took, grace)
	}
	if o.res.ExitCode != -1 || o.res.Signal != "SIGKILL" {
		t.Errorf("exit code %d, signal %q; want -1, SIGKILL", o.res.ExitCode, o.res.Signal)
	}
	pids := stdout.pids(t)
	if len(pids) != 3 {
		t.Fatalf("want 3 pids from the job, got %v in %q", pids, stdout)
	}
	s.assertGone(t, pids)
}

// testExitKillsLeftovers runs a job that exits while its background
// processes (one orphaned, all ignoring SIGTERM, all holding stdout) run
// on: Run must not wait for them, and they must not survive the job.
func (s *suite) testExitKillsLeftovers(t *testing.T) {
	t.Parallel()
	begun := time.Now()
	stdout, stderr := newRecorder(""), newRecorder("")
	spec := backends.Spec{Command: `trap '' TERM
sleep 300 & echo "pid $!"
sh -c 'sleep 300 & echo "pid $!"'
exit 4`}
	o := awaitReturn(t, start(jobContext(t), s.newBackend(t), spec, stdout, stderr), begun.Add(s.opts.StopMargin))
	mustComplete(t, o, 4, stdout, stderr)
	pids := stdout.pids(t)
	if len(pids) != 2 {
		t.Fatalf("want 2 pids from the job, got %v in %q", pids, stdout)
	}
	s.assertGone(t, pids)
}

// assertGone checks, when the backend can tell, that every pid is gone
// within StopMargin. A killed process takes a moment to be torn down, so
// this polls; it is the one wait in the suite that is not on a signal.
func (s *suite) assertGone(t *testing.T, pids []int) {
	t.Helper()
	if s.opts.ProcessGone == nil {
		return
	}
	deadline := time.Now().Add(s.opts.StopMargin)
	for _, pid := range pids {
		for !s.opts.ProcessGone(t, pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d still runs after Run returned", pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
