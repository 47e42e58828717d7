package plugin

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// drain bounds how long the host reads a plugin's stdout and stderr after
// its process group has been killed. Only a process that left the group
// can still hold them open by then.
const drain = 2 * time.Second

// process is one plugin process, started for one request, in a process
// group of its own. Its goroutines — one waits for it to exit, one reads
// its stdout, one logs its stderr — have all returned once stop has.
type process struct {
	cmd *exec.Cmd
	pid int // Also its process group id.

	stdin          *os.File // The write end of the plugin's stdin.
	stdout, stderr *os.File // The read ends of its stdout and stderr.

	events chan control  // From the stdout reader.
	quit   chan struct{} // Closed by stop: nobody takes events any more.
	exited chan struct{} // Closed once the plugin has exited; stop reaps it.
	read   chan struct{} // Closed once the stdout reader has returned.
	logged chan struct{} // Closed once stderr has been logged to the end.
}

// control is what the stdout reader hands to the request's goroutine:
// an event it must see, or the error that ended the conversation early.
type control struct {
	ev  event
	err error
}

// start starts the plugin for conversation c; its stderr goes to c.log.
// The session line, with c's key, is on the plugin's stdin before it
// starts: writing it can neither block nor fail on a plugin that exits
// at once (a protocol v1 plugin may, once it has said hello).
func (b *Backend) start(c *conversation) (*process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start: %w: %w", err, backends.ErrUnavailable)
	}
	if err := writeLine(inW, sessionMessage{Type: typeSession, Protocol: Protocol, Key: c.key}, b.timeout); err != nil {
		closeFiles(inR, inW)
		return nil, fmt.Errorf("start: writing the session line: %w: %w", err, backends.ErrUnavailable)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW)
		return nil, fmt.Errorf("start: %w: %w", err, backends.ErrUnavailable)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW, outR, outW)
		return nil, fmt.Errorf("start: %w: %w", err, backends.ErrUnavailable)
	}
	cmd := exec.Command(b.path, b.args...)
	cmd.Env = b.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	closeFiles(inR, outW, errW) // The plugin has its own copies.
	if err != nil {
		closeFiles(inW, outR, errR)
		return nil, fmt.Errorf("start: %w: %w", err, backends.ErrUnavailable)
	}
	p := &process{
		cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: outR, stderr: errR,
		events: make(chan control), quit: make(chan struct{}),
		exited: make(chan struct{}), read: make(chan struct{}), logged: make(chan struct{}),
	}
	go p.wait()
	go p.readStdout(c)
	go p.logStderr(c.log)
	return p, nil
}

// send writes one request line. It gives up after timeout, so that a
// plugin that does not read its stdin cannot block the host.
func (p *process) send(msg any, timeout time.Duration) error {
	return writeLine(p.stdin, msg, timeout)
}

// writeLine writes msg to w as one JSON line, giving up after timeout.
func writeLine(w *os.File, msg any, timeout time.Duration) error {
	line, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if err := w.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err = w.Write(append(line, '\n'))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: it does not read its stdin", ErrTimeout)
	}
	return err
}

// readStdout runs conversation c over the plugin's stdout until its last
// event, a protocol error, or the end of the output.
func (p *process) readStdout(c *conversation) {
	defer close(p.read)
	sc := bufio.NewScanner(p.stdout)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		ev, last, err := c.handle(sc.Bytes(), n)
		if err != nil {
			p.pass(control{err: err})
			return
		}
		if ev != nil && !p.pass(control{ev: *ev}) {
			return
		}
		if last {
			return
		}
	}
	err := sc.Err()
	switch {
	case errors.Is(err, bufio.ErrTooLong):
		err = c.errorf("a stdout line is longer than %d bytes", maxLine)
	case err == nil:
		err = io.EOF
	}
	p.pass(control{err: err})
}

// pass hands m on, unless nobody takes events any more.
func (p *process) pass(m control) bool {
	select {
	case p.events <- m:
		return true
	case <-p.quit:
		return false
	}
}

// wait closes exited once the plugin has exited. An error (ECHILD) cannot
// happen short of a bug; stop then does what is still possible.
func (p *process) wait() {
	defer close(p.exited)
	_ = waitExited(p.pid)
}

// stop ends the plugin and releases everything it holds. It closes the
// plugin's stdin, the plugin's cue to exit, and gives it grace to do so;
// then it kills the plugin's process group (the plugin, if still there,
// and whatever it left in its group), reaps the plugin and reads what is
// left of its output. It reports how the plugin ended, and whether it had
// to be killed. stop is called once.
func (p *process) stop(grace time.Duration) (state *os.ProcessState, killed bool) {
	close(p.quit)
	_ = p.stdin.Close()
	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-p.exited:
		case <-t.C:
		}
		t.Stop()
	}
	select {
	case <-p.exited:
	default:
		killed = true
	}
	// The plugin is not reaped yet: its pid, hence its group id, is still
	// its own.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	<-p.exited
	_ = p.cmd.Wait() // With *os.File stdio, Wait only reaps.

	deadline := time.Now().Add(drain)
	_ = p.stdout.SetReadDeadline(deadline)
	_ = p.stderr.SetReadDeadline(deadline)
	<-p.read
	<-p.logged
	closeFiles(p.stdout, p.stderr)
	return p.cmd.ProcessState, killed
}

// closeFiles closes files, ignoring errors: they are pipe ends.
func closeFiles(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// waitExited blocks until process pid has exited, without reaping it.
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
