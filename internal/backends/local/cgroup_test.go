package local

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// newCgroupLocal returns a validated backend built from cfg. With cgroup
// required and no cgroup v2 to use, the test ends as testenv.Missing
// says: a failure under CI=true, a skip elsewhere.
func newCgroupLocal(t *testing.T, cfg Config) *Local {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := l.cg.ready(); err != nil && cfg.Cgroup == CgroupRequired {
		testenv.Missing(t, "cgroup v2 for jobs: %v", err)
	}
	if err := l.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return l
}

// escapeCommand starts a process that leaves the job's session and
// process group (setsid) before it prints "pid N" and "ready". Every
// process of the job ignores SIGTERM, so only SIGKILL ends them; the
// escaped one does not hold the job's output.
const escapeCommand = `trap '' TERM
setsid sh -c 'echo "pid $$"; echo ready; exec sleep 300 >/dev/null 2>&1' &
sleep 300`

// errTestTimeout is the cause the stop tests end their jobs with, as the
// worker does with a job's timeout.
var errTestTimeout = errors.New("test: job timed out")

type outcome struct {
	res      backends.Result
	err      error
	returned time.Time
}

// start runs spec on l in the background. The returned func waits for
// Run to return; a cleanup stops the job and waits too, so that a failed
// test leaves neither the job nor its goroutine behind.
func start(t *testing.T, l *Local, spec backends.Spec, stdout *testenv.Buffer) (context.CancelCauseFunc, func() outcome) {
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan outcome, 1)
	go func() {
		res, err := l.Run(ctx, spec, backends.Output{Stdout: stdout})
		done <- outcome{res, err, time.Now()}
	}()
	wait := sync.OnceValue(func() outcome { return <-done })
	t.Cleanup(func() { cancel(nil); wait() })
	return cancel, wait
}

// escapedPID reads the escaped process's pid from the job's output, and
// has it killed when the test ends, whatever became of it.
func escapedPID(t *testing.T, stdout string) int {
	t.Helper()
	pids := backendtest.PIDs(t, stdout)
	if len(pids) != 1 || pids[0] <= 1 {
		t.Fatalf("want one pid from the job, got %v in %q", pids, stdout)
	}
	t.Cleanup(func() { _ = syscall.Kill(pids[0], syscall.SIGKILL) })
	return pids[0]
}

// TestStopKillsEscapedProcess times out a job whose child left its
// process group with setsid. In its cgroup, the child is killed once the
// grace has passed; by its process group alone (cgroup off), it survives:
// the hole cgroups close.
func TestStopKillsEscapedProcess(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	tests := []struct {
		mode     string
		survives bool
	}{
		{CgroupRequired, false},
		{CgroupOff, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			l := newCgroupLocal(t, Config{Cgroup: tt.mode})
			var stdout testenv.Buffer
			cancel, wait := start(t, l, backends.Spec{Command: escapeCommand, KillGrace: grace}, &stdout)
			stdout.WaitFor(t, "ready\n", 10*time.Second)
			pid := escapedPID(t, stdout.String())

			stopped := time.Now()
			cancel(errTestTimeout)
			o := wait()
			if !errors.Is(o.err, errTestTimeout) {
				t.Errorf("Run error %v, want one wrapping the cause", o.err)
			}
			if took := o.returned.Sub(stopped); took < grace {
				t.Errorf("Run returned %s after the stop, before the grace %s: the job ignores SIGTERM", took, grace)
			}
			if o.res.Signal != "SIGKILL" {
				t.Errorf("result %+v, want the main process killed by SIGKILL", o.res)
			}
			if tt.survives {
				if backendtest.HostProcessGone(t, pid) {
					t.Errorf("escaped process %d is gone with cgroup %s: the test no longer shows what cgroups add", pid, tt.mode)
				}
				t.Logf("cgroup %s: Run returned %s after the stop; escaped process %d still runs", tt.mode, o.returned.Sub(stopped), pid)
				return
			}
			backendtest.WaitGone(t, []int{pid})
			t.Logf("cgroup %s: Run returned %s after the stop; escaped process %d gone %s after Run returned",
				tt.mode, o.returned.Sub(stopped), pid, time.Since(o.returned))
		})
	}
}

