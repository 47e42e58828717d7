package modal

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// TestKilledWorkerOrphanIsReaped: a worker (this test binary, re-run as
// a helper process) is killed with SIGKILL mid-job. Its sandbox and job
// live on in the fake. A fresh backend's ReapOrphans keeps it while its
// attempt is live, then terminates it — and nothing of another
// deployment — once it is not.
func TestKilledWorkerOrphanIsReaped(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	orphan, orphanPids := killedWorker(t, f)

	// A job of another deployment, running on another worker.
	other := newBackend(t, fakeConfig(t, f))
	ctx, cancel := context.WithCancel(t.Context())
	var otherOut testenv.Buffer
	done := make(chan error, 1)
	go func() {
		spec := backends.Spec{Deployment: "d2", JobID: "other", Attempt: 1, Worker: "w2", Command: "echo ready; exec sleep 300"}
		_, err := other.Run(ctx, spec, backends.Output{Stdout: &otherOut})
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the other deployment's job: %v; want it cancelled", err)
		}
	}()
	otherOut.WaitFor(t, "ready", time.Minute)

	reaper := newBackend(t, fakeConfig(t, f))
	var asked []string
	n, err := reaper.ReapOrphans(t.Context(), "d1", func(job string, attempt int, worker string) bool {
		asked = append(asked, job+"/"+worker)
		return job == "orphan" && attempt == 1 && worker == "w-dead"
	})
	if err != nil || n != 0 || !slices.Equal(asked, []string{"orphan/w-dead"}) || len(f.Live()) != 2 {
		t.Fatalf("ReapOrphans, attempt live: %d, %v, asked about %v, %d live; want 0 reaped, only the orphan asked about", n, err, asked, len(f.Live()))
	}
	n, err = reaper.ReapOrphans(t.Context(), "d1", func(string, int, string) bool { return false })
	if err != nil || n != 1 {
		t.Fatalf("ReapOrphans, attempt not live: %d, %v; want 1", n, err)
	}
	backendtest.WaitGone(t, orphanPids)
	for _, sb := range f.Sandboxes() {
		if sb.ID == orphan && sb.Status != "terminated" {
			t.Errorf("orphan sandbox status %q, want terminated", sb.Status)
		}
	}
	if live := f.Live(); len(live) != 1 || live[0].Tags[TagDeployment] != "d2" {
		t.Errorf("live after the reap: %+v; want only deployment d2's job", live)
	}
}

// killedWorker runs a worker (this test binary, re-run as a helper
// process; see helperMain) against f, kills it with SIGKILL once its job
// of deployment d1 (job "orphan", attempt 1, worker "w-dead") runs, and
// returns the job's sandbox, which lives on, and the job's pids.
func killedWorker(t *testing.T, f *modaltest.Fake) (sandbox string, pids []int) {
	t.Helper()
	var helperOut, helperErr testenv.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+t.TempDir(), "MODAL_SERVER_URL="+f.URL,
		"MODAL_TOKEN_ID="+f.TokenID, "MODAL_TOKEN_SECRET="+f.TokenSecret,
		"MODAL_CONFIG_PATH="+filepath.Join(t.TempDir(), "absent.toml"), "MODAL_PROFILE=", "MODAL_SANDBOX_V2=")
	cmd.Stdout, cmd.Stderr = &helperOut, &helperErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	helperOut.WaitFor(t, "ready", time.Minute)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	pids = backendtest.PIDs(t, helperOut.String())
	live := f.Live()
	if len(live) != 1 || live[0].Tags[TagJob] != "orphan" || len(pids) != 1 || backendtest.HostProcessGone(t, pids[0]) {
		t.Fatalf("after kill -9: live sandboxes %+v, job pids %v; want the orphan running\nhelper stderr: %s", live, pids, helperErr.String())
	}
	return live[0].ID, pids
}
