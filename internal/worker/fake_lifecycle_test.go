package worker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/fake"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestLifecycleOnTheFakeBackend: what a job's outcome is — its state,
// exit code, output, attempts and error — for each way a run can end,
// acted out by the scriptable fake backend (no process is started, so the
// outcome, not the machine, is what is tested).
func TestLifecycleOnTheFakeBackend(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	fb := fake.New(backends.Capabilities{})
	reg := backends.NewRegistry()
	if err := reg.Add("fake", fb); err != nil {
		t.Fatal(err)
	}
	cfg := sandruntest.FastConfig()
	sandruntest.StartWorkerWith(t, st, cfg, reg)
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	fast := &jobs.Backoff{Initial: jobs.Duration(100 * time.Millisecond), Max: jobs.Duration(100 * time.Millisecond)}
	cases := []struct {
		name     string
		spec     jobs.Spec
		state    jobs.State
		exit     int
		attempts int
		stdout   string
		stderr   string
		errHas   string
	}{
		{name: "succeeds", spec: jobs.Spec{Command: "out hello; err note"}, state: jobs.StateSucceeded, attempts: 1, stdout: "hello\n", stderr: "note\n"},
		{name: "exit code", spec: jobs.Spec{Command: "out partial; exit 3", MaxAttempts: 1}, state: jobs.StateFailed, exit: 3, attempts: 1, stdout: "partial\n"},
		{name: "exit code retried then dead", spec: jobs.Spec{Command: "exit 4", MaxAttempts: 2, Retry: fast}, state: jobs.StateDead, exit: 4, attempts: 2},
		{name: "timeout", spec: jobs.Spec{Command: "out started; hang", Timeout: jobs.Duration(500 * time.Millisecond), MaxAttempts: 1}, state: jobs.StateTimedOut, exit: -1, attempts: 1, stdout: "started\n"},
		{name: "permanent start error", spec: jobs.Spec{Command: "start-error permanent", MaxAttempts: 3}, state: jobs.StateFailed, exit: -1, attempts: 1, errHas: "permanent"},
		{name: "unavailable backend retried", spec: jobs.Spec{Command: "start-error unavailable", MaxAttempts: 2, Retry: fast}, state: jobs.StateDead, exit: -1, attempts: 2, errHas: "unavailable"},
		{name: "script the fake cannot read", spec: jobs.Spec{Command: "frobnicate now", MaxAttempts: 3}, state: jobs.StateFailed, exit: -1, attempts: 1, errHas: "unknown verb"},
	}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		spec := tc.spec
		spec.Backend = "fake"
		got, err := c.Submit(ctx, spec)
		if err != nil {
			t.Fatalf("%s: submit: %v", tc.name, err)
		}
		ids[i] = got.ID
	}
	for i, tc := range cases {
		r := sandruntest.WaitResult(t, c, ids[i], time.Minute)
		var problems []string
		if r.State != tc.state {
			problems = append(problems, fmt.Sprintf("state %s, want %s", r.State, tc.state))
		}
		if r.ExitCode != tc.exit {
			problems = append(problems, fmt.Sprintf("exit %d, want %d", r.ExitCode, tc.exit))
		}
		if r.Attempt != tc.attempts {
			problems = append(problems, fmt.Sprintf("attempt %d, want %d", r.Attempt, tc.attempts))
		}
		if r.Stdout.Head != tc.stdout || r.Stderr.Head != tc.stderr {
			problems = append(problems, fmt.Sprintf("stdout %q stderr %q, want %q %q", r.Stdout.Head, r.Stderr.Head, tc.stdout, tc.stderr))
		}
		if tc.errHas != "" && !strings.Contains(r.Error, tc.errHas) {
			problems = append(problems, fmt.Sprintf("error %q, want it to mention %q", r.Error, tc.errHas))
		}
		if len(problems) > 0 {
			t.Errorf("%s: %v (result %+v)", tc.name, problems, r)
		}
	}
	// A hanging job canceled by its owner ends canceled, and nothing is
	// left running on the backend.
	h, err := c.Submit(ctx, jobs.Spec{Command: "hang", Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		return fb.Live() == 1, fmt.Sprintf("%d runs live", fb.Live())
	})
	if _, err := c.Cancel(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if r := sandruntest.WaitResult(t, c, h.ID, 30*time.Second); r.State != jobs.StateCanceled {
		t.Fatalf("canceled hang: %+v", r)
	}
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		return fb.Live() == 0, fmt.Sprintf("%d runs still live after every job ended", fb.Live())
	})
	// Every attempt reached the backend with the job's identity.
	n := 0
	for _, r := range fb.Runs() {
		if r.Env["SANDRUN_JOB_ID"] != r.JobID || r.Attempt < 1 {
			t.Errorf("run %+v lacks its identity", r)
		}
		n++
	}
	if n < len(cases)+1 {
		t.Fatalf("%d runs reached the fake, want at least %d", n, len(cases)+1)
	}
}
