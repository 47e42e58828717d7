package vercel

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// pids returns the numbers of the "pid N" lines of out.
func pids(t *testing.T, out string) []int {
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

// waitGone fails the test unless every pid is gone within 5s.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !backendtest.HostProcessGone(t, pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d still runs", pid)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestTimeoutEndsSandbox: a job that ignores TERM outlives its deadline;
// the fake confirms the backend killed the command (TERM, then KILL after
// the grace), stopped its session and deleted its sandbox, and no process
// the job started still runs.
func TestTimeoutEndsSandbox(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	b := newBackend(t, fakeConfig(f))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var stdout testenv.Buffer
	spec := backends.Spec{JobID: "slow", Attempt: 1, KillGrace: 300 * time.Millisecond,
		Command: `trap 'echo got-term' TERM; sleep 300 & echo "pid $!"; echo "pid $$"; while :; do wait; done`}
	res, err := b.Run(ctx, spec, backends.Output{Stdout: &stdout})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v; want an error wrapping context.DeadlineExceeded", err)
	}
	if res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Errorf("result %+v; want exit -1, SIGKILL", res)
	}
	if !strings.Contains(stdout.String(), "got-term") {
		t.Errorf("stdout %q: the job never got TERM", stdout.String())
	}
	p := pids(t, stdout.String())
	if len(p) != 2 {
		t.Fatalf("want 2 pids in %q", stdout.String())
	}
	waitGone(t, p)
	var signals []syscall.Signal
	for _, k := range f.Kills() {
		if k.Reason == "kill" {
			signals = append(signals, k.Signal)
		}
	}
	if !slices.Equal(signals, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}) {
		t.Errorf("kills %+v; want TERM then KILL", f.Kills())
	}
	if len(f.Stopped()) != 1 || len(f.Deleted()) != 1 || len(f.Sandboxes()) != 0 {
		t.Errorf("stopped %v, deleted %v, left %+v; want the one sandbox stopped and deleted", f.Stopped(), f.Deleted(), f.Sandboxes())
	}
}
