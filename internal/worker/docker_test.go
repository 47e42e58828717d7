package worker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/docker"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// A docker job whose mount reaches the host ends denied, naming the host
// path, on a profile that does not allow host access; on one that does, it
// runs — and the policy's host-only rules apply to it, while an isolated
// container skips them.
func TestDockerHostAccessThroughTheWorker(t *testing.T) {
	t.Parallel()
	e := setup(t)
	img := dockertest.Image(t, dockertest.Engine(t))
	reg := backends.NewRegistry()
	for name, allow := range map[string]bool{"box": false, "hostbox": true} {
		d, err := docker.New(docker.Config{Image: img, WorkerName: "w", AllowHostAccess: allow})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Add(name, d); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = reg.Close() })
	sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "f"), []byte("host file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(hostDir, 0o755)
	mount := &backends.ContainerOptions{Mounts: []string{hostDir + ":/data:ro"}}
	run := func(backend, cmd string, opts *backends.ContainerOptions) jobs.Result {
		t.Helper()
		spec, err := e.c.Submit(e.ctx, jobs.Spec{Backend: backend, Command: cmd, Container: opts, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return sandruntest.WaitResult(t, e.c, spec.ID, time.Minute)
	}
	if r := run("box", "cat /data/f", mount); r.State != jobs.StateDenied || r.Rule != "host-access" || !strings.Contains(r.Error, hostDir) {
		t.Fatalf("refused profile: %s %s %q", r.State, r.Rule, r.Error)
	}
	if r := run("hostbox", "cat /data/f", mount); r.State != jobs.StateSucceeded || r.Stdout.Head != "host file\n" {
		t.Fatalf("allowing profile: %s %q %q", r.State, r.Stdout.Head, r.Error)
	}
	// Host access: host-only rules apply (rm-root is host-only).
	if r := run("hostbox", "rm -rf / 2>/dev/null; echo done", mount); r.State != jobs.StateDenied || r.Rule != "rm-root" {
		t.Fatalf("host-access job with rm -rf /: %s %s, want denied by rm-root", r.State, r.Rule)
	}
	// Isolated: the host-only rule is skipped and the command runs inside.
	if r := run("box", "rm -rf / 2>/dev/null; echo done", nil); r.State != jobs.StateSucceeded || r.Stdout.Head != "done\n" {
		t.Fatalf("isolated job with rm -rf /: %s %q %q", r.State, r.Stdout.Head, r.Error)
	}
}
