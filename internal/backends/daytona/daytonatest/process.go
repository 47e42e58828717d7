package daytonatest

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// outputDrain bounds how long output is still read once a command's main
// process has ended: only processes it left behind can hold the pipes.
const outputDrain = 250 * time.Millisecond

// Log markers: the daemon prefixes each chunk of a session command's log
// with the stream it came from.
var (
	stdoutMarker = []byte{0x01, 0x01, 0x01}
	stderrMarker = []byte{0x02, 0x02, 0x02}
)

// proc is one command the fake runs, as the daemon would: `sh -c TEXT`
// in a process group of its own, with exactly the environment given and
// an empty standard input.
type proc struct {
	pgid   int
	out    *capture
	done   chan struct{} // Closed once status is set.
	status int           // As the shell's $? says: the exit code, or 128+signal.
}

// start starts text in dir with env. Its output goes to a capture:
// marked, from a pipe per stream, or combined, from one pipe for both
// (which keeps their order). f.mu is held, so Close cannot slip in
// between its check and the start.
func (f *Fake) start(text, dir string, env []string, marked bool) (*proc, error) {
	select {
	case <-f.closing: // Close has killed everything; nothing new may start.
		return nil, errors.New("the fake is closing")
	default:
	}
	pipes := [2][2]*os.File{}
	for i := range pipes {
		if i == 1 && !marked {
			break
		}
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(pipes)
			return nil, err
		}
		pipes[i] = [2]*os.File{r, w}
	}
	cmd := exec.Command("/bin/sh", "-c", text)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = pipes[0][1], pipes[0][1]
	if marked {
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
	p := &proc{pgid: cmd.Process.Pid, out: newCapture(marked), done: make(chan struct{})}
	var readers sync.WaitGroup
	for i := range pipes {
		if pipes[i][0] == nil {
			continue
		}
		readers.Add(1)
		f.wg.Go(func() {
			defer readers.Done()
			p.out.copy(pipes[i][0], i)
		})
	}
	f.wg.Go(func() {
		_ = cmd.Wait()
		// What the process wrote before it ended is in the pipes: read it,
		// but do not wait for what it left behind.
		drained := make(chan struct{})
		go func() { readers.Wait(); close(drained) }()
		t := time.NewTimer(outputDrain)
		select {
		case <-drained:
		case <-t.C:
		}
		t.Stop()
		closeAll(pipes)
		<-drained
		p.status = shellStatus(cmd.ProcessState)
		p.out.end()
		close(p.done)
	})
	return p, nil
}

// shellStatus is what a shell's $? would say of ps.
func shellStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signal sends sig to p's process group and reports whether anything was
// there to get it.
func (p *proc) signal(sig syscall.Signal) bool {
	return !errors.Is(syscall.Kill(-p.pgid, sig), syscall.ESRCH)
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

// capture is a command's output, read as it grows.
type capture struct {
	marked  bool
	mu      sync.Mutex
	data    []byte
	ended   bool
	changed chan struct{} // Closed, and replaced, at each change.
}

func newCapture(marked bool) *capture {
	return &capture{marked: marked, changed: make(chan struct{})}
}

// copy appends what r yields until it fails: stream 0 is stdout, 1 stderr.
func (c *capture) copy(r *os.File, stream int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.append(stream, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (c *capture) append(stream int, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marked {
		c.data = append(c.data, [][]byte{stdoutMarker, stderrMarker}[stream]...)
	}
	c.data = append(c.data, p...)
	c.notify()
}

func (c *capture) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	c.notify()
}

func (c *capture) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// since returns the output from offset on, whether there will be no more,
// and a channel closed at the next change.
func (c *capture) since(offset int) ([]byte, bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data[offset:], c.ended, c.changed
}

// streams splits a marked capture into stdout and stderr, and returns
// everything, unmarked.
func (c *capture) streams() (stdout, stderr, all []byte) {
	data, _, _ := c.since(0)
	if !c.marked {
		return data, nil, data
	}
	var out [2][]byte
	cur := 0
	for i := 0; i < len(data); {
		if i+3 <= len(data) && data[i] == data[i+1] && data[i+1] == data[i+2] && (data[i] == 1 || data[i] == 2) {
			cur = int(data[i]) - 1
			i += 3
			continue
		}
		out[cur] = append(out[cur], data[i])
		all = append(all, data[i])
		i++
	}
	return out[0], out[1], all
}
