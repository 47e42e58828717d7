package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/daytona"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/backends/docker"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/backends/modal"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// plain is a backend that keeps no workspaces.
type plain struct{}

func (plain) Kind() string                   { return "plain" }
func (plain) Validate(context.Context) error { return nil }
func (plain) Capabilities() backends.Capabilities {
	return backends.Capabilities{}
}
func (plain) Run(context.Context, backends.Spec, backends.Output) (backends.Result, error) {
	return backends.Result{}, nil
}

// TestWorkspaceOnLocal: see checkWorkspace, with worker processes killed
// with SIGKILL between steps; and, in-process, a profile that keeps no
// workspaces fails such a job, saying so.
func TestWorkspaceOnLocal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	checkWorkspace(t, "local", root+"/", fmt.Sprintf("backends:\n  local: {kind: local, workspace_root: %s}\n", root))

	e := setup(t)
	reg := backends.NewRegistry()
	if err := reg.Add("plain", plain{}); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg)
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "true", Backend: "plain", Workspace: "agent1", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := sandruntest.WaitResult(t, e.c, spec.ID, 60*time.Second); r.State != jobs.StateFailed || !strings.Contains(r.Error, "workspace: profile plain (kind plain) does not support it") {
		t.Fatalf("a workspace on a profile without workspaces: %s %q", r.State, r.Error)
	}
}

// TestWorkspaceOnDocker: see checkWorkspace, with the workspace a named
// volume given to the profile's user (nobody); a job may not mount a
// workspace volume by name, which would reach another owner's.
func TestWorkspaceOnDocker(t *testing.T) {
	t.Parallel()
	img := dockertest.Image(t, dockertest.Engine(t))
	e := checkWorkspace(t, "box", docker.WorkspaceDir, fmt.Sprintf("backends:\n  box: {kind: docker, image: %s, pull: never}\n", img))
	d, err := docker.New(docker.Config{Image: img, Pull: docker.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, ws := range []string{"agent1", "other", "serial"} {
			_ = d.RemoveWorkspace(context.Background(), e.st.Deployment, jobs.WorkspaceStorage(e.c.Owner(), ws))
		}
		_ = d.Close()
	})
	reg := backends.NewRegistry()
	if err := reg.Add("box", d); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg)
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "ls /x", Backend: "box", MaxAttempts: 1,
		Container: &backends.ContainerOptions{Mounts: []string{"sandrun-ws-" + e.st.Deployment + "-" + jobs.WorkspaceStorage(e.c.Owner(), "agent1") + ":/x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r := sandruntest.WaitResult(t, e.c, spec.ID, 60*time.Second); r.State != jobs.StateFailed || !strings.Contains(r.Error, "are workspaces") {
		t.Fatalf("a job mounting a workspace volume by name: %s %q", r.State, r.Error)
	}
}

// TestWorkspaceOnSSH: see checkWorkspace, on a real sshd, the workspace a
// directory beside run_root on the remote host.
func TestWorkspaceOnSSH(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := sshtest.NewKey(t, dir, "id", "")
	srv := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key}})
	checkWorkspace(t, "lab", filepath.Join(dir, "workspaces")+"/", fmt.Sprintf(`backends:
  lab: {kind: ssh, host: 127.0.0.1, port: %d, user: %s, identity_files: [%s], known_hosts: [%s], run_root: %s}
`, srv.Port, srv.User, key.Path, srv.WriteKnownHosts(t), filepath.Join(dir, "runs")))
}

