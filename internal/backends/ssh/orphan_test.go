package ssh

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// abandoned runs attempt 1 of job until its output holds ready, then cuts
// the worker off the host for good: Run gives up with ErrUnavailable while
// the remote job runs on. The proxy is unblocked before it returns.
func abandoned(t *testing.T, b *Backend, proxy *sshtest.Proxy, spec backends.Spec, ready string) *testenv.Buffer {
	t.Helper()
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := start(ctx, b, spec, &stdout, &stderr)
	stdout.WaitFor(t, ready, 20*time.Second)
	proxy.Block()
	o := <-done
	proxy.Unblock()
	if !errors.Is(o.err, backends.ErrUnavailable) {
		t.Fatalf("Run with the host unreachable: %+v, %v; want ErrUnavailable", o.res, o.err)
	}
	return &stdout
}

func alive(t *testing.T, pid int) bool { return !backendtest.HostProcessGone(t, pid) }

// TestNextAttemptKillsOrphan: attempt 1 loses its worker; attempt 2, under
// on_orphan: kill, finds it still running and kills it before starting.
func TestNextAttemptKillsOrphan(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, proxy := f.proxiedConfig(t)
	cfg.ReconnectTimeout = time.Second
	b := backend(t, cfg)
	owner := filepath.Join(t.TempDir(), "owner")
	// A job that refuses to run while an earlier copy of it still does.
	cmd := `f=` + owner + `
if [ -f $f ] && kill -0 "$(cat $f)" 2>/dev/null; then echo OVERLAP; exit 3; fi
echo $$ >$f; echo started
[ "$ATTEMPT" = 1 ] && sleep 300
echo done`
	spec := backends.Spec{JobID: "orphan-kill", Attempt: 1, Command: cmd, Env: map[string]string{"ATTEMPT": "1"}, KillGrace: time.Second}
	abandoned(t, b, proxy, spec, "started")
	data, err := os.ReadFile(owner)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if !alive(t, first) {
		t.Fatalf("attempt 1 (pid %d) died with the connection: it should run on detached", first)
	}

	spec.Attempt, spec.Env = 2, map[string]string{"ATTEMPT": "2"}
	var stdout, stderr testenv.Buffer
	res, err := b.Run(t.Context(), spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
	if err != nil || res.ExitCode != 0 || stdout.String() != "started\ndone\n" {
		t.Fatalf("attempt 2: %+v, %v, stdout %q (OVERLAP means attempt 1 still ran)", res, err, stdout.String())
	}
	if alive(t, first) {
		t.Errorf("attempt 1 (pid %d) still runs", first)
	}
	if _, err := os.Stat(filepath.Join(cfg.RunRoot, "orphan-kill-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("attempt 1's run directory was not removed: %v", err)
	}
}

// TestNextAttemptAdoptsOrphan: under on_orphan: adopt, attempt 2 takes
// over attempt 1's still-running process; its output arrives whole.
func TestNextAttemptAdoptsOrphan(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, proxy := f.proxiedConfig(t)
	cfg.ReconnectTimeout, cfg.OnOrphan = time.Second, orphanAdopt
	b := backend(t, cfg)
	spec := backends.Spec{JobID: "orphan-adopt", Attempt: 1, Command: numbered(40)}
	abandoned(t, b, proxy, spec, "\n5\n")

	spec.Attempt = 2
	var stdout, stderr testenv.Buffer
	res, err := b.Run(t.Context(), spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
	mustBeNumbered(t, outcome{res, err}, &stdout, &stderr, 40)
	if _, err := os.Stat(filepath.Join(cfg.RunRoot, "orphan-adopt-2")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("attempt 2 launched a second copy: %v", err)
	}
}

// TestRunDirectoryCleanup: a committed success removes the run directory,
// a failure keeps it until KeepFailed has passed; the reaper kills running
// orphans of its deployment whose attempt is not live, and no others.
func TestRunDirectoryCleanup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, proxy := f.proxiedConfig(t)
	cfg.ReconnectTimeout = time.Second
	b := backend(t, cfg)
	run := func(id string, cmd string) backends.Spec {
		t.Helper()
		spec := backends.Spec{JobID: id, Attempt: 1, Command: cmd, Deployment: "d1", Worker: "w1"}
		if _, err := b.Run(t.Context(), spec, backends.Output{}); err != nil {
			t.Fatal(err)
		}
		return spec
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(cfg.RunRoot, name))
		return err == nil
	}
	ok, failed := run("ok", "true"), run("failed", "exit 1")
	if err := b.Finished(t.Context(), ok, true); err != nil {
		t.Fatal(err)
	}
	if err := b.Finished(t.Context(), failed, false); err != nil {
		t.Fatal(err)
	}
	if exists("ok-1") || !exists("failed-1") {
		t.Fatalf("after Finished: ok-1 exists %v (want false), failed-1 exists %v (want true)", exists("ok-1"), exists("failed-1"))
	}

	// Two orphans still running: one of this deployment, one of another.
	var pids []int
	for _, dep := range []string{"d1", "d2"} {
		spec := backends.Spec{JobID: "orphan-" + dep, Attempt: 1, Deployment: dep, Worker: "w1", Command: `echo "pid $$"; exec sleep 300`}
		out := abandoned(t, b, proxy, spec, "pid ")
		pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out.String(), "pid ")))
		pids = append(pids, pid)
		t.Cleanup(func() {
			_, _ = b.exec(context.Background(), mustConn(t, b), stopScript, filepath.Join(cfg.RunRoot, spec.JobID+"-1"), "1")
		})
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(filepath.Join(cfg.RunRoot, "failed-1", "exit"), old, old); err != nil {
		t.Fatal(err)
	}
	var asked []string
	n, err := b.ReapOrphans(t.Context(), "d1", func(job string, attempt int, worker string) bool {
		asked = append(asked, job+"/"+strconv.Itoa(attempt)+"/"+worker)
		return false
	})
	if err != nil || n != 1 {
		t.Fatalf("ReapOrphans: %d, %v; want 1 (asked about %v)", n, err, asked)
	}
	if alive(t, pids[0]) || exists("orphan-d1-1") {
		t.Errorf("the d1 orphan survives (pid %d alive %v, dir %v)", pids[0], alive(t, pids[0]), exists("orphan-d1-1"))
	}
	if !alive(t, pids[1]) || !exists("orphan-d2-1") {
		t.Errorf("the reaper touched another deployment's run")
	}
	if exists("failed-1") {
		t.Errorf("failed-1 outlived KeepFailed")
	}
}

