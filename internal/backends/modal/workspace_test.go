package modal

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// TestWorkspaces: a workspace is a Modal Volume mounted at /workspace, the
// job's working directory (a relative Dir inside it, an absolute one as
// is). What a job writes there is read by the next job of the workspace,
// in a sandbox of its own; another workspace, or the same name in another
// deployment, starts empty; RemoveWorkspace deletes the volume, after which
// the workspace starts empty again, and removing it twice is no error.
func TestWorkspaces(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	b := newBackend(t, fakeConfig(t, f))
	if !b.Capabilities().Workspaces {
		t.Fatal("Capabilities().Workspaces is false")
	}
	const ws = "fce762d73eb8-agent1"
	run := func(deployment, workspace, dir, cmd string) string {
		t.Helper()
		var stdout, stderr testenv.Buffer
		spec := backends.Spec{JobID: "j", Attempt: 1, Worker: "w1", Deployment: deployment, Workspace: workspace, Dir: dir, Command: cmd}
		res, err := b.Run(t.Context(), spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run(%s %s dir %q: %s): %+v, %v; stderr %q", deployment, workspace, dir, cmd, res, err, stderr.String())
		}
		return stdout.String()
	}
	const list = "ls -A | tr '\\n' ' '"

	run("d1", ws, "", "echo kept >state; mkdir sub; echo deep >sub/file")
	if got := run("d1", ws, "", "cat state"); got != "kept\n" {
		t.Errorf("the workspace's second job read %q, want the first job's file", got)
	}
	if got := run("d1", ws, "sub", "cat file"); got != "deep\n" {
		t.Errorf("a job with dir sub read %q, want the file in the workspace's sub", got)
	}
	abs := t.TempDir()
	if got := run("d1", ws, abs, "pwd"); got != abs+"\n" {
		t.Errorf("a job with an absolute dir ran in %q, want %q", got, abs)
	}
	if got := run("d1", "fce762d73eb8-agent2", "", list); got != "" {
		t.Errorf("another workspace holds %q, want nothing", got)
	}
	if got := run("d2", ws, "", list); got != "" {
		t.Errorf("the workspace's name in another deployment holds %q, want nothing", got)
	}

	// Every job had a sandbox of its own, terminated, with the workspace's
	// volume mounted at /workspace.
	sbs := f.Sandboxes()
	if len(sbs) != 6 {
		t.Fatalf("%d sandboxes, want 6 (one per job)", len(sbs))
	}
	vols := f.Volumes()
	wantVol := []string{"sandrun-ws-d1-" + ws, "sandrun-ws-d1-" + ws, "sandrun-ws-d1-" + ws, "sandrun-ws-d1-" + ws,
		"sandrun-ws-d1-fce762d73eb8-agent2", "sandrun-ws-d2-" + ws}
	wantDir := []string{"/workspace", "/workspace", "/workspace/sub", abs, "/workspace", "/workspace"}
	for i, sb := range sbs {
		if sb.Status != "terminated" {
			t.Errorf("sandbox %d: status %q, want terminated", i, sb.Status)
		}
		if len(sb.Mounts) != 1 || sb.Mounts[0].Path != WorkspaceDir {
			t.Errorf("sandbox %d: mounts %+v, want one at %s", i, sb.Mounts, WorkspaceDir)
			continue
		}
		if v := vols[sb.Mounts[0].VolumeID]; v.Name != wantVol[i] {
			t.Errorf("sandbox %d: mounted volume %s named %q, want %q", i, sb.Mounts[0].VolumeID, v.Name, wantVol[i])
		}
		if ex := sb.Execs[0]; ex.Dir != wantDir[i] {
			t.Errorf("sandbox %d: exec dir %q, want %q", i, ex.Dir, wantDir[i])
		}
	}
	// Each Run waited for its terminated sandbox to end (Modal writes the
	// volume back then); jobs without a workspace do not wait.
	if n := f.Calls()["SandboxWaitV2"]; n < len(sbs) {
		t.Errorf("%d SandboxWaitV2 calls, want at least %d: one per workspace job", n, len(sbs))
	}
	if sbs[0].Mounts[0].VolumeID != sbs[1].Mounts[0].VolumeID || sbs[0].ID == sbs[1].ID {
		t.Errorf("the workspace's two jobs: sandboxes %s and %s, volumes %s and %s; want two sandboxes, one volume",
			sbs[0].ID, sbs[1].ID, sbs[0].Mounts[0].VolumeID, sbs[1].Mounts[0].VolumeID)
	}
	if data, err := os.ReadFile(filepath.Join(vols[sbs[0].Mounts[0].VolumeID].Dir, "state")); err != nil || string(data) != "kept\n" {
		t.Errorf("the volume's state file: %q, %v", data, err)
	}

	// Removed, it is gone on Modal's side and starts empty.
	removed := sbs[0].Mounts[0].VolumeID
	if err := b.RemoveWorkspace(t.Context(), "d1", ws); err != nil {
		t.Fatalf("RemoveWorkspace: %v", err)
	}
	if _, ok := f.Volumes()[removed]; ok {
		t.Errorf("volume %s is still there after RemoveWorkspace", removed)
	}
	if got := run("d1", ws, "", list); got != "" {
		t.Errorf("the removed workspace holds %q, want nothing", got)
	}
	if err := b.RemoveWorkspace(t.Context(), "d1", ws); err != nil {
		t.Errorf("RemoveWorkspace again: %v", err)
	}
	if err := b.RemoveWorkspace(t.Context(), "d1", "never-used"); err != nil {
		t.Errorf("RemoveWorkspace of a workspace never used: %v", err)
	}
	if n := len(f.Volumes()); n != 2 {
		t.Errorf("%d volumes left, want 2 (agent2 of d1, agent1 of d2; the second removal deleted the one agent1 of d1 got again)", n)
	}
	if live := f.Live(); len(live) != 0 {
		t.Errorf("sandboxes left running: %+v", live)
	}
}

