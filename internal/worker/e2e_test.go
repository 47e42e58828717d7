package worker_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestSubmitToResult(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	dir := t.TempDir()

	cases := []struct {
		name   string
		spec   jobs.Spec
		state  jobs.State
		code   int
		stdout string
		stderr string
	}{
		{name: "ok", spec: jobs.Spec{Command: "echo hello"}, state: jobs.StateSucceeded, stdout: "hello\n"},
		{name: "exit3", spec: jobs.Spec{Command: "echo oops >&2; exit 3", MaxAttempts: 1}, state: jobs.StateFailed, code: 3, stderr: "oops\n"},
		{name: "env", spec: jobs.Spec{Command: `printf '%s|%s' "$GREETING" "${HOME:-unset}"`, Env: map[string]string{"GREETING": "hi there"}}, state: jobs.StateSucceeded, stdout: "hi there|unset"},
		{name: "cwd", spec: jobs.Spec{Command: "pwd", Cwd: dir}, state: jobs.StateSucceeded, stdout: dir + "\n"},
		// The worker's identity of the attempt wins over the spec's.
		{name: "attempt-env", spec: jobs.Spec{ID: "attempt-env-1", Command: `printf '%s|%s' "$SANDRUN_JOB_ID" "$SANDRUN_ATTEMPT"`,
			Env: map[string]string{"SANDRUN_ATTEMPT": "7"}}, state: jobs.StateSucceeded, stdout: "attempt-env-1|1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := c.Submit(ctx, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			r := sandruntest.WaitResult(t, c, spec.ID, 30*time.Second)
			if r.State != tc.state || r.ExitCode != tc.code {
				t.Fatalf("state %s exit %d (error %q), want %s exit %d", r.State, r.ExitCode, r.Error, tc.state, tc.code)
			}
			var out, errb bytes.Buffer
			if err := c.Output(ctx, r, &out, &errb); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.stdout || errb.String() != tc.stderr {
				t.Fatalf("stdout %q stderr %q, want %q %q", out.String(), errb.String(), tc.stdout, tc.stderr)
			}
			if r.Stdout.Head != tc.stdout {
				t.Fatalf("result head %q, want %q", r.Stdout.Head, tc.stdout)
			}
		})
	}
}

func TestInvalidSubmitPublishesNothing(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	for _, spec := range []jobs.Spec{
		{Command: "  "},
		{Command: "true", Queue: "Bad Queue"},
		{Command: "true", Env: map[string]string{"1X": "y"}},
	} {
		if _, err := c.Submit(ctx, spec); err == nil {
			t.Fatalf("submit %+v: want error", spec)
		}
	}
	info, err := st.JS.Stream(ctx, jobs.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 0 {
		t.Fatalf("%d messages published for invalid jobs", n)
	}
	_ = context.Background
	_ = strings.TrimSpace
}
