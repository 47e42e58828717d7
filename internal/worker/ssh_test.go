package worker_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestSSHOrphanKilledBeforeNextAttempt: kill -9 of the worker mid-job
// leaves the remote job running; the next attempt, on another worker with
// on_orphan: kill, kills it before its own command starts. The command
// itself checks: it refuses to run (OVERLAP) while an earlier copy lives.
func TestSSHOrphanKilledBeforeNextAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dir := t.TempDir()
	key := sshtest.NewKey(t, dir, "id", "")
	srv := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key}})
	cfgFile := filepath.Join(dir, "worker.yaml")
	cfg := fmt.Sprintf(`backends:
  lab:
    kind: ssh
    host: 127.0.0.1
    port: %d
    user: %s
    identity_files: [%s]
    known_hosts: [%s]
    run_root: %s
    on_orphan: kill
`, srv.Port, srv.User, key.Path, srv.WriteKnownHosts(t), filepath.Join(dir, "runs"))
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	owner := filepath.Join(dir, "owner")
	cmd := `f=` + owner + `
if [ -f $f ] && kill -0 "$(cat $f)" 2>/dev/null; then echo OVERLAP; exit 3; fi
echo $$ >$f; echo started
if [ ! -f $f.first ]; then touch $f.first; sleep 300; fi
echo done`

	a := startProc(t, e.url, "ssh-worker-a", "--config", cfgFile)
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Backend: "lab", Command: cmd, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	var first int
	if ok, _ := sandruntest.Poll(30*time.Second, func() (bool, string) {
		if data, err := os.ReadFile(owner); err == nil {
			first, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		return first != 0, ""
	}); !ok {
		t.Fatalf("the job never started remotely; worker log:\n%s", a.logs())
	}
	_ = a.cmd.Process.Kill()
	<-a.done
	if backendtest.HostProcessGone(t, first) {
		t.Fatalf("the remote job (pid %d) died with its worker: nothing to test", first)
	}

	startProc(t, e.url, "ssh-worker-b", "--config", cfgFile)
	r := sandruntest.WaitResult(t, e.c, spec.ID, time.Minute)
	var out strings.Builder
	if err := e.c.Output(e.ctx, r, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if r.State != jobs.StateSucceeded || r.Attempt < 2 || out.String() != "started\ndone\n" {
		t.Fatalf("result %s, attempt %d, stdout %q: want succeeded on a later attempt without OVERLAP", r.State, r.Attempt, out.String())
	}
	if !backendtest.HostProcessGone(t, first) {
		t.Errorf("attempt 1 (pid %d) still runs", first)
	}
	// The run directory goes once the result is committed: soon after
	// the result is visible.
	runDir := filepath.Join(dir, "runs", fmt.Sprintf("%s-%d", spec.ID, r.Attempt))
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		_, err := os.Stat(runDir)
		return errors.Is(err, os.ErrNotExist), fmt.Sprintf("the successful attempt's run directory %s was not removed after the commit", runDir)
	})
}
