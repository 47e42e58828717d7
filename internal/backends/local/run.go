package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/cgroup"
)

// outputDrain bounds how long Run keeps reading the job's output after its
// main process has ended and its processes have been killed. Only a
// process that left the group, with no cgroup to hold it, can still hold
// the pipes open by then.
const outputDrain = 2 * time.Second

// Run runs spec.Command and copies its output to out as it is produced; a
// nil writer discards. It returns once the main process has ended, the
// job's other processes have been killed, the output has been copied and
// the job's cgroup, if it has one, has been removed.
//
// The error is nil when the command ran to completion, whatever its exit
// code. It wraps context.Cause(ctx) when ctx ended the run (or was done
// before it started). It wraps backends.ErrPermanent for a spec that can
// never run here (a missing Dir, an invalid env key, a NUL in Command).
// A failing writer does not stop the job: its output is discarded from
// then on and the write error is returned after the command has ended.
// With Config.Cgroup required, failing to make the job's cgroup fails the
// run without a start (retryably: it wraps backends.ErrUnavailable when
// the host has no cgroups to offer).
func (l *Local) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	if ctx.Err() != nil {
		return backends.Result{ExitCode: -1}, fmt.Errorf("local: not started: %w", context.Cause(ctx))
	}
	cmd, err := l.command(spec)
	if err != nil {
		return backends.Result{ExitCode: -1}, err
	}
	grp, err := l.cg.create(spec)
	if err != nil {
		return backends.Result{ExitCode: -1}, err
	}
	if grp != nil {
		// The main process is born in the group (clone3 with
		// CLONE_INTO_CGROUP), so no descendant can be forked outside it.
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, grp.FD()
	}
	defer l.cg.remove(grp, spec)
	return runCmd(ctx, cmd, spec.Grace(), out, grp, spec.StartGate)
}

// LookPath finds an executable on PATH, for backends that wrap a runtime's
// CLI (os/exec stays in this package).
func LookPath(name string) (string, error) { return exec.LookPath(name) }

// Process is a program that a backend wrapping a runtime's CLI (apptainer,
// say) runs the way this package runs job commands. It is the one way,
// outside this package, to start a process for a job.
type Process struct {
	// Path is the program's absolute path; Args follow it (argv[1:]).
	Path string
	Args []string
	// Env is the program's whole environment; nothing else is inherited.
	Env []string
	// Dir is its working directory; empty means the worker's.
	Dir string
	// StartGate, when set, is asked as Spec.StartGate is, and its
	// deadline checked in the started process before it execs Path.
	StartGate func() (until time.Time, err error)
}

// RunProcess runs p as Run runs a job command: in a process group of its
// own (never a cgroup), TERM then KILL after grace when ctx is done, what
// is left of the group killed when it ends, output copied to out. The
// error contract is Run's.
func RunProcess(ctx context.Context, p Process, grace time.Duration, out backends.Output) (backends.Result, error) {
	if ctx.Err() != nil {
		return backends.Result{ExitCode: -1}, fmt.Errorf("local: not started: %w", context.Cause(ctx))
	}
	if !filepath.IsAbs(p.Path) {
		return backends.Result{ExitCode: -1}, fmt.Errorf("local: program %q: must be an absolute path: %w", p.Path, backends.ErrPermanent)
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Dir = p.Dir
	cmd.Env = p.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputDrain
	return runCmd(ctx, cmd, grace, out, nil, p.StartGate)
}

// runCmd starts cmd (a process group leader, born in grp when grp is not
// nil) and waits for it; see Run. It does not remove grp.
func runCmd(ctx context.Context, cmd *exec.Cmd, grace time.Duration, out backends.Output, grp *cgroup.Group, gate func() (time.Time, error)) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	stdout, stderr := guard(out.Stdout), guard(out.Stderr)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}

	var late *os.File
	if gate != nil {
		until, err := gate()
		if err != nil {
			return res, fmt.Errorf("local: not started: %w", err)
		}
		if !until.IsZero() {
			if late, err = startBy(cmd, until); err != nil {
				return res, err
			}
			defer func() { _ = late.Close() }()
		}
	}
	afterGate()
	res.StartedAt = time.Now()
	err := cmd.Start()
	if late != nil {
		// The started process holds the write end; this one is not needed.
		_ = cmd.ExtraFiles[0].Close()
	}
	if err != nil {
		if errors.Is(err, syscall.E2BIG) {
			err = fmt.Errorf("%w: %w", err, backends.ErrPermanent)
		}
		return res, fmt.Errorf("local: start: %w", err)
	}
	stopped, ended, err := wait(ctx, cmd, grp, grace)
	if late != nil && startedLate(late) {
		// The process found the deadline passed and ran nothing: the
		// holder was frozen between the gate and the start. Ask the gate
		// again for why (a lost lease); if it has since recovered (a
		// renewal came in between), the attempt failed to start in time.
		res = backends.Result{ExitCode: -1, StartedAt: res.StartedAt, FinishedAt: ended}
		if _, gerr := gate(); gerr != nil {
			return res, fmt.Errorf("local: not started: %w", gerr)
		}
		return res, fmt.Errorf("local: not started: the process began after its start deadline: %w", backends.ErrUnavailable)
	}
	res.FinishedAt = ended
	if cmd.ProcessState != nil {
		fillResult(&res, cmd.ProcessState)
	}
	var exitErr *exec.ExitError
	switch {
	case stopped:
		return res, fmt.Errorf("local: stopped: %w", context.Cause(ctx))
	case err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: an escaped process held the output open; the job
		// itself completed, so it is not a failure of the run.
		return res, fmt.Errorf("local: wait: %w", err)
	case stdout != nil && stdout.err != nil:
		return res, fmt.Errorf("local: writing stdout: %w", stdout.err)
	case stderr != nil && stderr.err != nil:
		return res, fmt.Errorf("local: writing stderr: %w", stderr.err)
	}
	return res, nil
}

