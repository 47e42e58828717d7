package vercel

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
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// The helper process's environment.
const (
	helperEnv     = "SANDRUN_VERCEL_HELPER"
	helperURL     = "SANDRUN_VERCEL_HELPER_URL"
	helperKeyEnv  = "SANDRUN_VERCEL_HELPER_KEY"
	helperJob     = "SANDRUN_VERCEL_HELPER_JOB"
	helperTeam    = "SANDRUN_VERCEL_HELPER_TEAM"
	helperProject = "SANDRUN_VERCEL_HELPER_PROJECT"
)

// TestHelperProcess is not a test: killedWorker runs the test binary as a
// worker (Go's os/exec helper-process pattern) that starts a long job on
// the fake, printing the job's pid, until it is killed.
func TestHelperProcess(*testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	b, err := New(Config{APIURL: os.Getenv(helperURL), TokenEnv: helperKeyEnv,
		TeamID: os.Getenv(helperTeam), ProjectID: os.Getenv(helperProject)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(2)
	}
	spec := backends.Spec{JobID: os.Getenv(helperJob), Attempt: 1, Worker: "helper", Deployment: "d1",
		Command: `echo "pid $$"; exec sleep 300`}
	_, err = b.Run(context.Background(), spec, backends.Output{Stdout: os.Stdout, Stderr: os.Stderr})
	fmt.Fprintln(os.Stderr, "helper: Run returned:", err)
	os.Exit(3)
}

// killedWorker runs job in a helper worker process against f, kills the
// worker with SIGKILL once the job runs, and returns the job's pid.
func killedWorker(t *testing.T, f *verceltest.Fake, job string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperURL+"="+f.URL, helperKeyEnv+"="+f.Token, helperJob+"="+job,
		helperTeam+"="+f.TeamID, helperProject+"="+f.ProjectID)
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

// TestOrphanReaped: two workers are killed mid-job (kill -9), leaving
// their sandboxes and jobs running. A fresh backend's ReapOrphans stops
// and deletes the one whose attempt is not live, keeps the live one and
// ignores another deployment; then reaps the second once it is not live
// either.
func TestOrphanReaped(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	pidA, pidB := killedWorker(t, f, "orphan-a"), killedWorker(t, f, "orphan-b")
	alive := func(pid int) bool { return !backendtest.HostProcessGone(t, pid) }
	if n := len(f.Sandboxes()); n != 2 || !alive(pidA) || !alive(pidB) {
		t.Fatalf("after the kills: %d sandboxes (want 2), jobs alive %v %v (want both)", n, alive(pidA), alive(pidB))
	}

	b := newBackend(t, fakeConfig(f))
	var asked []string
	liveB := func(job string, attempt int, worker string) bool {
		asked = append(asked, fmt.Sprintf("%s/%d/%s", job, attempt, worker))
		return job == "orphan-b"
	}
	if n, err := b.ReapOrphans(t.Context(), "d1", liveB); err != nil || n != 1 {
		t.Fatalf("ReapOrphans: %d, %v; want 1 (asked %v)", n, err, asked)
	}
	slices.Sort(asked) // The API lists the newest first.
	if strings.Join(asked, " ") != "orphan-a/1/helper orphan-b/1/helper" {
		t.Errorf("live asked about %v", asked)
	}
	waitGone(t, []int{pidA})
	left := f.Sandboxes()
	if len(left) != 1 || left[0].Tags[TagJob] != "orphan-b" || !alive(pidB) {
		t.Fatalf("left %+v, job b alive %v; want orphan-b's sandbox, running", left, alive(pidB))
	}

	notLive := func(string, int, string) bool { return false }
	if n, err := b.ReapOrphans(t.Context(), "another-deployment", notLive); err != nil || n != 0 {
		t.Fatalf("ReapOrphans of another deployment: %d, %v; want 0", n, err)
	}
	if n, err := b.ReapOrphans(t.Context(), "d1", notLive); err != nil || n != 1 {
		t.Fatalf("ReapOrphans: %d, %v; want 1", n, err)
	}
	waitGone(t, []int{pidB})
	if len(f.Sandboxes()) != 0 {
		t.Errorf("sandboxes left: %+v", f.Sandboxes())
	}
}
