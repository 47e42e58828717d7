package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// stopWithin bounds a child's graceful stop; past it the child is killed.
const stopWithin = 15 * time.Second

// proc is a service the benchmark runs as a child process: a NATS node, a
// sandrun worker, redis-server or postgres. Its output is kept (the tail)
// for error messages. Children get SIGKILL if the benchmark itself dies
// (Pdeathsig), so an interrupted run leaves nothing behind.
type proc struct {
	name    string
	cmd     *exec.Cmd
	out     *tailBuffer
	stopSig os.Signal
	done    chan struct{} // closed when the process has exited
	err     error         // Wait's error, set before done is closed
	once    sync.Once
}

// procSpec describes a child process to start.
type procSpec struct {
	name    string // for messages
	path    string
	args    []string
	dir     string              // working directory (default: the benchmark's)
	cred    *syscall.Credential // run as another user (postgres refuses root)
	stopSig os.Signal           // graceful stop (default SIGTERM)
}

func startProc(s procSpec) (*proc, error) {
	p := &proc{name: s.name, out: newTailBuffer(64 << 10), stopSig: s.stopSig, done: make(chan struct{})}
	if p.stopSig == nil {
		p.stopSig = syscall.SIGTERM
	}
	p.cmd = exec.Command(s.path, s.args...)
	p.cmd.Dir = s.dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited is closed when the process has ended.
func (p *proc) exited() <-chan struct{} { return p.done }

// exitError describes an unexpected exit, with the output's tail.
func (p *proc) exitError() error {
	return fmt.Errorf("%s exited (%v); its output ends:\n%s", p.name, p.err, p.out.String())
}

// stop asks the process to stop, kills it after stopWithin, and waits. A
// process that already exited is not an error here: the phase that needed
// it reports that. Stopping twice is safe.
func (p *proc) stop() error {
	var err error
	p.once.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(p.stopSig)
		select {
		case <-p.done:
		case <-time.After(stopWithin):
			_ = p.cmd.Process.Kill()
			<-p.done
			err = fmt.Errorf("%s did not stop within %s; killed", p.name, stopWithin)
		}
	})
	return err
}

// waitReady polls check every 50ms until it succeeds, ctx ends, within
// passes, or one of procs exits (the error then carries its output).
func waitReady(ctx context.Context, what string, within time.Duration, check func(context.Context) error, procs ...*proc) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		for _, p := range procs {
			select {
			case <-p.exited():
				return fmt.Errorf("%s: %w", what, p.exitError())
			default:
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s: not ready within %s: %w", what, within, last)
			}
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept output, at most its last 4 KiB.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > 4<<10 {
		s = s[len(s)-4<<10:]
	}
	return string(s)
}
