package daytona

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
	"github.com/sandrun/sandrun/internal/testenv"
)

// wsJob runs command in workspace ws of deployment "d1" (with dir, if
// any) and returns its stdout; it fails the test unless the job exits 0.
func wsJob(t *testing.T, b *Backend, ws, dir, command string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stdout, stderr testenv.Buffer
	spec := backends.Spec{JobID: "j-" + ws, Attempt: 1, Worker: "w1", Deployment: "d1", Workspace: ws, Dir: dir, Command: command}
	res, err := b.Run(ctx, spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("workspace %s: %q: %+v, %v; stdout %q, stderr %q", ws, command, res, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// volumeNamed returns the fake's live volume called name.
func volumeNamed(t *testing.T, f *daytonatest.Fake, name string) daytonatest.Volume {
	t.Helper()
	for _, v := range f.Volumes() {
		if v.Name == name && v.State != daytonatest.VolumeDeleted {
			return v
		}
	}
	t.Fatalf("no volume %s among %+v", name, f.Volumes())
	return daytonatest.Volume{}
}

// TestWorkspace: in session and execute mode, a job writes into its
// workspace (its working directory, /workspace) in one sandbox and the
// next job, in a new sandbox, reads it; a relative dir is inside it, an
// absolute one is not, and the workspace is mounted all the same; another
// workspace starts empty; every sandbox was created with the workspace's
// volume at /workspace, made and waited for until ready; RemoveWorkspace
// deletes it, after which the workspace starts empty again.
func TestWorkspace(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeSession, ModeExecute} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := daytonatest.Start(t)
			daytonatest.RequireVolumes(t)
			cfg := fakeConfig(f)
			cfg.Mode = mode
			cfg.StartTimeout = 20 * time.Second // A broken wait fails in time.
			b := newBackend(t, cfg)
			if !b.Capabilities().Workspaces {
				t.Fatal("Capabilities().Workspaces is false")
			}

			if out := wsJob(t, b, "o1-agent1", "", "pwd -P; echo one > note; mkdir sub"); out != WorkspaceDir+"\n" {
				t.Fatalf("first job's working directory %q, want %s", out, WorkspaceDir)
			}
			if out := wsJob(t, b, "o1-agent1", "", "cat note; echo two >> note"); out != "one\n" {
				t.Fatalf("second job read %q, want the first job's note", out)
			}
			if out := wsJob(t, b, "o1-agent1", "sub", "pwd -P; cat ../note"); out != WorkspaceDir+"/sub\none\ntwo\n" {
				t.Fatalf("job in dir sub: %q", out)
			}
			abs := t.TempDir()
			want, _ := filepath.EvalSymlinks(abs)
			if out := wsJob(t, b, "o1-agent1", abs, "pwd -P; cat "+WorkspaceDir+"/note"); out != want+"\none\ntwo\n" {
				t.Fatalf("job in absolute dir %s: %q", abs, out)
			}
			if out := wsJob(t, b, "o1-agent2", "", "pwd -P; ls -A"); out != WorkspaceDir+"\n" {
				t.Fatalf("another workspace is not empty: %q", out)
			}

			// The create requests carried the volumes, by ID, at /workspace;
			// each job had a sandbox of its own.
			v1, v2 := volumeNamed(t, f, "sandrun-ws-d1-o1-agent1"), volumeNamed(t, f, "sandrun-ws-d1-o1-agent2")
			created := f.Created()
			if len(created) != 5 || len(f.Deleted()) != 5 || len(f.Sandboxes()) != 0 {
				t.Fatalf("%d sandboxes created, %d deleted, %d left; want 5, 5, 0", len(created), len(f.Deleted()), len(f.Sandboxes()))
			}
			for i, c := range created {
				want := v1.ID
				if i == 4 {
					want = v2.ID
				}
				if len(c.Volumes) != 1 || c.Volumes[0].VolumeID != want || c.Volumes[0].MountPath != WorkspaceDir || c.Volumes[0].Subpath != "" {
					t.Errorf("create request %d: volumes %+v, want [{%s %s}]", i, c.Volumes, want, WorkspaceDir)
				}
			}
			if data, err := os.ReadFile(filepath.Join(v1.Dir, "note")); err != nil || string(data) != "one\ntwo\n" {
				t.Errorf("the volume's directory holds %q, %v", data, err)
			}

			if err := b.RemoveWorkspace(t.Context(), "d1", "o1-agent1"); err != nil {
				t.Fatalf("RemoveWorkspace: %v", err)
			}
			for _, v := range f.Volumes() {
				if v.ID == v1.ID && v.State != daytonatest.VolumeDeleted {
					t.Errorf("after RemoveWorkspace the volume is %s, want deleted", v.State)
				}
			}
			if _, err := os.Stat(v1.Dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the removed volume's directory: %v; want it gone", err)
			}
			if err := b.RemoveWorkspace(t.Context(), "d1", "o1-agent1"); err != nil {
				t.Errorf("RemoveWorkspace of a workspace that is gone: %v", err)
			}
			if out := wsJob(t, b, "o1-agent1", "", "ls -A"); out != "" {
				t.Errorf("the removed workspace is not empty: %q", out)
			}
			if v := volumeNamed(t, f, "sandrun-ws-d1-o1-agent1"); v.ID == v1.ID {
				t.Errorf("the workspace kept its removed volume %s", v.ID)
			}
		})
	}
}

