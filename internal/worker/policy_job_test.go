package worker_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// The policy judges the whole job: its cwd and its env, not only the
// command. Every refused command here fails harmlessly if it ever ran (rm
// stops at an option it does not know; LD_PRELOAD of a missing library
// only warns).
func TestPolicyJudgesTheJobsCwdAndEnv(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	const noop = "rm -rf --sandrun-no-such-option "
	refused := []struct {
		name string
		spec jobs.Spec
		rule string
	}{
		{"cwd", jobs.Spec{Command: noop + "*", Cwd: "/"}, "rm-root"},
		{"env value", jobs.Spec{Command: noop + `"$T"`, Env: map[string]string{"T": "/usr"}}, "rm-root"},
		{"env code", jobs.Spec{Command: "true", Env: map[string]string{"LD_PRELOAD": "/nonexistent/sandrun.so"}}, "env-code"},
	}
	for _, tc := range refused {
		sub, err := e.c.As("subagent.agent-1").Submit(e.ctx, tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := sandruntest.WaitResult(t, e.c, sub.ID, 30*time.Second)
		if r.State != jobs.StateDenied || r.Rule != tc.rule {
			t.Errorf("%s: %s rule %q, want denied by %s", tc.name, r.State, r.Rule, tc.rule)
		}
	}

	// The same command in a scratch directory runs there.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "junk"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub, err := e.c.As("subagent.agent-1").Submit(e.ctx, jobs.Spec{Command: "rm -rf *", Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, sub.ID, 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Policy == nil || r.Policy.Dangerous {
		t.Fatalf("scratch job: %s policy %+v, want succeeded and clean", r.State, r.Policy)
	}
	if _, err := os.Stat(filepath.Join(dir, "junk")); !os.IsNotExist(err) {
		t.Fatalf("rm -rf * did not run in the job's cwd: %v", err)
	}
}