// wait waits for cmd's main process to end, stopping the job's processes
// if ctx is done first, kills whatever is left of them and reaps cmd. It
// reports whether ctx stopped the job, when the main process ended, and
// the error from cmd.Wait.
func wait(ctx context.Context, cmd *exec.Cmd, grp *cgroup.Group, grace time.Duration) (stopped bool, ended time.Time, err error) {
	// Setpgid with Pgid 0: the group is named after its leader.
	job := jobProcs{pgid: cmd.Process.Pid, grp: grp}
	exited := make(chan struct{})
	stoppedc := make(chan bool, 1)
	go func() { stoppedc <- stopOnDone(ctx, job, grace, exited) }()

	// Kill the group while its leader is an unreaped zombie: until it is
	// reaped, its pid, hence the group id, cannot be given to another.
	waitErr := waitExited(job.pgid)
	ended = time.Now()
	if waitErr == nil {
		job.kill()
	}
	close(exited)
	stopped = <-stoppedc
	err = cmd.Wait()
	if waitErr != nil { // Cannot happen short of a kernel bug; do what is still possible.
		ended = time.Now()
		job.kill()
	}
	return stopped, ended, err
}

// jobProcs are a job's processes: its process group and, when it has one,
// every process in its cgroup.
type jobProcs struct {
	pgid int
	grp  *cgroup.Group // nil: the process group alone.
}

// signal sends sig to the group and to every process in the cgroup.
// Errors are ignored, as signalGroup's are: the cgroup's members are
// signalled one by one, and one that has just gone is no failure.
func (p jobProcs) signal(sig syscall.Signal) {
	signalGroup(p.pgid, sig)
	if p.grp != nil {
		_ = p.grp.Signal(sig)
	}
}

// kill sends SIGKILL to the group and writes cgroup.kill, which reaches
// the processes being forked as it runs. Should that write fail, the
// cgroup's members are killed one by one instead.
func (p jobProcs) kill() {
	signalGroup(p.pgid, syscall.SIGKILL)
	if p.grp != nil && p.grp.Kill() != nil {
		_ = p.grp.Signal(syscall.SIGKILL)
	}
}

// command builds the exec.Cmd for spec, or returns an error wrapping
// backends.ErrPermanent when spec cannot run here.
func (l *Local) command(spec backends.Spec) (*exec.Cmd, error) {
	if strings.ContainsRune(spec.Command, 0) {
		return nil, fmt.Errorf("local: command: contains a NUL byte: %w", backends.ErrPermanent)
	}
	env, err := l.environ(spec.Env)
	if err != nil {
		return nil, err
	}
	dir := spec.Dir
	if spec.Workspace != "" {
		ws, err := l.workspace(spec.Deployment, spec.Workspace)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(ws, dir)
		}
	}
	if dir != "" {
		if err := checkDir(dir); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(l.shell, "-c", spec.Command)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: l.cred}
	cmd.WaitDelay = outputDrain
	return cmd, nil
}

// checkDir reports a working directory the job cannot use. Missing, not a
// directory or not accessible are permanent; other failures may pass.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("local: cwd: %w: %w", err, backends.ErrPermanent)
	case err != nil:
		return fmt.Errorf("local: cwd: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("local: cwd %q: not a directory: %w", dir, backends.ErrPermanent)
	}
	return nil
}

