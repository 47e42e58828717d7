package modaltest

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// process is one exec: a local process leading its own process group.
type process struct {
	id   string
	args []string
	env  map[string]string
	dir  string // in the sandbox
	// hostDir is where it runs: dir, or a volume's directory for it.
	hostDir string
	pid     int
	out     [2]*output  // stdout, stderr; nil when discarded
	pipe    [2]*os.File // our read ends of them
	done    chan struct{}
	// state is set before done is closed.
	state *os.ProcessState
}

// spawn starts args in hostDir (the sandbox's dir) with exactly env and
// an open stdin pipe that gets no data, stdout and stderr kept when pipe
// says so (else /dev/null), each of its processes limited to memMiB of
// memory (0: unlimited). Goroutines on f.procs wait for it and read its
// output.
func (f *Fake) spawn(id string, args []string, env map[string]string, dir, hostDir string, pipe [2]bool, memMiB uint32) (*process, error) {
	cmd := exec.Command(args[0], args[1:]...)
	sandboxtest.LimitMemory(cmd, int64(memMiB)<<20)
	cmd.Dir = hostDir
	cmd.Env = make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &process{id: id, args: args, env: env, dir: dir, hostDir: hostDir, done: make(chan struct{})}

	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = stdinR
	childEnds, ours := []*os.File{stdinR}, []*os.File{stdinW}
	for i, wanted := range pipe {
		if !wanted {
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(childEnds, ours)
			return nil, err
		}
		childEnds, ours = append(childEnds, w), append(ours, r)
		p.pipe[i], p.out[i] = r, &output{wake: make(chan struct{})}
		if i == 0 {
			cmd.Stdout = w
		} else {
			cmd.Stderr = w
		}
	}
	if err := cmd.Start(); err != nil {
		closeAll(childEnds, ours)
		return nil, err
	}
	closeAll(childEnds)
	p.pid = cmd.Process.Pid
	for i, r := range p.pipe {
		if r != nil {
			f.procs.Go(func() { p.out[i].fill(r) })
		}
	}
	f.procs.Go(func() {
		_ = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
		_ = stdinW.Close()
	})
	return p, nil
}

func closeAll(lists ...[]*os.File) {
	for _, l := range lists {
		for _, f := range l {
			_ = f.Close()
		}
	}
}

// kill kills p's process group and reports whether there was one. Once
// p has ended its pid may belong to another process: the group is then
// only signalled while no process has that pid, which means it is p's
// leftovers (a pid is not reused while its group has members).
func (p *process) kill() bool {
	select {
	case <-p.done:
		if err := syscall.Kill(p.pid, 0); !errors.Is(err, syscall.ESRCH) {
			return false
		}
	default:
	}
	return syscall.Kill(-p.pid, syscall.SIGKILL) == nil
}

// abandon stops reading p's output: a process that left its group, and
// so was not killed, may hold the pipes open for good.
func (p *process) abandon() {
	for _, r := range p.pipe {
		if r != nil {
			_ = r.Close()
		}
	}
}

// output is everything a process wrote to one pipe, kept whole so that a
// read can resume at any offset.
type output struct {
	mu   sync.Mutex
	data []byte
	eof  bool
	wake chan struct{} // closed, and replaced, on every change
}

// fill reads r to its end.
func (o *output) fill(r *os.File) {
	defer func() { _ = r.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		o.mu.Lock()
		o.data = append(o.data, buf[:n]...)
		if err != nil {
			o.eof = true
		}
		close(o.wake)
		o.wake = make(chan struct{})
		o.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// next returns up to limit bytes from off, whether the output ends there,
// and a channel closed when there is more to know.
func (o *output) next(off uint64, limit int) ([]byte, bool, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if off >= uint64(len(o.data)) {
		return nil, o.eof, o.wake
	}
	end := min(uint64(len(o.data)), off+uint64(limit))
	return slices.Clone(o.data[off:end]), false, o.wake
}
