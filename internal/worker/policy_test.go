package worker_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// The same dangerous command is refused for a subagent (origin default:
// deny) and runs for a cron job whose schedule opted into approve.
func TestPolicyDeniesSubagentAndApprovesOptedInCron(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	home := filepath.Join(t.TempDir(), "home")
	marker := filepath.Join(home, "marker")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// HOME points into the test's temp dir: approved, `rm -rf ~` removes it.
	env := map[string]string{"HOME": home}

	denied, err := e.c.As("subagent.agent-1").Submit(e.ctx, jobs.Spec{Command: "rm -rf ~", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, denied.ID, 30*time.Second)
	if r.State != jobs.StateDenied || r.Rule != "rm-root" {
		t.Fatalf("subagent job: %s rule %q, want denied by rm-root", r.State, r.Rule)
	}
	if r.Policy == nil || r.Policy.Decision != "deny" || len(r.Policy.Matches) == 0 ||
		r.Policy.Matches[0].Rule != "rm-root" || r.Policy.Matches[0].Text == "" {
		t.Fatalf("policy record %+v: want the decision and the matched rule with its text", r.Policy)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("denied command ran: marker gone (%v)", err)
	}

	approved, err := e.c.As("cron.scheduler").Submit(e.ctx, jobs.Spec{Command: "rm -rf ~", Approval: "approve", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	r = sandruntest.WaitResult(t, e.c, approved.ID, 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Policy == nil || r.Policy.Decision != "approve" || !r.Policy.Dangerous {
		t.Fatalf("cron job: %s policy %+v, want succeeded and recorded as approved-dangerous", r.State, r.Policy)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("approved command did not run: %v", err)
	}
}

// A subagent cannot raise itself past the worker ceiling (allowlist).
func TestPolicyCeilingCapsSubagentApprove(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	// The origin is the submitter's (the subject it may publish to), not
	// the spec's.
	spec, err := e.c.As("subagent.agent-1").Submit(e.ctx, jobs.Spec{Command: "shutdown -h now", Approval: "approve"})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateDenied || r.Policy == nil || !r.Policy.Capped || r.Policy.Mode != "allowlist" {
		t.Fatalf("%s %+v: want denied under the capped allowlist mode", r.State, r.Policy)
	}
}
