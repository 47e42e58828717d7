package vercel

import (
	"os"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
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
	sandboxtest.RunHelperWorker(helperEnv, helperJob, func() (backends.Backend, error) {
		return New(Config{APIURL: os.Getenv(helperURL), TokenEnv: helperKeyEnv,
			TeamID: os.Getenv(helperTeam), ProjectID: os.Getenv(helperProject)})
	})
}

// killedWorker runs job in a helper worker process against f, kills the
// worker with SIGKILL once the job runs, and returns the job's pid.
func killedWorker(t *testing.T, f *verceltest.Fake, job string) int {
	t.Helper()
	return sandboxtest.KilledWorker(t, helperEnv+"=1", helperURL+"="+f.URL, helperKeyEnv+"="+f.Token, helperJob+"="+job,
		helperTeam+"="+f.TeamID, helperProject+"="+f.ProjectID)
}

// TestOrphanReaped: two workers are killed mid-job (kill -9), leaving
// their sandboxes and jobs running. A fresh backend's ReapOrphans stops
// and deletes the one whose attempt is not live, keeps the live one and
// ignores another deployment; then reaps the second once it is not live
// either.
func TestOrphanReaped(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	sandboxtest.OrphanReaped(t, sandboxtest.Orphans[verceltest.Sandbox]{
		Fake:         f,
		KilledWorker: func(job string) int { return killedWorker(t, f, job) },
		NewBackend:   func() backends.OrphanReaper { return newBackend(t, fakeConfig(f)) },
		Job:          func(sb verceltest.Sandbox) string { return sb.Tags[TagJob] },
		AnyOrder:     true, // The API lists the newest first.
	})
}
