package sandboxtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
)

// The helper worker's deployment and worker name, as ReapOrphans sees
// them.
const (
	helperDeployment = "d1"
	helperWorker     = "helper"
)

// RunHelperWorker is the body of a backend package's TestHelperProcess,
// which is not a test: KilledWorker runs the test binary as a worker (Go's
// os/exec helper-process pattern). Unless the environment variable
// switchEnv is "1" it returns at once. Otherwise it is that worker: it
// makes a backend with newBackend and starts on it, for deployment "d1"
// as worker "helper", the long job the variable jobEnv names, which
// prints its pid; it exits (with 2 if there is no backend, else 3) only
// if Run returns.
func RunHelperWorker(switchEnv, jobEnv string, newBackend func() (backends.Backend, error)) {
	if os.Getenv(switchEnv) != "1" {
		return
	}
	b, err := newBackend()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	spec := backends.Spec{JobID: os.Getenv(jobEnv), Attempt: 1, Worker: helperWorker, Deployment: helperDeployment,
		Command: `echo "pid $$"; exec sleep 300`}
	_, err = b.Run(context.Background(), spec, backends.Output{Stdout: os.Stdout, Stderr: os.Stderr})
	fmt.Fprintln(os.Stderr, "helper: Run returned:", err)
	os.Exit(3)
}

// KilledWorker runs the test binary's TestHelperProcess (see
// RunHelperWorker) with env added to the test's environment, kills the
// worker with SIGKILL once its job runs, and returns the job's pid.
func KilledWorker(t *testing.T, env ...string) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "pid ")); err == nil {
				pid <- n
				return
			}
		}
		pid <- 0
	}()
	var jobPid int
	select {
	case jobPid = <-pid:
	case <-time.After(time.Minute):
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if jobPid == 0 {
		t.Fatalf("the helper worker never printed its job's pid")
	}
	return jobPid
}

// Orphans is what OrphanReaped needs of one backend and its fake; S is
// the fake's description of a sandbox.
type Orphans[S any] struct {
	// Fake is the fake the workers and the backend reach.
	Fake Fake[S]
	// KilledWorker runs job in a helper worker process against Fake,
	// kills the worker with SIGKILL once the job runs and returns the
	// job's pid: KilledWorker with the backend's helper environment.
	KilledWorker func(job string) int
	// NewBackend returns a fresh backend on Fake.
	NewBackend func() backends.OrphanReaper
	// Job returns the job a sandbox runs, as its label or tag says.
	Job func(S) string
	// AnyOrder: the API lists sandboxes in another order than their
	// creation's (newest first), so the order ReapOrphans asks live about
	// them is not checked, only which it asks about.
	AnyOrder bool
}

// OrphanReaped is the orphan scenario: two workers are killed mid-job
// (kill -9), leaving their sandboxes and jobs running. A fresh backend's
// ReapOrphans ends the sandbox whose attempt is not live, keeps the live
// one and ignores another deployment; then reaps the second once it is
// not live either.
func OrphanReaped[S any](t *testing.T, o Orphans[S]) {
	t.Helper()
	f := o.Fake
	pidA, pidB := o.KilledWorker("orphan-a"), o.KilledWorker("orphan-b")
	alive := func(pid int) bool { return !backendtest.HostProcessGone(t, pid) }
	if n := len(f.Sandboxes()); n != 2 || !alive(pidA) || !alive(pidB) {
		t.Fatalf("after the kills: %d sandboxes (want 2), jobs alive %v %v (want both)", n, alive(pidA), alive(pidB))
	}

	b := o.NewBackend()
	var asked []string
	liveB := func(job string, attempt int, worker string) bool {
		asked = append(asked, fmt.Sprintf("%s/%d/%s", job, attempt, worker))
		return job == "orphan-b"
	}
	if n, err := b.ReapOrphans(t.Context(), helperDeployment, liveB); err != nil || n != 1 {
		t.Fatalf("ReapOrphans: %d, %v; want 1 (asked %v)", n, err, asked)
	}
	if o.AnyOrder {
		slices.Sort(asked)
	}
	if strings.Join(asked, " ") != "orphan-a/1/helper orphan-b/1/helper" {
		t.Errorf("live asked about %v", asked)
	}
	backendtest.WaitGone(t, []int{pidA})
	left := f.Sandboxes()
	if len(left) != 1 || o.Job(left[0]) != "orphan-b" || !alive(pidB) {
		t.Fatalf("left %+v, job b alive %v; want orphan-b's sandbox, running", left, alive(pidB))
	}

	notLive := func(string, int, string) bool { return false }
	if n, err := b.ReapOrphans(t.Context(), "another-deployment", notLive); err != nil || n != 0 {
		t.Fatalf("ReapOrphans of another deployment: %d, %v; want 0", n, err)
	}
	if n, err := b.ReapOrphans(t.Context(), helperDeployment, notLive); err != nil || n != 1 {
		t.Fatalf("ReapOrphans: %d, %v; want 1", n, err)
	}
	backendtest.WaitGone(t, []int{pidB})
	if len(f.Sandboxes()) != 0 {
		t.Errorf("sandboxes left: %+v", f.Sandboxes())
	}
}