// checkWorkspace runs, on the profile backend of config through worker
// processes: job 1 installs a tool into workspace agent1, job 2 uses it,
// the worker is killed with SIGKILL and another started, job 3 reads what
// job 2 wrote; another workspace starts empty; four jobs of one workspace
// submitted at once run one at a time, in order, though the worker has
// two slots; and every ended job leaves the workspace's order. dir is the
// prefix of the workspace's path as jobs see it.
func checkWorkspace(t *testing.T, backend, dir, config string) env {
	t.Helper()
	e := setup(t)
	cfgFile := filepath.Join(t.TempDir(), "worker.yaml")
	// A job published while the server has not yet seen the killed
	// worker's connection close can be handed to that worker's last pull;
	// it comes back after the claim window, which must stay well inside
	// the 60 s each step waits.
	config = "worker:\n  claim_window: 10s\n" + config
	if err := os.WriteFile(cfgFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	n := 0
	return checkWorkspaceWith(t, e, backend, dir, func() func() {
		n++
		p := startProc(t, e.url, fmt.Sprintf("ws-%s-%d", backend, n), "--config", cfgFile)
		return func() {
			if err := p.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-p.done
		}
	})
}

// checkWorkspaceWith is checkWorkspace with the worker started by start,
// which returns how to kill it.
func checkWorkspaceWith(t *testing.T, e env, backend, dir string, start func() (kill func())) env {
	t.Helper()
	kill := start()
	run := func(ws, command string) (jobs.Result, string) {
		t.Helper()
		spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: command, Backend: backend, Workspace: ws, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := sandruntest.WaitResult(t, e.c, spec.ID, 60*time.Second)
		var out bytes.Buffer
		if err := e.c.Output(e.ctx, r, &out, &out); err != nil {
			t.Fatal(err)
		}
		return r, out.String()
	}
	if r, out := run("agent1", `mkdir -p bin && printf '#!/bin/sh\necho tool-ok\n' > bin/tool && chmod +x bin/tool && pwd`); r.State != jobs.StateSucceeded || !strings.HasPrefix(out, dir) {
		t.Fatalf("job 1: %s %q %q (want it to work in %s...)", r.State, out, r.Error, dir)
	}
	if r, out := run("agent1", `./bin/tool > out.txt && cat out.txt`); r.State != jobs.StateSucceeded || out != "tool-ok\n" {
		t.Fatalf("job 2: %s %q", r.State, out)
	}
	kill()
	start()
	if r, out := run("agent1", `cat out.txt`); r.State != jobs.StateSucceeded || out != "tool-ok\n" {
		t.Fatalf("job 3, on a new worker after SIGKILL: %s %q", r.State, out)
	}
	if r, out := run("other", `ls`); r.State != jobs.StateSucceeded || out != "" {
		t.Fatalf("another workspace starts empty: %s %q", r.State, out)
	}
	var ids []string
	for i := range 4 {
		spec, err := e.c.Submit(e.ctx, jobs.Spec{Workspace: "serial", Backend: backend, MaxAttempts: 1,
			Command: fmt.Sprintf("echo start-%d >> log; sleep 0.3; echo end-%d >> log", i, i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, spec.ID)
	}
	for _, id := range ids {
		if r := sandruntest.WaitResult(t, e.c, id, 60*time.Second); r.State != jobs.StateSucceeded {
			t.Fatalf("serial job %s: %s %s", id, r.State, r.Error)
		}
	}
	want := "start-0\nend-0\nstart-1\nend-1\nstart-2\nend-2\nstart-3\nend-3\n"
	if r, out := run("serial", `cat log`); r.State != jobs.StateSucceeded || out != want {
		t.Fatalf("the workspace's jobs overlapped or ran out of order:\n%s", out)
	}
	// A job's place goes right after its commit (a moment after its
	// result is visible).
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		lister, err := e.st.State.ListKeysFiltered(e.ctx, "wsq.>")
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for k := range lister.Keys() {
			left = append(left, k)
		}
		return len(left) == 0, fmt.Sprintf("places of ended jobs are left: %v", left)
	})
	// Listed, then removed: the next job of the workspace starts empty.
	list, err := e.c.Workspaces(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range list {
		names = append(names, w.Workspace+"@"+w.Backend)
	}
	if got := strings.Join(names, " "); got != fmt.Sprintf("agent1@%s other@%s serial@%s", backend, backend, backend) {
		t.Fatalf("workspace ls: %s", got)
	}
	spec, err := e.c.RemoveWorkspace(e.ctx, "agent1")
	if err != nil {
		t.Fatal(err)
	}
	if r := sandruntest.WaitResult(t, e.c, spec.ID, 60*time.Second); r.State != jobs.StateSucceeded {
		t.Fatalf("workspace rm: %s %q", r.State, r.Error)
	}
	if _, err := e.c.RemoveWorkspace(e.ctx, "agent1"); !errors.Is(err, client.ErrNoWorkspace) {
		t.Fatalf("a removed workspace is no longer listed: %v", err)
	}
	if r, out := run("agent1", `ls`); r.State != jobs.StateSucceeded || out != "" {
		t.Fatalf("after workspace rm, the workspace starts empty: %s %q", r.State, out)
	}
	return e
}

// TestWorkspaceIdleExpiry: with workspace_idle set, the reaper removes a
// workspace no job has used for that long (its storage and its listing);
// a workspace in use stays.
func TestWorkspaceIdleExpiry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	root := t.TempDir()
	reg := backends.NewRegistry()
	lb, err := local.New(local.Config{WorkspaceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("local", lb); err != nil {
		t.Fatal(err)
	}
	cfg := sandruntest.FastConfig()
	cfg.WorkspaceIdle = 3 * time.Second
	sandruntest.StartWorkerWith(t, e.st, cfg, reg)
	submit := func(ws, cmd string) string {
		t.Helper()
		spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: cmd, Workspace: ws, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := sandruntest.WaitResult(t, e.c, spec.ID, 60*time.Second)
		var out bytes.Buffer
		_ = e.c.Output(e.ctx, r, &out, &out)
		return out.String()
	}
	submit("idle", "echo x > f")
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		list, err := e.c.Workspaces(e.ctx)
		if err != nil {
			return false, err.Error()
		}
		kept := false
		for _, w := range list {
			kept = kept || w.Workspace == "idle"
		}
		if kept {
			submit("busy", "true") // keeps another workspace in use meanwhile
		}
		return !kept, fmt.Sprintf("workspace_idle 3s: still listed %+v", list)
	})
	if out := submit("idle", "ls"); out != "" {
		t.Fatalf("the expired workspace's storage is left: %q", out)
	}
	list, err := e.c.Workspaces(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, w := range list {
		names[w.Workspace] = true
	}
	if !names["busy"] {
		t.Fatalf("a workspace in use was expired: %+v", list)
	}
}

// TestWorkspaceOnModal: see checkWorkspace, on the Modal fake (a Volume
// per workspace; the fake's volumes are real directories), with
// in-process workers replaced between steps. The fake runs commands on
// this host without a mount namespace, so the path jobs print is the
// volume's directory, not /workspace.
func TestWorkspaceOnModal(t *testing.T) {
	t.Parallel()
	fake := modaltest.Start(t)
	dir := t.TempDir()
	tokens := map[string]string{"MODAL_TOKEN_ID": fake.TokenID, "MODAL_TOKEN_SECRET": fake.TokenSecret}
	mb, err := modal.New(modal.Config{Mode: modal.ModeDirect, ServerURL: fake.URL, ConfigPath: filepath.Join(dir, "absent.toml"),
		Image: "alpine:3.21", StateDir: dir, LookupEnv: func(k string) (string, bool) { v, ok := tokens[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mb.Close() })
	if err := mb.Validate(t.Context()); err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry()
	if err := reg.Add("cloud", mb); err != nil {
		t.Fatal(err)
	}
	e := setup(t)
	checkWorkspaceWith(t, e, "cloud", "", func() func() {
		return sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg).Stop
	})
}

// TestWorkspaceOnDaytona: see checkWorkspace, on the Daytona fake (a
// volume per workspace, mounted at /workspace in each command's own mount
// namespace), with in-process workers replaced between steps.
func TestWorkspaceOnDaytona(t *testing.T) {
	t.Parallel()
	dfake := daytonatest.Start(t)
	daytonatest.RequireVolumes(t)
	db, err := daytona.New(daytona.Config{APIURL: dfake.URL, PollInterval: 200 * time.Millisecond,
		LookupEnv: lookup(map[string]string{daytona.DefaultAPIKeyEnv: dfake.APIKey})})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Validate(t.Context()); err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry()
	if err := reg.Add("dt", db); err != nil {
		t.Fatal(err)
	}
	e := setup(t)
	checkWorkspaceWith(t, e, "dt", daytona.WorkspaceDir, func() func() {
		return sandruntest.StartWorkerWith(t, e.st, sandruntest.FastConfig(), reg).Stop
	})
}
