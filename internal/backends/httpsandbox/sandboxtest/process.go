package sandboxtest

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// OutputDrain bounds how long a Process's output is still read once its
// main process has ended: only processes it left behind can hold the
// pipes.
const OutputDrain = 250 * time.Millisecond

// Chunk is one read of a Process's standard output (Stream 0) or
// standard error (Stream 1).
type Chunk struct {
	Stream int
	Data   []byte
}

// Process is a command a fake sandbox API runs on the host, as
// StartProcess started it: in a process group of its own, its output
// captured as it grows. Its methods are safe for concurrent use.
type Process struct {
	// Pgid is its process group: the pid of its main process.
	Pgid int

	done   chan struct{} // Closed once status is set.
	status int

	mu      sync.Mutex
	chunks  []Chunk
	ended   bool
	changed chan struct{} // Closed, and replaced, at each change.
}

// StartProcess starts cmd, which must not have started, in a process
// group of its own, with an empty standard input unless cmd sets one.
// Its standard output and standard error are captured from a pipe each
// or, when combined, from one pipe for both (which keeps their order;
// all of it is then Stream 0). The goroutines that read the pipes and
// wait for the process are counted in wg, so that a fake's Close can
// wait for them; once the main process has ended, output is read for at
// most OutputDrain more.
func StartProcess(wg *sync.WaitGroup, cmd *exec.Cmd, combined bool) (*Process, error) {
	var pipes [2][2]*os.File
	for i := range pipes {
		if i == 1 && combined {
			break
		}
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(pipes)
			return nil, err
		}
		pipes[i] = [2]*os.File{r, w}
	}
	cmd.Stdout, cmd.Stderr = pipes[0][1], pipes[0][1]
	if !combined {
		cmd.Stderr = pipes[1][1]
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err := cmd.Start()
	for _, pair := range pipes {
		if pair[1] != nil {
			_ = pair[1].Close()
		}
	}
	if err != nil {
		closeAll(pipes)
		return nil, err
	}
	p := &Process{Pgid: cmd.Process.Pid, done: make(chan struct{}), changed: make(chan struct{})}
	var readers sync.WaitGroup
	for i := range pipes {
		if pipes[i][0] == nil {
			continue
		}
		readers.Add(1)
		wg.Go(func() {
			defer readers.Done()
			p.copy(pipes[i][0], i)
		})
	}
	wg.Go(func() {
		_ = cmd.Wait()
		// What the process wrote before it ended is in the pipes: read it,
		// but do not wait for what it left behind.
		drained := make(chan struct{})
		go func() { readers.Wait(); close(drained) }()
		t := time.NewTimer(OutputDrain)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
		closeAll(pipes)
		<-drained
		p.status = shellStatus(cmd.ProcessState)
		p.end()
		close(p.done)
	})
	return p, nil
}

// shellStatus is what a shell's $? would say of ps: the exit code, or
// 128+signal when a signal ended it.
func shellStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func closeAll(pipes [2][2]*os.File) {
	for _, pair := range pipes {
		for _, f := range pair {
			if f != nil {
				_ = f.Close()
			}
		}
	}
}

// Done returns a channel closed once p has ended and all of its output
// is captured.
func (p *Process) Done() <-chan struct{} { return p.done }

// Ended reports whether p has ended (Done is closed).
func (p *Process) Ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Status is p's exit status as a shell's $? says it: the exit code, or
// 128+signal. It is valid once p has ended.
func (p *Process) Status() int { return p.status }

// Signal sends sig to p's process group and reports whether anything was
// there to get it.
func (p *Process) Signal(sig syscall.Signal) bool {
	return !errors.Is(syscall.Kill(-p.Pgid, sig), syscall.ESRCH)
}

// Since returns the chunks of output from index i on, whether there will
// be no more, and a channel closed at the next change.
func (p *Process) Since(i int) ([]Chunk, bool, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.chunks[i:], p.ended, p.changed
}

// Output returns the output so far: stdout, stderr, and both in the
// order they were read.
func (p *Process) Output() (stdout, stderr, all []byte) {
	chunks, _, _ := p.Since(0)
	var out [2][]byte
	for _, c := range chunks {
		out[c.Stream] = append(out[c.Stream], c.Data...)
		all = append(all, c.Data...)
	}
	return out[0], out[1], all
}

// copy captures what r yields, as stream, until it fails.
func (p *Process) copy(r *os.File, stream int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.chunks = append(p.chunks, Chunk{stream, append([]byte(nil), buf[:n]...)})
			p.notify()
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (p *Process) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	p.notify()
}

// notify closes and replaces p.changed. p.mu is held.
func (p *Process) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}
