package docker

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// pidEngine answers ContainerInspect with a running container whose PID
// is pid; nothing else is called by initReady.
type pidEngine struct {
	engine
	pid int
}

func (e pidEngine) ContainerInspect(context.Context, string, client.ContainerInspectOptions) (client.ContainerInspectResult, error) {
	return client.ContainerInspectResult{Container: container.InspectResponse{State: &container.State{Running: true, Pid: e.pid}}}, nil
}

// fakeProc writes a /proc entry for pid 4242 in the cgroup of container
// cgroupOf, whose children file holds children.
func fakeProc(t *testing.T, cgroupOf, children string) (root, childrenFile string) {
	t.Helper()
	root = t.TempDir()
	task := filepath.Join(root, "4242", "task", "4242")
	if err := os.MkdirAll(task, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "4242", "cgroup"), []byte("0::/system.slice/docker-"+cgroupOf+".scope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	childrenFile = filepath.Join(task, "children")
	if err := os.WriteFile(childrenFile, []byte(children), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, childrenFile
}

func TestInitReady(t *testing.T) {
	const id = "c0ffee"
	t.Run("waits for the init's child", func(t *testing.T) {
		root, children := fakeProc(t, id, "")
		d := &Docker{api: pidEngine{pid: 4242}, procRoot: root}
		var forked atomic.Bool
		go func() {
			time.Sleep(100 * time.Millisecond)
			forked.Store(true)
			_ = os.WriteFile(children, []byte("4243 "), 0o644)
		}()
		if seen := d.initReady(t.Context(), id, time.Minute); !seen || !forked.Load() {
			t.Fatalf("seen %v, returned after the child %v; want true, after", seen, forked.Load())
		}
	})
	t.Run("another container's process", func(t *testing.T) {
		root, _ := fakeProc(t, "other", "4243 ")
		d := &Docker{api: pidEngine{pid: 4242}, procRoot: root}
		if d.initReady(t.Context(), id, time.Minute) {
			t.Fatal("seen for a pid in another cgroup: the worker is in a PID namespace of its own, and must fall back")
		}
	})
	t.Run("processes not visible", func(t *testing.T) {
		d := &Docker{api: pidEngine{pid: 4242}, procRoot: t.TempDir()}
		if d.initReady(t.Context(), id, time.Minute) {
			t.Fatal("seen with no /proc entry: must fall back")
		}
	})
	t.Run("bounded by limit", func(t *testing.T) {
		root, _ := fakeProc(t, id, "")
		d := &Docker{api: pidEngine{pid: 4242}, procRoot: root}
		begun := time.Now()
		if !d.initReady(t.Context(), id, 50*time.Millisecond) {
			t.Fatal("not seen: a visible init that never forks is still watched, and the wait ends at the limit")
		}
		if waited := time.Since(begun); waited < 50*time.Millisecond {
			t.Fatalf("returned after %s, before the limit, with no child", waited)
		}
	})
}
