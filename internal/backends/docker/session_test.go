package docker

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
)

// inSession runs every job in one session container.
type inSession struct {
	*Docker
	key string
}

func (s inSession) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	spec.Session = s.key
	return s.Docker.Run(ctx, spec, out)
}

// Capabilities: a job in a session has the session's filesystem, never a
// workspace (jobs.Spec refuses the two together).
func (s inSession) Capabilities() backends.Capabilities {
	c := s.Docker.Capabilities()
	c.Workspaces = false
	return c
}

func TestConformanceSession(t *testing.T) {
	d := newTestBackend(t)
	backendtest.Run(t, func(*testing.T) backends.Backend { return inSession{d, "conformance"} }, backendtest.Options{
		TempDir:    func(*testing.T) string { return "/work" },
		StopMargin: 15 * time.Second,
		Refuses:    []string{"workspace"},
		Reaper: func(*testing.T, backends.Backend) (backends.OrphanReaper, string) {
			return nil, "the suite's backends share one *Docker, whose own sessions are never orphans"
		},
		Limited: func(t *testing.T) (backends.Backend, int64, string) {
			return inSession{newLimitedBackend(t, testMemoryLimit), "limited"}, testMemoryLimit, ""
		},
		HostAccess: hostBindSpec,
	})
}

// A timeout in a session container kills the command's grandchildren
// inside the container (checked with ps there), and the container stays
// usable for the next job.
func TestSessionTimeoutKillsGrandchildren(t *testing.T) {
	t.Parallel()
	d := newTestBackend(t)
	s := inSession{d, "grandchildren"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	tree := `trap '' TERM; sh -c 'trap "" TERM; sleep 301' & sh -c 'sleep 302 & wait' & echo started; wait`
	var out strings.Builder
	_, err := s.Run(ctx, backends.Spec{JobID: "tree", Command: tree, KillGrace: 500 * time.Millisecond}, backends.Output{Stdout: &out, Stderr: io.Discard})
	if err == nil || !strings.Contains(out.String(), "started") {
		t.Fatalf("timed-out run: %v, output %q", err, out.String())
	}
	var ps strings.Builder
	res, err := s.Run(context.Background(), backends.Spec{JobID: "ps", Command: "ps -o pid,args"}, backends.Output{Stdout: &ps, Stderr: io.Discard})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("session unusable after the timeout: %+v %v", res, err)
	}
	if strings.Contains(ps.String(), "sleep 301") || strings.Contains(ps.String(), "sleep 302") {
		t.Fatalf("grandchildren survived in the container:\n%s", ps.String())
	}
	if !strings.Contains(ps.String(), "ps -o pid,args") {
		t.Fatalf("ps output %q does not show the ps itself", ps.String())
	}
}
