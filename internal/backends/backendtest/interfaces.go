package backendtest

import (
	"slices"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
)

// testHostAccess: a backends.HostAccessChecker names, with a reason, that
// a job reaching the host (Options.HostAccess) does, and names nothing
// for a plain job.
func (s *suite) testHostAccess(t *testing.T) {
	t.Parallel()
	c, ok := s.newBackend(t).(backends.HostAccessChecker)
	if !ok {
		t.Skip("not a HostAccessChecker")
	}
	if s.opts.HostAccess == nil {
		t.Fatal("a HostAccessChecker, but Options.HostAccess is nil: its judgement is not checked")
	}
	plain := backends.Spec{JobID: "hostaccess-plain", Attempt: 1, Command: "exit 0"}
	if reasons, _, err := c.HostAccess(t.Context(), plain); err != nil || len(reasons) != 0 {
		t.Errorf("HostAccess of a plain job: %q, %v; want no reason", reasons, err)
	}
	spec := s.opts.HostAccess(t)
	reasons, _, err := c.HostAccess(t.Context(), spec)
	if err != nil || len(reasons) == 0 || slices.Contains(reasons, "") {
		t.Errorf("HostAccess of a job that reaches the host (%+v): %q, %v; want a reason for it", spec.Container, reasons, err)
	}
}

// testFinisher: a backends.Finisher keeps an attempt's state after Run
// (Options.Leftovers sees it); Finished(spec, true) removes all of it;
// Finished(spec, false) keeps it or removes it, as Options.KeepsFailed
// says.
func (s *suite) testFinisher(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	f, ok := b.(backends.Finisher)
	if !ok {
		t.Skip("not a Finisher")
	}
	if s.opts.Leftovers == nil {
		t.Fatal("a Finisher, but Options.Leftovers is nil: its clean-up is not checked")
	}
	run := func(spec backends.Spec, code int) {
		t.Helper()
		o, stdout, stderr := s.runOn(t, b, spec)
		mustComplete(t, o, code, stdout, stderr)
		if left := s.opts.Leftovers(t, b, spec); len(left) == 0 {
			t.Fatalf("nothing of attempt %s-%d is left before Finished: Options.Leftovers cannot see it, so the check could not fail",
				spec.JobID, spec.Attempt)
		}
	}

	ok1 := backends.Spec{JobID: "finish-ok", Attempt: 1, Deployment: "backendtest", Command: "echo done"}
	run(ok1, 0)
	if err := f.Finished(t.Context(), ok1, true); err != nil {
		t.Fatalf("Finished(succeeded): %v", err)
	}
	if left := s.opts.Leftovers(t, b, ok1); len(left) != 0 {
		t.Errorf("after Finished(succeeded), the attempt's %q remain", left)
	}

	failed := backends.Spec{JobID: "finish-failed", Attempt: 1, Deployment: "backendtest", Command: "echo failing; exit 3"}
	run(failed, 3)
	if err := f.Finished(t.Context(), failed, false); err != nil {
		t.Fatalf("Finished(failed): %v", err)
	}
	switch left := s.opts.Leftovers(t, b, failed); {
	case s.opts.KeepsFailed && len(left) == 0:
		t.Errorf("after Finished(failed), nothing of the attempt is left; Options.KeepsFailed says it is kept")
	case !s.opts.KeepsFailed && len(left) != 0:
		t.Errorf("after Finished(failed), the attempt's %q remain", left)
	}
}