// TestWorkspaceVolumeStates: a volume slow to be made is waited for; one
// in state error fails the job as permanent, naming its reason, before any
// sandbox is created, and removing the workspace deletes it; a volume not
// ready within start_timeout fails the job as unavailable.
func TestWorkspaceVolumeStates(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	daytonatest.RequireVolumes(t)
	f.SetVolumePolls(4)
	cfg := fakeConfig(f)
	cfg.StartTimeout = 20 * time.Second
	b := newBackend(t, cfg)
	wsJob(t, b, "slow", "", "echo x > f")

	if !f.BreakVolume("sandrun-ws-d1-slow", "bucket gone") {
		t.Fatal("no volume to break")
	}
	n := len(f.Created())
	_, err := b.Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Deployment: "d1", Workspace: "slow", Command: "true"}, backends.Output{})
	if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), "bucket gone") {
		t.Errorf("job on a broken volume: %v; want ErrPermanent naming the reason", err)
	}
	if len(f.Created()) != n {
		t.Errorf("a sandbox was created for the broken volume")
	}
	if err := b.RemoveWorkspace(t.Context(), "d1", "slow"); err != nil {
		t.Fatalf("RemoveWorkspace of a broken volume: %v", err)
	}
	if out := wsJob(t, b, "slow", "", "ls -A"); out != "" {
		t.Errorf("workspace after removal: %q", out)
	}

	f.SetVolumePolls(1000)
	cfg.StartTimeout = 300 * time.Millisecond
	_, err = newBackend(t, cfg).Run(t.Context(), backends.Spec{JobID: "k", Attempt: 1, Deployment: "d1", Workspace: "never", Command: "true"}, backends.Output{})
	if !errors.Is(err, backends.ErrUnavailable) || errors.Is(err, backends.ErrPermanent) {
		t.Errorf("volume never ready: %v; want ErrUnavailable", err)
	}
}

// TestVolumeName: workspace volumes are named as docker names its
// volumes, except that a name the API would take for a deleted volume's
// gets a "." more; names that are not one word are refused.
func TestVolumeName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ deployment, name, want string }{
		{"d1", "fce762d73eb8-agent1", "sandrun-ws-d1-fce762d73eb8-agent1"},
		{"", "a_b", "sandrun-ws--a_b"},
		{"d1", "x-deleted", "sandrun-ws-d1-x-deleted."},
	} {
		if got, err := volumeName(c.deployment, c.name); err != nil || got != c.want {
			t.Errorf("volumeName(%q, %q) = %q, %v; want %q", c.deployment, c.name, got, err, c.want)
		}
	}
	for _, c := range [][2]string{{"d1", ""}, {"d1", "a/b"}, {"d1", ".."}, {"d/1", "a"}, {"d1", "a.b"}} {
		if _, err := volumeName(c[0], c[1]); !errors.Is(err, backends.ErrPermanent) {
			t.Errorf("volumeName(%q, %q): %v; want ErrPermanent", c[0], c[1], err)
		}
	}
}

// TestFakeVolumes checks the fake's volumes against the API's rules that
// the backend relies on: a name is taken once; a new volume is not ready
// at once, and a sandbox cannot mount it until it is; a mounted volume
// cannot be deleted (409), nor one that is not ready (400); a deleted
// volume is not found by name.
func TestFakeVolumes(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	a := newBackend(t, fakeConfig(f)).api
	ctx := t.Context()
	v, err := a.createVolume(ctx, "vol")
	if err != nil || v.State != "pending_create" || v.ID == "" {
		t.Fatalf("create: %+v, %v; want pending_create", v, err)
	}
	if _, err := a.createVolume(ctx, "vol"); !httpsandbox.HasStatus(err, http.StatusBadRequest) {
		t.Errorf("second create of one name: %v; want 400", err)
	}
	if err := a.deleteVolume(ctx, v.ID); !httpsandbox.HasStatus(err, http.StatusBadRequest) {
		t.Errorf("delete before ready: %v; want 400", err)
	}
	body := createSandbox{AutoStopInterval: 15, Volumes: []sandboxVolume{{VolumeID: v.ID, MountPath: WorkspaceDir}}}
	if _, err := a.create(ctx, body); !httpsandbox.HasStatus(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "ready") {
		t.Errorf("sandbox with a volume not ready: %v; want 400", err)
	}
	for v.State != "ready" {
		if v, err = a.volumeByName(ctx, "vol"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.create(ctx, createSandbox{AutoStopInterval: 15, Volumes: []sandboxVolume{{VolumeID: v.ID, MountPath: "/proc/x"}}}); !httpsandbox.HasStatus(err, http.StatusBadRequest) {
		t.Errorf("mount path /proc/x: %v; want 400", err)
	}
	if _, err := a.create(ctx, createSandbox{AutoStopInterval: 15, Volumes: []sandboxVolume{{VolumeID: "nope", MountPath: WorkspaceDir}}}); !httpsandbox.HasStatus(err, http.StatusNotFound) {
		t.Errorf("unknown volume: %v; want 404", err)
	}
	if daytonatest.VolumesWork() == nil { // A sandbox with a volume can run here.
		sb, err := a.create(ctx, body)
		if err != nil {
			t.Fatalf("sandbox with a ready volume: %v", err)
		}
		if err := a.deleteVolume(ctx, v.ID); !httpsandbox.HasStatus(err, http.StatusConflict) {
			t.Errorf("delete while mounted: %v; want 409", err)
		}
		if err := a.remove(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.deleteVolume(ctx, v.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for {
		_, err := a.volumeByName(ctx, "vol")
		if httpsandbox.HasStatus(err, http.StatusNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if v, err := a.createVolume(ctx, "vol"); err != nil || v.State != "pending_create" {
		t.Errorf("create after deletion: %+v, %v", v, err)
	}
}
