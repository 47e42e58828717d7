package sshtest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// process is a helper program (sshd, ssh-agent) started for a test. Its
// stdout and stderr go to out. stop may be called any number of times,
// from any goroutine.
type process struct {
	cmd      *exec.Cmd
	out      *output
	done     chan struct{} // closed when the program has exited
	stopOnce sync.Once
}

// startProcess starts path with args.
func startProcess(path string, args ...string) (*process, error) {
	p := &process{
		cmd:  exec.Command(path, args...),
		out:  newOutput(),
		done: make(chan struct{}),
	}
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait() // a killed helper exits non-zero: nothing to report
		close(p.done)
	}()
	return p, nil
}

// stop kills the program and every process it forked (sshd forks one per
// connection, which calls setsid, so killing a process group would miss
// them), then waits for the program to exit.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		killTree(p.cmd.Process.Pid)
		<-p.done
	})
}

// killTree kills root and its descendants. It stops them first, until no
// new ones appear, so that none forks between the survey and the kill.
// Descendants are found through /proc; where there is none, only root is
// killed.
func killTree(root int) {
	_ = syscall.Kill(root, syscall.SIGSTOP)
	stopped := map[int]bool{root: true}
	for range 10 {
		found := false
		for _, pid := range descendants(root) {
			if !stopped[pid] {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				stopped[pid] = true
				found = true
			}
		}
		if !found {
			break
		}
	}
	for pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// descendants returns the processes below root, read from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var all []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			all = append(all, c)
			queue = append(queue, c)
		}
	}
	return all
}

// parentOf returns the parent of pid from /proc/PID/stat, whose second
// field (the command name) may itself hold spaces and parentheses.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:]) // state, ppid, ...
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}
