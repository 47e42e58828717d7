//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runForwarding starts cmd and waits for it. Like apptainer's master
// process (internal/app/starter/master_linux.go) the fake catches every
// signal instead of dying of it and forwards it to the payload, so a
// SIGTERM sent to the fake alone reaches the payload once and one sent to
// the process group reaches it twice (directly and forwarded). Catching
// with signal.Notify, not ignoring, leaves the payload default handling.
func runForwarding(cmd *exec.Cmd) (syscall.WaitStatus, error) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, fatalf("%v", err)
	}
	done := make(chan struct{})
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case s := <-sigs:
				if s != syscall.SIGCHLD && s != syscall.SIGURG {
					_ = cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-forwarded
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return 0, fatalf("%v", err)
	}
	return cmd.ProcessState.Sys().(syscall.WaitStatus), nil
}

// exitStatus is the fake's exit code for the payload's status. For a
// payload killed by signal N it first kills the fake itself with N, as
// apptainer does; 128+N is only returned if the fake survives that.
func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		raise(ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// raise kills the process with sig under the default disposition. The Go
// runtime handles most signals itself (ignoring SIGUSR1, dumping
// goroutines on SIGQUIT), so the disposition is reset in the kernel
// directly and the signal is sent to this thread, where it is delivered
// before the call returns.
func raise(sig syscall.Signal) {
	signal.Reset()
	runtime.LockOSThread()
	// struct sigaction all zero: SIG_DFL, no flags, empty mask.
	var act [4]uint64
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(&act)), 0, unsafe.Sizeof(act[0]), 0, 0) // #nosec G103 -- resets a signal disposition
	var set unix.Sigset_t
	set.Val[(int(sig)-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	_ = unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
	// A signal whose default action is to ignore (SIGCHLD, SIGWINCH) or
	// that was blocked returns here.
	time.Sleep(10 * time.Millisecond)
}