func mustConn(t *testing.T, b *Backend) *conn {
	c, err := b.pool.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunEndsWhenReapedBetweenPolls: a reaper may stop a run and remove
// its directory between two polls of the worker following it, so that
// the worker never sees the exit status. Its streams are open by then
// (and read on after their files are removed); Run still returns, with
// an error, rather than following the removed run for ever.
func TestRunEndsWhenReapedBetweenPolls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(t)
	b := backend(t, cfg)
	spec := backends.Spec{JobID: "reaped-between-polls", Attempt: 1, Command: "echo ready; exec sleep 300", KillGrace: time.Second}
	var stdout, stderr testenv.Buffer
	done := start(t.Context(), b, spec, &stdout, &stderr)
	stdout.WaitFor(t, "ready", 20*time.Second)
	// One remote script removes the directory first, then kills the job:
	// the supervisor's exit status has nowhere to go.
	dir := filepath.Join(cfg.RunRoot, spec.JobID+"-1")
	if _, err := b.exec(t.Context(), mustConn(t, b), `main() { p=$(cat "$1/pid"); rm -rf -- "$1"; kill -KILL -"$p"; }
main "$@"
`, dir); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if !errors.Is(o.err, errGone) {
			t.Fatalf("Run of a reaped run: %+v, %v; want an error naming the run directory gone", o.res, o.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run still follows a run whose directory was removed a minute ago")
	}
}
