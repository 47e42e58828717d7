package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// setup returns a prepared parent for the test's groups, under this
// process's own cgroup, or ends the test (testenv.Missing) where there
// is none to use.
func setup(t *testing.T) string {
	t.Helper()
	self, err := Self()
	if err != nil {
		testenv.Missing(t, "cgroup v2: %v", err)
	}
	dir := filepath.Join(self, "sandrun-test")
	if err := Prepare(dir); err != nil {
		testenv.Missing(t, "cgroup v2: %v", err)
	}
	return dir
}

func uniqueName(t *testing.T) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strings.ReplaceAll(t.Name(), "/", "_") + "-" + hex.EncodeToString(b)
}

func TestCreateRejectsUnsafeNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", ".", "..", "a/b", "../x", "a\x00b", "cgroup.procs", strings.Repeat("x", 256)} {
		if g, err := Create(t.TempDir(), name); err == nil {
			_ = g.Remove(0)
			t.Errorf("Create(%q) succeeded, want an error", name)
		}
	}
}

func TestPrepareRefusesOtherFilesystems(t *testing.T) {
	t.Parallel()
	if err := Prepare(t.TempDir()); !errors.Is(err, ErrNoCgroup2) {
		t.Errorf("Prepare(a temp dir) = %v, want ErrNoCgroup2", err)
	}
	if err := Prepare("relative"); err == nil {
		t.Error("Prepare(relative) succeeded, want an error")
	}
}

// TestKillReachesEscapedProcess starts a shell in a group whose child
// leaves its session and process group: Kill still ends it, and Remove
// then takes the group away.
func TestKillReachesEscapedProcess(t *testing.T) {
	t.Parallel()
	parent := setup(t)
	g, err := Create(parent, uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `setsid sleep 300 & echo $!; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: g.FD()}
	var out testenv.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		_ = g.Remove(0)
		t.Fatal(err)
	}
	out.WaitFor(t, "\n", 5*time.Second)
	// The shell printed $! after its fork: both are in the group.
	pids, err := g.Procs()
	if len(pids) != 2 || !slices.Contains(pids, cmd.Process.Pid) {
		t.Errorf("Procs = %v, %v; want the shell %d and its child", pids, err, cmd.Process.Pid)
	}
	if full, err := g.Populated(); !full || err != nil {
		t.Errorf("Populated = %t, %v; want true", full, err)
	}
	if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := g.Remove(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("group %s after Remove: %v, want it gone", g.Path(), err)
	}
}

// TestRemoveGivesUpOnAPopulatedGroup: Remove kills nothing, and reports
// processes that stay.
func TestRemoveGivesUpOnAPopulatedGroup(t *testing.T) {
	t.Parallel()
	parent := setup(t)
	g, err := Create(parent, uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "exec sleep 300")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	if err := cmd.Start(); err != nil {
		_ = g.Remove(0)
		t.Fatal(err)
	}
	if err := g.Remove(100 * time.Millisecond); !errors.Is(err, ErrPopulated) {
		t.Errorf("Remove = %v, want ErrPopulated", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// The first Remove closed the group's fd; a second still removes it.
	if err := g.Remove(5 * time.Second); err != nil {
		t.Error(err)
	}
}

// TestRemoveStale removes empty groups older than the bound, and only
// those with the prefix: not a young one, not a populated one.
func TestRemoveStale(t *testing.T) {
	t.Parallel()
	parent := filepath.Join(setup(t), uniqueName(t))
	if err := Prepare(parent); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(parent) })
	groups := map[string]*Group{}
	for _, name := range []string{"job-old", "job-young", "job-busy", "other-old"} {
		g, err := Create(parent, name)
		if err != nil {
			t.Fatal(err)
		}
		groups[name] = g
		t.Cleanup(func() { _ = g.Kill(); _ = g.Remove(5 * time.Second) })
	}
	cmd := exec.Command("/bin/sh", "-c", "exec sleep 300")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: groups["job-busy"].FD()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Age every group but the young one by an hour.
	old := time.Now().Add(-time.Hour)
	for _, name := range []string{"job-old", "job-busy", "other-old"} {
		if err := os.Chtimes(groups[name].Path(), old, old); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RemoveStale(parent, "job-", time.Minute)
	if n != 1 || err != nil {
		t.Errorf("RemoveStale = %d, %v; want 1, nil", n, err)
	}
	for name, g := range groups {
		_, err := os.Stat(g.Path())
		if gone := errors.Is(err, fs.ErrNotExist); gone != (name == "job-old") {
			t.Errorf("%s: gone %t after RemoveStale, want %t", name, gone, name == "job-old")
		}
	}
}
