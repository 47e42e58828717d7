// Package cgroup makes, kills and removes cgroup v2 groups, so that a
// job's processes can be ended together whatever they did to their
// process group or session. It uses only the core interface files
// (cgroup.procs, cgroup.kill, cgroup.events): no controller need be
// enabled, and no limit is set. It is Linux-only.
//
// A group's life:
//
//  1. Prepare once: the parent directory exists on a cgroup2 mount and
//     the kernel has cgroup.kill (5.14 or later).
//  2. Create one group per workload, and start its first process in it
//     with clone3's CLONE_INTO_CGROUP (syscall.SysProcAttr.UseCgroupFD
//     and CgroupFD set to Group.FD): every descendant is born inside,
//     and none can leave it short of writing to a cgroup.procs outside.
//  3. Signal, Kill: any number of times, from any goroutine.
//  4. Remove, after the workload's first process has been reaped.
package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoKill reports a kernel without cgroup.kill (before 5.14), or a
// parent that is the root cgroup (which has none).
var ErrNoKill = errors.New("no cgroup.kill (kernel before 5.14, or the root cgroup)")

// ErrPopulated reports a group that still held processes when Remove
// gave up waiting for them.
var ErrPopulated = errors.New("cgroup still populated")

// Prepare makes dir (and its parents) if needed and checks that groups
// can be made and killed in it: it is on a cgroup2 mount, and it has
// cgroup.kill. It does not check that this process may move processes
// into them; starting one is the only test of that.
func Prepare(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("cgroup %q: not an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return fmt.Errorf("cgroup %s: %w: not on a cgroup2 mount", dir, ErrNoCgroup2)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = ErrNoKill
		}
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return nil
}

// Group is one cgroup v2 directory that this process made. Its methods
// may be called concurrently, except Remove, which ends it.
type Group struct {
	path string
	dir  *os.File // Open from Create to Remove: the fd processes start into.
}

// Create makes the group name in parent (which Prepare accepted). name
// must be one path element that the cgroup filesystem accepts: not empty,
// ".", "..", nor with a '/' or a NUL, at most 255 bytes, and not starting
// with "cgroup." (the interface files' prefix). It fails when the group
// exists: a caller makes names unique.
func Create(parent, name string) (*Group, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(parent, name)
	if err := os.Mkdir(p, 0o750); err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	dir, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		_ = unix.Rmdir(p)
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return &Group{path: p, dir: dir}, nil
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 255 ||
		strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, "cgroup.") {
		return fmt.Errorf("cgroup name %q: want one path element (at most 255 bytes, no cgroup. prefix)", name)
	}
	return nil
}

// Path returns the group's directory.
func (g *Group) Path() string { return g.path }

// FD returns a descriptor of the group's directory, for
// syscall.SysProcAttr.CgroupFD. It is valid until Remove.
func (g *Group) FD() int { return int(g.dir.Fd()) }

// Procs returns the processes in the group.
func (g *Group) Procs() ([]int, error) {
	data, err := os.ReadFile(filepath.Join(g.path, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("cgroup: %s: bad pid %q", g.path, f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// Signal sends sig to every process in the group. A process that forks
// while the list is read may have a child that misses sig; Kill misses
// none. A pid whose process has gone is skipped.
func (g *Group) Signal(sig syscall.Signal) error {
	pids, err := g.Procs()
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("cgroup: kill %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// Kill sends SIGKILL to every process in the group and to those forked
// meanwhile, by writing 1 to cgroup.kill. It does not wait for them.
func (g *Group) Kill() error {
	f, err := os.OpenFile(filepath.Join(g.path, "cgroup.kill"), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	_, err = f.Write([]byte("1"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cgroup: kill %s: %w", g.path, err)
	}
	return nil
}

// Populated reports whether a process (not a zombie) is in the group.
func (g *Group) Populated() (bool, error) {
	data, err := os.ReadFile(filepath.Join(g.path, "cgroup.events"))
	if err != nil {
		return false, fmt.Errorf("cgroup: %w", err)
	}
	return populated(data)
}

func populated(events []byte) (bool, error) {
	for line := range bytes.Lines(events) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("populated ")); ok {
			return string(v) != "0", nil
		}
	}
	return false, fmt.Errorf("cgroup: no populated line in cgroup.events %q", events)
}

// Remove waits, at most within, for the group to empty (killed processes
// take a moment to go) and removes it. It does not kill anything: call
// Kill first. When processes remain, the group stays and the error wraps
// ErrPopulated; the group takes no new process then, but Remove may be
// called again to remove it once they have gone.
func (g *Group) Remove(within time.Duration) error {
	defer func() { _ = g.dir.Close() }()
	if err := g.waitEmpty(within); err != nil {
		return err
	}
	if err := unix.Rmdir(g.path); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("cgroup: remove %s: %w", g.path, err)
	}
	return nil
}

// RemoveStale removes the groups in parent whose names start with prefix,
// that hold no process and that were made more than olderThan ago: those
// of workloads whose owner died before removing them (a kill -9). An
// empty group younger than that may be one another process has just made
// and is about to start a process in; a populated one is never touched.
// It returns how many it removed.
func RemoveStale(parent, prefix string, olderThan time.Duration) (int, error) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return 0, fmt.Errorf("cgroup: %w", err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < olderThan {
			continue // Gone meanwhile, or too young to tell.
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.events"))
		if err != nil {
			continue
		}
		if full, err := populated(data); err != nil || full {
			continue
		}
		// EBUSY: a process (or a child group) arrived since the check.
		switch err := unix.Rmdir(p); {
		case err == nil:
			removed++
		case !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EBUSY):
			errs = append(errs, fmt.Errorf("cgroup: remove %s: %w", p, err))
		}
	}
	return removed, errors.Join(errs...)
}

// waitEmpty waits until cgroup.events says "populated 0". The kernel
// wakes poll(2) with POLLPRI when the file changes; the poll is also
// bounded by a short tick, so that a missed wake-up costs at most that.
func (g *Group) waitEmpty(within time.Duration) error {
	const tick = 50 * time.Millisecond
	f, err := os.Open(filepath.Join(g.path, "cgroup.events"))
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	defer func() { _ = f.Close() }()
	deadline := time.Now().Add(within)
	buf := make([]byte, 256)
	for {
		n, err := f.ReadAt(buf, 0)
		if n == 0 && err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
		full, err := populated(buf[:n])
		if err != nil || !full {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("cgroup %s: %w after %s", g.path, ErrPopulated, within)
		}
		fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI}}
		if _, err := unix.Poll(fds, int(min(left, tick).Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("cgroup: poll %s: %w", f.Name(), err)
		}
	}
}
