package vercel

import (
	"slices"
	"syscall"
	"testing"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// TestTimeoutEndsSandbox: a job that ignores TERM outlives its deadline;
// the fake confirms the backend killed the command (TERM, then KILL after
// the grace), stopped its session and deleted its sandbox, and no process
// the job started still runs.
func TestTimeoutEndsSandbox(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	sandboxtest.TimeoutEndsSandbox(t, newBackend(t, fakeConfig(f)), func(t *testing.T) {
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
	})
}
