package vercel

import (
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// TestSandboxRequest: the create request carries the project, runtime,
// vcpus, network policy, tags, persistent false and a timeout from the
// job's deadline; the sandbox's session is stopped and the sandbox
// deleted once the job is over.
func TestSandboxRequest(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	cfg := fakeConfig(f)
	cfg.Runtime, cfg.VCPUs, cfg.NetworkPolicy = "python3.13", 4, NetworkDenyAll
	spec := backends.Spec{JobID: "job-1", Attempt: 3, Worker: "w1", Deployment: "prod", Command: "exit 5", KillGrace: 30 * time.Second}
	c := sandboxtest.OnlyCreateRequest(t, newBackend(t, cfg), spec, 10*time.Minute, 5, f.Created)
	if c.ProjectID != f.ProjectID || c.Runtime != "python3.13" || c.Resources == nil || c.Resources.VCPUs != 4 ||
		c.NetworkPolicy == nil || c.NetworkPolicy.Mode != "deny-all" || c.Persistent == nil || *c.Persistent {
		t.Errorf("create request %+v", c)
	}
	// 10m of deadline, 30s of grace, 1m of margin: 11m30s, give or take
	// the time the test took to get there.
	if c.Timeout == nil || *c.Timeout > (11*time.Minute+30*time.Second).Milliseconds() || *c.Timeout < (11*time.Minute).Milliseconds() {
		t.Errorf("timeout %v ms; want about 11m30s", c.Timeout)
	}
	sandboxtest.CheckMetadata(t, "tag", c.Tags,
		map[string]string{TagManaged: "true", TagDeployment: "prod", TagJob: "job-1", TagAttempt: "3", TagWorker: "w1"})
	if len(f.Sandboxes()) != 0 || len(f.Deleted()) != 1 || len(f.Stopped()) != 1 {
		t.Errorf("after the job: %d sandboxes left, %d deleted, %d sessions stopped; want 0, 1, 1",
			len(f.Sandboxes()), len(f.Deleted()), len(f.Stopped()))
	}
}

// TestNoDeadlineTimeout: a job without a deadline gets sandbox_timeout.
func TestNoDeadlineTimeout(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	if _, err := newBackend(t, fakeConfig(f)).Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Command: "true"}, backends.Output{}); err != nil {
		t.Fatal(err)
	}
	if c := f.Created(); len(c) != 1 || c[0].Timeout == nil || *c[0].Timeout != DefaultSandboxTimeout.Milliseconds() {
		t.Fatalf("create requests %+v; want a timeout of %s", c, DefaultSandboxTimeout)
	}
}

// TestUnsupportedSpec: sessions, container options and bad env names are
// refused before anything is created; a missing cwd is permanent.
func TestUnsupportedSpec(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	sandboxtest.RefusesSpecs(t, newBackend(t, fakeConfig(f)),
		backends.Spec{JobID: "s", Command: "true", Session: "k"},
		backends.Spec{JobID: "c", Command: "true", Container: &backends.ContainerOptions{Image: "alpine"}},
		backends.Spec{JobID: "e", Command: "true", Env: map[string]string{"A=B": "x"}},
		backends.Spec{JobID: "d", Command: "true", Dir: "/no/such/directory"},
	)
	if len(f.Sandboxes()) != 0 {
		t.Errorf("sandboxes left behind: %+v", f.Sandboxes())
	}
}

// TestStartTimeout: a sandbox whose session does not run within
// start_timeout fails the attempt as unavailable (retried later), and is
// removed.
func TestStartTimeout(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	f.SetStartPolls(1000)
	cfg := fakeConfig(f)
	cfg.StartTimeout = 300 * time.Millisecond
	sandboxtest.StartTimeout(t, newBackend(t, cfg), f)
}
