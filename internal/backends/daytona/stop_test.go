package daytona

import (
	"slices"
	"syscall"
	"testing"

	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// TestTimeoutEndsSandbox: a job that ignores TERM outlives its deadline;
// it is killed after the grace and its sandbox deleted. The fake confirms
// it: the sandbox is gone, its process group was killed, and no process
// the job started still runs.
func TestTimeoutEndsSandbox(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	sandboxtest.TimeoutEndsSandbox(t, newBackend(t, fakeConfig(f)), func(t *testing.T) {
		deleted := f.Deleted()
		if len(deleted) != 1 || len(f.Sandboxes()) != 0 {
			t.Fatalf("deleted %v, left %+v; want the one sandbox deleted", deleted, f.Sandboxes())
		}
		if !slices.ContainsFunc(f.Kills(), func(k daytonatest.Kill) bool {
			return k.Sandbox == deleted[0] && k.Signal == syscall.SIGKILL && k.Reason == "sandbox deleted"
		}) {
			t.Errorf("the fake did not kill the sandbox's processes: %+v", f.Kills())
		}
	})
}
