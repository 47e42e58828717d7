// Package backendtest is the conformance suite that every backends.Backend
// implementation runs from its own tests:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backends.Backend { ... }, backendtest.Options{...})
//	}
//
// It checks the contract documented on backends.Backend, plus two rules
// that every backend keeps:
//
//   - A job leaves nothing running: when its main process ends, on its own
//     or because ctx was done, its other processes are ended too, and Run
//     does not wait for a background process that still holds the output.
//   - A job's environment is Spec.Env plus what the backend documents,
//     never the worker's own environment; its standard input is empty.
//
// Job commands are POSIX sh; besides shell built-ins they need sh, sleep,
// head and wc on PATH, and /dev/zero, in the backend's environment.
package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// Options declares what the backend's environment supports. The zero
// value suits a backend that shares the test's filesystem and whose
// processes the test cannot see.
type Options struct {
	// TempDir returns an existing directory in the filesystem where the
	// backend runs commands, for the working directory test. Nil means
	// t.TempDir().
	TempDir func(t *testing.T) string
	// ProcessGone reports whether the process with pid, as a job's shell
	// printed it with $! or $$, no longer runs; a zombie counts as gone.
	// Nil skips the checks that a job's processes are gone after Run
	// (the checks on how Run returns still run). HostProcessGone serves
	// backends whose processes run on the test's host.
	ProcessGone func(t *testing.T, pid int) bool
	// StopMargin is how long Run may take to return after ctx is done,
	// beyond the KillGrace the job had. It is an upper bound for the
	// contract, not a speed benchmark. Zero means 5s.
	StopMargin time.Duration
}

// jobTimeout bounds every job the suite runs, so that a broken backend
// fails the test instead of hanging it.
const jobTimeout = 2 * time.Minute

// Run runs the conformance suite as sub-tests of t. newBackend is called
// once per sub-test and returns a validated backend; it may register
// cleanups on the sub-test's t. Most sub-tests run in parallel; one uses
// t.Setenv, so t must not be a parallel test.
func Run(t *testing.T, newBackend func(t *testing.T) backends.Backend, opts Options) {
	t.Helper()
	if opts.TempDir == nil {
		opts.TempDir = func(t *testing.T) string { return t.TempDir() }
	}
	if opts.StopMargin <= 0 {
		opts.StopMargin = 5 * time.Second
	}
	s := &suite{newBackend: newBackend, opts: opts}

	t.Run("Validate", s.testValidate)
	t.Run("ExitCodes", s.testExitCodes)
	t.Run("CommandNotFound", s.testCommandNotFound)
	t.Run("StdoutStderrSeparate", s.testStdoutStderr)
	t.Run("Env", s.testEnv) // Not parallel: uses t.Setenv.
	t.Run("Cwd", s.testCwd)
	t.Run("StdinEmpty", s.testStdinEmpty)
	t.Run("Timing", s.testTiming)
	t.Run("LargeOutput", s.testLargeOutput)
	t.Run("BinaryOutput", s.testBinaryOutput)
	t.Run("Concurrent", s.testConcurrent)
	t.Run("DoneBeforeRun", s.testDoneBeforeRun)
	t.Run("DeadlineStopsJob", s.testDeadline)
	t.Run("CancelIsGraceful", s.testGracefulCancel)
	t.Run("CancelKillsProcessTree", s.testCancelKillsTree)
	t.Run("ExitKillsLeftovers", s.testExitKillsLeftovers)
}

// suite carries Run's arguments to the sub-tests.
type suite struct {
	newBackend func(t *testing.T) backends.Backend
	opts       Options
}

// outcome is what one Run call returned, and when.
type outcome struct {
	res      backends.Result
	err      error
	returned time.Time
}

// run runs command on a new backend to completion and returns the outcome
// with everything it wrote.
func (s *suite) run(t *testing.T, spec backends.Spec) (outcome, *recorder, *recorder) {
	t.Helper()
	stdout, stderr := newRecorder(""), newRecorder("")
	o := <-start(jobContext(t), s.newBackend(t), spec, stdout, stderr)
	return o, stdout, stderr
}

// jobContext returns the context for a job that should not be stopped:
// it ends only with the test or after jobTimeout.
func jobContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), jobTimeout)
	t.Cleanup(cancel)
	return ctx
}

// start runs spec on b in the background. The channel receives the
// outcome once Run has returned.
func start(ctx context.Context, b backends.Backend, spec backends.Spec, stdout, stderr *recorder) <-chan outcome {
	if spec.JobID == "" {
		spec.JobID = "backendtest"
		spec.Attempt = 1
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Run(ctx, spec, backends.Output{Stdout: stdout, Stderr: stderr})
		done <- outcome{res: res, err: err, returned: time.Now()}
	}()
	return done
}

func (s *suite) testValidate(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	if b.Kind() == "" {
		t.Error("Kind() is empty")
	}
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate (second call): %v", err)
	}
}