// stopOnDone stops the job when ctx is done before exited is closed:
// SIGTERM first, SIGKILL after grace. It reports whether ctx stopped it.
func stopOnDone(ctx context.Context, job jobProcs, grace time.Duration, exited <-chan struct{}) bool {
	select {
	case <-exited:
		return false
	case <-ctx.Done():
	}
	// A command that had already ended on its own when ctx was done (say
	// the worker was frozen and both became ready at once) was not
	// stopped: its own exit status stands.
	if hasExited(job.pgid) {
		return false
	}
	job.signal(syscall.SIGTERM)
	job.signal(syscall.SIGCONT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		job.kill()
	}
	return true
}

// signalGroup sends sig to every process in group pgid. Errors are
// ignored: ESRCH means the group is already gone, and EPERM (a member
// that changed its credentials) cannot be helped from here.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

// waitExited blocks until process pid has exited, without reaping it.
func waitExited(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// hasExited reports, without waiting or reaping, whether process pid has
// already exited.
func hasExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		// With WNOHANG, Linux zeroes info when the child is still
		// running; an exited child reports SIGCHLD.
		return err == nil && info.Signo == int32(unix.SIGCHLD)
	}
}

// fillResult copies the exit status and resource usage of ps into res.
func fillResult(res *backends.Result, ps *os.ProcessState) {
	res.ExitCode = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.ExitCode = -1
		res.Signal = unix.SignalName(ws.Signal())
		if res.Signal == "" {
			res.Signal = ws.Signal().String()
		}
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
		res.UserCPU = time.Duration(ru.Utime.Nano())
		res.SysCPU = time.Duration(ru.Stime.Nano())
		res.MaxRSSBytes = ru.Maxrss * 1024 // KiB on Linux.
	}
}

// guardedWriter forwards to w until a write fails, then discards, so that
// a failing sink does not kill the job with SIGPIPE. exec.Cmd writes to it
// from one goroutine; err is read after cmd.Wait has returned.
type guardedWriter struct {
	w   io.Writer
	err error
}

func guard(w io.Writer) *guardedWriter {
	if w == nil {
		return nil
	}
	return &guardedWriter{w: w}
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	if g.err == nil {
		n, err := g.w.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		g.err = err
	}
	return len(p), nil
}

// workspace returns the directory of workspace name, made (and given to
// the profile's user) on first use.
func (l *Local) workspace(deployment, name string) (string, error) {
	parent, err := l.workspaceParent(deployment, name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", err, backends.ErrPermanent)
	}
	// Traversable by all: the profile's user (not the worker's) must reach
	// its own workspace, 0700, inside.
	if err := os.MkdirAll(parent, 0o711); err != nil { //nolint:gosec // G301: only x for others, no listing
		return "", fmt.Errorf("local: workspace_root: %w", err)
	}
	if l.cred != nil {
		if err := traversable(parent, l.cred); err != nil {
			return "", fmt.Errorf("local: workspace_root %s: %w: give it o+x or set workspace_root elsewhere (%w)", l.wsRoot, err, backends.ErrPermanent)
		}
	}
	dir := filepath.Join(parent, name)
	err = os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return dir, nil
	}
	if err != nil {
		return "", fmt.Errorf("local: workspace %s: %w", name, err)
	}
	if l.cred != nil {
		if err := os.Chown(dir, int(l.cred.Uid), int(l.cred.Gid)); err != nil {
			return "", fmt.Errorf("local: workspace %s: give it to the profile's user: %w", name, err)
		}
	}
	return dir, nil
}

// RemoveWorkspace implements backends.WorkspaceRemover: it deletes the
// workspace's directory, if there is one.
func (l *Local) RemoveWorkspace(_ context.Context, deployment, name string) error {
	parent, err := l.workspaceParent(deployment, name)
	if err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(parent, name))
}

// workspaceParent is the directory of deployment's workspaces, once
// deployment and name are checked to be single path elements.
func (l *Local) workspaceParent(deployment, name string) (string, error) {
	for _, s := range []string{deployment, name} {
		if s != "" && (s != filepath.Base(s) || s == "." || s == "..") || name == "" {
			return "", fmt.Errorf("local: workspace %q of deployment %q: not a name", name, deployment)
		}
	}
	return filepath.Join(l.wsRoot, cmp.Or(deployment, "default")), nil
}

// traversable checks that the profile's user can reach dir: every
// directory from the root down lets it search (x) as owner, group or
// other. A directory made 0711 inside a 0700 home is not enough.
func traversable(dir string, cred *syscall.Credential) error {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		var search bool
		switch {
		case !ok:
			search = true
		case st.Uid == cred.Uid:
			search = mode&0o100 != 0
		case st.Gid == cred.Gid:
			search = mode&0o010 != 0
		default:
			search = mode&0o001 != 0
		}
		if !search {
			return fmt.Errorf("%s (%v, uid %d) is not searchable by the profile's user %d:%d", d, mode, st.Uid, cred.Uid, cred.Gid)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