// TestExitKillsEscapedProcess: when a job's main process ends, a process
// it left behind outside its process group is killed too, Run does not
// wait for the output it holds, and the job's cgroup is removed.
func TestExitKillsEscapedProcess(t *testing.T) {
	t.Parallel()
	l := newCgroupLocal(t, Config{Cgroup: CgroupRequired})
	// The fifo tells the job when its child has left the group.
	spec := backends.Spec{
		Command: `mkfifo "$D/escaped"
setsid sh -c 'echo "pid $$"; echo >"$D/escaped"; exec sleep 300' &
read _ <"$D/escaped"
grep '^0::' /proc/self/cgroup`,
		Env: map[string]string{"D": t.TempDir()},
	}
	begun := time.Now()
	res, stdout, stderr, err := run(t, l, spec)
	took := time.Since(begun)
	pid := escapedPID(t, stdout)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	if took >= outputDrain {
		t.Errorf("Run took %s, want less than outputDrain %s: the escaped process held the output", took, outputDrain)
	}
	backendtest.WaitGone(t, []int{pid})

	_, own, ok := strings.Cut(stdout, "\n0::")
	group := path.Base(strings.TrimSpace(own))
	if !ok || !strings.HasPrefix(group, "job-") {
		t.Fatalf("stdout %q, want the job's cgroup", stdout)
	}
	if _, err := os.Stat(filepath.Join(l.cg.dir, group)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the job's cgroup %s after Run: %v, want it removed", group, err)
	}
	if desc, err := l.Describe(t.Context()); err != nil || !strings.Contains(desc, l.cg.dir) {
		t.Errorf("Describe = %q, %v; want it to name %s", desc, err, l.cg.dir)
	}
	t.Logf("Run took %s; the job ran in cgroup %s under %s", took, group, l.cg.dir)
}

// TestEscapedProcessDoesNotHangRun covers the one process Run cannot
// kill: with no cgroup, one that left the job's process group and holds
// its stdout.
func TestEscapedProcessDoesNotHangRun(t *testing.T) {
	t.Parallel()
	// The fifo tells the job when its child has left the group.
	spec := backends.Spec{
		Command: `mkfifo "$D/escaped"
setsid sh -c 'echo "pid $$"; echo >"$D/escaped"; exec sleep 300' &
read _ <"$D/escaped"
echo done`,
		Env: map[string]string{"D": t.TempDir()},
	}
	begun := time.Now()
	res, stdout, stderr, err := run(t, newLocal(t, Config{Cgroup: CgroupOff}), spec)
	took := time.Since(begun)
	pid := escapedPID(t, stdout)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	if !strings.HasSuffix(stdout, "done\n") {
		t.Fatalf("stdout %q, want the escaped pid and done", stdout)
	}
	if backendtest.HostProcessGone(t, pid) {
		t.Errorf("escaped process %d is gone: with cgroup off, nothing should reach it", pid)
	}
	if limit := outputDrain + 5*time.Second; took > limit {
		t.Errorf("Run took %s, want at most %s", took, limit)
	}
}

// TestCgroupFallback: where no cgroup can be made (here, a parent that
// is not on a cgroup2 mount), auto runs jobs by their process group and
// says so once; required fails Validate, and Run, naming the setting.
func TestCgroupFallback(t *testing.T) {
	t.Parallel()
	t.Run("auto", func(t *testing.T) {
		t.Parallel()
		var logs testenv.Buffer
		l, err := New(Config{CgroupParent: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := l.Validate(t.Context()); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		}
		res, stdout, _, err := run(t, l, backends.Spec{Command: "echo ok"})
		if err != nil || res.ExitCode != 0 || stdout != "ok\n" {
			t.Errorf("exit %d, err %v, stdout %q; want a job that ran", res.ExitCode, err, stdout)
		}
		if n := strings.Count(logs.String(), "no cgroup v2 for jobs"); n != 1 {
			t.Errorf("the fallback was logged %d times, want once: %q", n, logs.String())
		}
		if desc, err := l.Describe(t.Context()); err != nil || !strings.Contains(desc, "process group of its own only") || !strings.Contains(desc, "cgroup2") {
			t.Errorf("Describe = %q, %v; want the fallback and its reason", desc, err)
		}
	})
	t.Run("required", func(t *testing.T) {
		t.Parallel()
		l, err := New(Config{Cgroup: CgroupRequired, CgroupParent: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Validate(t.Context()); err == nil || !strings.Contains(err.Error(), "cgroup") {
			t.Errorf("Validate error %v, want one naming cgroup", err)
		}
		res, _, _, err := run(t, l, backends.Spec{Command: "echo ok"})
		if !errors.Is(err, backends.ErrUnavailable) || !res.StartedAt.IsZero() {
			t.Errorf("Run: %+v, %v; want no start and an error wrapping ErrUnavailable", res, err)
		}
	})
}

// TestGroupName: whatever the job ID, an attempt's cgroup name is one
// harmless path element, and no two are alike.
func TestGroupName(t *testing.T) {
	t.Parallel()
	want := regexp.MustCompile(`^job-[A-Za-z0-9_-]{0,64}-[0-9]+-[0-9a-f]{8}$`)
	seen := map[string]bool{}
	for _, id := range []string{"", "01JABCDEF", "../../..", "a/b", "cgroup.kill", "a\x00b", "é ñ\n", strings.Repeat("x/", 100)} {
		name := groupName(id, 3)
		if !want.MatchString(name) || seen[name] {
			t.Errorf("groupName(%q, 3) = %q, want a fresh name matching %s", id, name, want)
		}
		seen[name] = true
	}
}
