package verceltest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// outputDrain bounds how long output is still read once a command's main
// process has ended: only processes it left behind can hold the pipes.
const outputDrain = 250 * time.Millisecond

// proc is one command the fake runs: the program and its arguments, in a
// process group of its own, with exactly the environment given and an
// empty standard input.
type proc struct {
	pgid   int
	out    *capture
	done   chan struct{} // Closed once status is set.
	status int           // The exit code, or 128+signal.
}

// start starts name with args in dir, name looked up on env's PATH.
// f.mu is held, so Close cannot slip in between its check and the
// start.
func (f *Fake) start(name string, args []string, dir string, env []string) (*proc, error) {
	select {
	case <-f.closing: // Close has killed everything; nothing new may start.
		return nil, errors.New("the fake is closing")
	default:
	}
	path, err := lookPath(name, env)
	if err != nil {
		return nil, err
	}
	var pipes [2][2]*os.File
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(pipes)
			return nil, err
		}
		pipes[i] = [2]*os.File{r, w}
	}
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = pipes[0][1], pipes[1][1]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	_ = pipes[0][1].Close()
	_ = pipes[1][1].Close()
	if err != nil {
		closeAll(pipes)
		return nil, err
	}
	p := &proc{pgid: cmd.Process.Pid, out: &capture{changed: make(chan struct{})}, done: make(chan struct{})}
	var readers sync.WaitGroup
	for i := range pipes {
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
		p.status = exitStatus(cmd.ProcessState)
		p.out.end()
		close(p.done)
	})
	return p, nil
}

// lookPath finds name as a sandbox would: on its own PATH, not the test's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if dirs, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(dirs) {
				p := filepath.Join(d, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// exitStatus is the command's exit code, or 128+signal when a signal
// ended it (as a shell's $? would say).
func exitStatus(ps *os.ProcessState) int {
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

// ended reports whether p has ended.
func (p *proc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
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

// chunk is one read of a command's stdout (stream 0) or stderr (1).
type chunk struct {
	stream int
	data   []byte
}

// capture is a command's output, read as it grows.
type capture struct {
	mu      sync.Mutex
	chunks  []chunk
	ended   bool
	changed chan struct{} // Closed, and replaced, at each change.
}

// copy appends what r yields until it fails.
func (c *capture) copy(r *os.File, stream int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.mu.Lock()
			c.chunks = append(c.chunks, chunk{stream, append([]byte(nil), buf[:n]...)})
			c.notify()
			c.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
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

// since returns the chunks from index i on, whether there will be no
// more, and a channel closed at the next change.
func (c *capture) since(i int) ([]chunk, bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chunks[i:], c.ended, c.changed
}

// appendData appends p to out as a JSON string. Bytes that are not UTF-8 become
// lone surrogates \udc80-\udcff (Python's surrogateescape), so that a
// client that knows it reads them back exactly; one that does not gets
// U+FFFD.
func appendData(out, p []byte) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for len(p) > 0 {
		// Copy the run of bytes that need no escape in one go.
		i := 0
		for i < len(p) && p[i] >= 0x20 && p[i] < utf8.RuneSelf && p[i] != '"' && p[i] != '\\' && p[i] != 0x7F {
			i++
		}
		out, p = append(out, p[:i]...), p[i:]
		if len(p) == 0 {
			break
		}
		r, size := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && size <= 1:
			out = append(out, '\\', 'u', 'd', 'c', hexDigits[p[0]>>4], hexDigits[p[0]&0xF])
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r == '\n':
			out = append(out, '\\', 'n')
		case r == '\r':
			out = append(out, '\\', 'r')
		case r == '\t':
			out = append(out, '\\', 't')
		case r < 0x20 || r == 0x7F:
			out = append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
		case r == '\u2028' || r == '\u2029':
			out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			out = append(out, p[:size]...)
		}
		p = p[size:]
	}
	return append(out, '"')
}
