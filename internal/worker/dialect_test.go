package worker_test

import (
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// The policy reads a command in the dialect of the shell its backend
// runs: `true &>/dev/null X` is one command to bash but `true &` then
// `X` to dash, so under /bin/sh it is refused as a dialect trap, and
// under a bash profile it is judged as bash reads it.
func TestPolicyDialectFollowsTheBackendShell(t *testing.T) {
	t.Parallel()
	e := setup(t)
	reg := backends.NewRegistry()
	sh, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bash, err := local.New(local.Config{Shell: "/bin/bash"})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("local", sh); err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("bash", bash); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg)
	cmd := "true &>/dev/null echo harmless"
	for backend, want := range map[string]struct {
		state jobs.State
		shell string
	}{"local": {jobs.StateDenied, "sh"}, "bash": {jobs.StateSucceeded, "bash"}} {
		spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: cmd, Backend: backend})
		if err != nil {
			t.Fatal(err)
		}
		r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
		if r.State != want.state || r.Policy == nil || r.Policy.Shell != want.shell {
			t.Errorf("%s: %s %+v, want %s judged as %s", backend, r.State, r.Policy, want.state, want.shell)
		}
		if backend == "local" && r.Rule != "shell-dialect" {
			t.Errorf("local: rule %q, want shell-dialect", r.Rule)
		}
	}
}
