package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

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
		d, err := docker.New(docker.Config{Image: img, AllowHostAccess: allow})
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

// kill -9 of a worker mid-job leaves its container running; the next start
// of that worker removes it.
func TestDockerOrphanRemovedOnWorkerRestart(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := dockertest.Engine(t)
	img := dockertest.Image(t, c)
	cfgFile := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfgFile, []byte("backends:\n  box: {kind: docker, image: "+img+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startProc(t, e.url, "docker-worker", "--config", cfgFile)
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Backend: "box", Command: "echo up; sleep 120", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	containerOf := func() (string, bool) {
		list, err := c.ContainerList(e.ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", docker.LabelJob+"="+spec.ID)})
		if err != nil || len(list.Items) == 0 {
			return "", false
		}
		return list.Items[0].ID, list.Items[0].State == "running"
	}
	var id string
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		var running bool
		id, running = containerOf()
		return running, "job container never ran"
	})
	_ = a.cmd.Process.Kill()
	<-a.done
	if _, running := containerOf(); !running {
		t.Fatal("container did not outlive its worker: nothing to test")
	}
	startProc(t, e.url, "docker-worker", "--config", cfgFile)
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		_, err := c.ContainerInspect(e.ctx, id, client.ContainerInspectOptions{})
		return err != nil, fmt.Sprintf("orphan container %s still there after the worker restarted", id) // gone
	})
}

// A job that allocates past a 32 MB limit ends failed, with reason oom and
// exit 137, and is not retried.
func TestDockerOOMEndsFailed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	img := dockertest.Image(t, dockertest.Engine(t))
	d, err := docker.New(docker.Config{Image: img, MemoryBytes: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry()
	if err := reg.Add("small", d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg)
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Backend: "small", MaxAttempts: 3,
		Command: `x=$(head -c 67108864 /dev/zero | tr '\0' 'x'); echo ${#x}`})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, time.Minute)
	if r.State != jobs.StateFailed || r.ExitCode != 137 || r.Attempt != 1 || !strings.Contains(r.Error, "oom") {
		t.Fatalf("result %s exit %d attempt %d error %q: want failed, 137, one attempt, reason oom", r.State, r.ExitCode, r.Attempt, r.Error)
	}
}
