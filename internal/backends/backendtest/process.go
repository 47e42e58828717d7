package backendtest

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// HostProcessGone is an Options.ProcessGone for backends whose processes
// run on the test's host, in its pid namespace. A zombie counts as gone:
// a killed orphan is reparented to init or a subreaper, which may never
// reap it. It reads /proc, so it is Linux-only.
func HostProcessGone(t *testing.T, pid int) bool {
	t.Helper()
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true // reaped before, or between the open and the read
	}
	if err != nil {
		t.Fatalf("HostProcessGone(%d): %v", pid, err)
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain ") ": take the last one.
	i := bytes.LastIndex(stat, []byte(") "))
	if i < 0 || i+2 >= len(stat) {
		t.Fatalf("HostProcessGone(%d): cannot parse %q", pid, stat)
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}

// PIDs returns the numbers of the "pid N" lines of out (jobs in the
// process-tree tests print theirs so).
func PIDs(t *testing.T, out string) []int {
	t.Helper()
	var list []int
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "pid "); ok {
			pid, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("bad pid line %q", line)
			}
			list = append(list, pid)
		}
	}
	return list
}

// WaitGone fails the test unless every pid (of a process on this host)
// is gone within 5s (HostProcessGone).
func WaitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !HostProcessGone(t, pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d still runs", pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
