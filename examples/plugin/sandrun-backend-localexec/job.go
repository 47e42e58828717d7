package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// defaultPath is a job's PATH when its environment sets none.
	defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// defaultGrace is the kill grace when a run request carries none.
	defaultGrace = 5 * time.Second
	// outputDrain bounds how long the job's output is read once its
	// process group is gone: only a process that left it (setsid) can
	// hold the output open by then.
	outputDrain = 2 * time.Second
)

// specError is a job this plugin can never run: the host is told that
// the error is permanent.
type specError string

func (e specError) Error() string { return string(e) }

func isPermanent(err error) bool {
	var s specError
	return errors.As(err, &s)
}

// job is one running job: a shell, leader of a process group of its own.
type job struct {
	cmd     *exec.Cmd
	pid     int // Also the process group id.
	id      string
	grace   time.Duration
	started time.Time

	mu     sync.Mutex
	exited bool        // The shell has exited: its group may not be signalled any more.
	killer *time.Timer // Kills the group once the grace after a terminate has passed.
}

// startJob starts spec's command, sending "started" before any output.
func startJob(shell, id string, spec runSpec, ev *events) (*job, error) {
	if strings.ContainsRune(spec.Command, 0) {
		return nil, specError("command: contains a NUL byte")
	}
	env, err := environ(spec.Env)
	if err != nil {
		return nil, err
	}
	if spec.Dir != "" {
		fi, err := os.Stat(spec.Dir)
		if err != nil {
			return nil, specError(fmt.Sprintf("cwd: %v", err))
		}
		if !fi.IsDir() {
			return nil, specError(fmt.Sprintf("cwd: %s is not a directory", spec.Dir))
		}
	}
	grace := time.Duration(spec.KillGraceMS) * time.Millisecond
	if grace <= 0 {
		grace = defaultGrace
	}
	cmd := exec.Command(shell, "-c", spec.Command)
	cmd.Dir, cmd.Env = spec.Dir, env // Stdin stays nil: /dev/null.
	cmd.Stdout = output{events: ev, id: id, stream: "stdout"}
	cmd.Stderr = output{events: ev, id: id, stream: "stderr"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputDrain

	// Hold the events while starting, so that output, which the copying
	// goroutines send as soon as there is any, comes after "started".
	ev.mu.Lock()
	defer ev.mu.Unlock()
	j := &job{cmd: cmd, id: id, grace: grace, started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	j.pid = cmd.Process.Pid
	_ = ev.sendLocked(started{Type: "started", ID: id, StartedAt: j.started})
	return j, nil
}

// environ returns the job's environment: exactly its spec's, plus PATH
// when that sets none. Nothing comes from this plugin's own environment.
func environ(env map[string]string) ([]string, error) {
	lines := make([]string, 0, len(env)+1)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, specError(fmt.Sprintf("env: %q: a key must be non-empty without '=' or NUL, a value without NUL", k))
		}
		lines = append(lines, k+"="+v)
	}
	if _, ok := env["PATH"]; !ok {
		lines = append(lines, "PATH="+defaultPath)
	}
	return lines, nil
}

// terminate starts a graceful stop: SIGTERM to the group (and SIGCONT,
// so that stopped members act on it), SIGKILL once the grace has passed.
func (j *job) terminate() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.exited {
		return
	}
	_ = syscall.Kill(-j.pid, syscall.SIGTERM)
	_ = syscall.Kill(-j.pid, syscall.SIGCONT)
	if j.killer == nil {
		j.killer = time.AfterFunc(j.grace, j.kill)
	}
}

// kill kills the group at once.
func (j *job) kill() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.exited {
		_ = syscall.Kill(-j.pid, syscall.SIGKILL)
	}
}

// wait waits for the shell to exit, kills what is left of its group,
// reaps it and returns the exit event.
func (j *job) wait() exit {
	_ = waitExited(j.pid)
	finished := time.Now()
	j.mu.Lock()
	j.exited = true
	// The shell is not reaped yet, so the group id is still the job's:
	// kill the processes it left behind.
	_ = syscall.Kill(-j.pid, syscall.SIGKILL)
	if j.killer != nil {
		j.killer.Stop()
	}
	j.mu.Unlock()
	_ = j.cmd.Wait() // Reaps, and copies the rest of the output.

	ps := j.cmd.ProcessState
	e := exit{Type: "exit", ID: j.id, ExitCode: ps.ExitCode(), StartedAt: j.started, FinishedAt: finished}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.ExitCode, e.Signal = -1, signalName(ws.Signal())
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru != nil {
		e.UserCPUNS, e.SysCPUNS = ru.Utime.Nano(), ru.Stime.Nano()
		e.MaxRSSBytes = ru.Maxrss * 1024 // KiB on Linux.
	}
	return e
}

// waitExited blocks until process pid has exited, without reaping it, so
// that its pid, hence its process group id, cannot be reused meanwhile.
// The standard library has no waitid; a nil siginfo is allowed on Linux.
func waitExited(pid int) error {
	const pPID = 1 // P_PID
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), 0,
			syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return errno
	}
}

// signalName names sig as the protocol does: "SIGTERM".
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
		syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
		syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU",
		syscall.SIGXFSZ: "SIGXFSZ",
	}
	if name, ok := names[sig]; ok {
		return name
	}
	return fmt.Sprintf("SIG%d", int(sig))
}
