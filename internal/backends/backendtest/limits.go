package backendtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
)

// holdCommand holds n bytes in one process's memory — tail must keep a
// line-less input whole to print its last lines — then prints how many
// bytes got through, and fails unless all of them did.
func holdCommand(n int64) string {
	return fmt.Sprintf(`n=$(head -c %d /dev/zero | tail | wc -c); echo $n; [ "$n" -eq %d ]`, n, n)
}

// testResourceLimits: a backend that declares ResourceLimits, built with
// a small memory limit (Options.Limited), runs a job that holds a quarter
// of it, and does not let one that holds one and a half times it succeed:
// it is killed, its allocations fail, or Run reports an error (docker's
// ErrOOM). The two sizes also catch a limit that never reached where the
// job runs: with no limit the big job succeeds; with a service's default
// that is smaller than the profile's (Daytona's 1 GB) the small one fails,
// and with one that is bigger but less than 1.5 times it (Vercel's 2
// vCPUs for 1) the big one succeeds.
func (s *suite) testResourceLimits(t *testing.T) {
	t.Parallel()
	if !s.newBackend(t).Capabilities().ResourceLimits {
		t.Skip("no ResourceLimits declared")
	}
	if s.opts.Limited == nil {
		t.Fatal("ResourceLimits declared, but Options.Limited is nil: the claim is not checked")
	}
	b, limit, why := s.opts.Limited(t)
	if b == nil {
		// A declared claim is checked, or the suite fails: no way out.
		t.Fatalf("ResourceLimits declared, but Options.Limited gave no backend to check it with: %s", why)
	}
	if limit < 4<<20 {
		t.Fatalf("Options.Limited gave a limit of %d bytes; want at least 4 MiB, which a shell and its tools need", limit)
	}
	if !b.Capabilities().ResourceLimits {
		t.Fatalf("the backend from Options.Limited declares no ResourceLimits: %+v", b.Capabilities())
	}

	under := limit / 4
	o, stdout, stderr := s.runOn(t, b, backends.Spec{JobID: "limits-under", Attempt: 1, Command: holdCommand(under)})
	if o.err != nil || o.res.ExitCode != 0 || strings.TrimSpace(stdout.String()) != fmt.Sprint(under) {
		t.Fatalf("a job holding %d bytes, a quarter of the %d-byte limit: %+v, %v; stdout %q, stderr %q; want it to succeed",
			under, limit, o.res, o.err, stdout.String(), stderr.String())
	}

	over := limit * 3 / 2
	o, stdout, stderr = s.runOn(t, b, backends.Spec{JobID: "limits-over", Attempt: 1, Command: holdCommand(over)})
	if o.err == nil && o.res.ExitCode == 0 && o.res.Signal == "" {
		t.Fatalf("ResourceLimits declared, but a job holding %d bytes, 1.5 times the %d-byte limit, succeeded: %+v; stdout %q, stderr %q",
			over, limit, o.res, stdout.String(), stderr.String())
	}
	t.Logf("over the limit: exit %d, signal %q, err %v, stderr %q", o.res.ExitCode, o.res.Signal, o.err, stderr.String())
}