// TestWorkspaceVolumeNames: volume names follow Modal's rules (letters,
// digits, - and _, at most 63 characters here), readable when they fit,
// hashed, distinct and stable when they do not; a workspace whose plain
// name would be too long for Modal still works.
func TestWorkspaceVolumeNames(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)
	long := "fce762d73eb8-" + strings.Repeat("x", 64)
	cases := map[string][2]string{
		"plain":       {"lq3k5v0a1b2c", "fce762d73eb8-agent1"},
		"long":        {"lq3k5v0a1b2c", long},
		"long2":       {"lq3k5v0a1b2c", long[:len(long)-1] + "y"},
		"no-dep":      {"", "fce762d73eb8-agent1"},
		"odd-chars":   {"d.1", "a/b"},
		"odd-chars-2": {"d_1", "a_b"},
	}
	seen := map[string]string{}
	for label, c := range cases {
		got := workspaceVolume(c[0], c[1])
		if !valid.MatchString(got) || !strings.HasPrefix(got, workspacePrefix) {
			t.Errorf("%s: %q is not a valid workspace volume name", label, got)
		}
		if got != workspaceVolume(c[0], c[1]) {
			t.Errorf("%s: not stable", label)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%s and %s share the volume name %q", label, other, got)
		}
		seen[got] = label
	}
	if got := workspaceVolume("lq3k5v0a1b2c", "fce762d73eb8-agent1"); got != "sandrun-ws-lq3k5v0a1b2c-fce762d73eb8-agent1" {
		t.Errorf("plain name %q, want sandrun-ws-<deployment>-<name>", got)
	}

	f := modaltest.Start(t)
	b := newBackend(t, fakeConfig(t, f))
	spec := backends.Spec{Deployment: "lq3k5v0a1b2c", Workspace: long, Command: "echo hi >f"}
	if _, err := b.Run(t.Context(), spec, backends.Output{}); err != nil {
		t.Fatalf("Run with a long workspace name: %v", err)
	}
	var stdout testenv.Buffer
	spec.Command = "cat f"
	if res, err := b.Run(t.Context(), spec, backends.Output{Stdout: &stdout}); err != nil || res.ExitCode != 0 || stdout.String() != "hi\n" {
		t.Errorf("second job of the long-named workspace: %+v, %v, stdout %q", res, err, stdout.String())
	}
	for _, v := range f.Volumes() {
		if v.Name != workspaceVolume(spec.Deployment, long) {
			t.Errorf("volume %q, want %q", v.Name, workspaceVolume(spec.Deployment, long))
		}
	}
}

// TestWorkspaceSpecs: without a workspace nothing is mounted and a
// relative dir is still refused; a relative dir that does not exist in
// the workspace, and a workspace with a session, fail as permanent.
func TestWorkspaceSpecs(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	b := newBackend(t, fakeConfig(t, f))
	if _, err := b.Run(t.Context(), backends.Spec{Command: "true"}, backends.Output{}); err != nil {
		t.Fatal(err)
	}
	if sb := f.Sandboxes()[0]; len(sb.Mounts) != 0 {
		t.Errorf("a job without a workspace got mounts %+v", sb.Mounts)
	}
	for _, spec := range []backends.Spec{
		{Command: "true", Dir: "rel"},
		{Command: "true", Workspace: "w1", Dir: "missing"},
		{Command: "true", Workspace: "w1", Session: "s1"},
	} {
		if _, err := b.Run(t.Context(), spec, backends.Output{}); !errors.Is(err, backends.ErrPermanent) {
			t.Errorf("Run(%+v): %v; want ErrPermanent", spec, err)
		}
	}
	if err := b.RemoveWorkspace(t.Context(), "d1", ""); !errors.Is(err, backends.ErrPermanent) {
		t.Errorf("RemoveWorkspace with no name: %v; want ErrPermanent", err)
	}
	if live := f.Live(); len(live) != 0 {
		t.Errorf("sandboxes left running: %+v", live)
	}
}
