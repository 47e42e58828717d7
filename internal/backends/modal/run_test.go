package modal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// TestSandboxDefinition: a job's sandbox gets the profile's image,
// resources, network and tags, and its exec exactly the job's env and dir.
func TestSandboxDefinition(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	cfg := fakeConfig(t, f)
	cfg.CPU, cfg.MemoryMiB = 2, 512
	cfg.Network, cfg.AllowedCIDRs = NetworkAllowlist, []string{"10.1.0.0/16"}
	b := newBackend(t, cfg)
	dir := t.TempDir()
	spec := backends.Spec{JobID: "j1", Attempt: 2, Worker: "w1", Deployment: "d1", Dir: dir,
		Command: "pwd", Env: map[string]string{"A": "1", "EMPTY": ""}}
	var stdout testenv.Buffer
	res, err := b.Run(t.Context(), spec, backends.Output{Stdout: &stdout})
	if err != nil || res.ExitCode != 0 || stdout.String() != dir+"\n" {
		t.Fatalf("Run: %+v, %v, stdout %q", res, err, stdout.String())
	}
	all := f.Sandboxes()
	if len(all) != 1 {
		t.Fatalf("%d sandboxes, want 1", len(all))
	}
	sb := all[0]
	want := map[string]string{TagManaged: "true", TagDeployment: "d1", TagJob: "j1", TagAttempt: "2", TagWorker: "w1"}
	if !maps.Equal(sb.Tags, want) {
		t.Errorf("tags %v, want %v", sb.Tags, want)
	}
	if sb.MilliCPU != 2000 || sb.MilliCPUMax != 2000 || sb.MemoryMiB != 512 || sb.MemoryMiBMax != 512 {
		t.Errorf("resources: cpu %d/%d memory %d/%d; want 2000/2000, 512/512", sb.MilliCPU, sb.MilliCPUMax, sb.MemoryMiB, sb.MemoryMiBMax)
	}
	if sb.Network != "ALLOWLIST" || !slices.Equal(sb.AllowedCIDRs, cfg.AllowedCIDRs) || sb.Timeout != DefaultSandboxTimeout {
		t.Errorf("network %s %v, timeout %s", sb.Network, sb.AllowedCIDRs, sb.Timeout)
	}
	if sb.Status != "terminated" {
		t.Errorf("status %q: the job's sandbox was not terminated", sb.Status)
	}
	if imgs := f.Images(); len(imgs) != 1 || imgs[0] != "FROM alpine:3.21" {
		t.Errorf("images %q", imgs)
	}
	if ex := sb.Execs[0]; !maps.Equal(ex.Env, spec.Env) || ex.Dir != dir {
		t.Errorf("exec env %v dir %q; want exactly %v, %q", ex.Env, ex.Dir, spec.Env, dir)
	}
}

// TestDefaultNetworkIsBlocked: with no network setting, sandboxes have none.
func TestDefaultNetworkIsBlocked(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	b := newBackend(t, fakeConfig(t, f))
	if _, err := b.Run(t.Context(), backends.Spec{Command: "true"}, backends.Output{}); err != nil {
		t.Fatal(err)
	}
	if sb := f.Sandboxes()[0]; sb.Network != "BLOCKED" {
		t.Errorf("network %s, want BLOCKED", sb.Network)
	}
}

// TestBadSpecsArePermanent: what Modal cannot run fails as permanent, and
// leaves no sandbox running.
func TestBadSpecsArePermanent(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	b := newBackend(t, fakeConfig(t, f))
	for _, spec := range []backends.Spec{
		{Command: "true", Env: map[string]string{"BAD-NAME": "x"}},
		{Command: "true", Dir: "relative"},
		{Command: "true", Dir: "/no/such/dir"},
		{Command: strings.Repeat("x", maxArgBytes)},
		{Command: "true", Container: &backends.ContainerOptions{Image: "other"}},
	} {
		if _, err := b.Run(t.Context(), spec, backends.Output{}); !errors.Is(err, backends.ErrPermanent) {
			t.Errorf("Run(%.60v): %v; want ErrPermanent", spec, err)
		}
	}
	if live := f.Live(); len(live) != 0 {
		t.Errorf("sandboxes left running: %+v", live)
	}
}

// TestDeadlineTerminatesSandbox: a job that ignores SIGTERM reaches its
// deadline; it is killed after its grace, its sandbox terminated, and its
// processes are gone. The sandbox's own timeout followed the deadline.
func TestDeadlineTerminatesSandbox(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	b := newBackend(t, fakeConfig(t, f))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	var stdout testenv.Buffer
	spec := backends.Spec{JobID: "late", Attempt: 1, KillGrace: 500 * time.Millisecond,
		Command: `trap '' TERM; echo "pid $$"; sleep 300 & echo "pid $!"; wait`}
	res, err := b.Run(ctx, spec, backends.Output{Stdout: &stdout})
	if !errors.Is(err, context.DeadlineExceeded) || res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Fatalf("Run: %+v, %v; want exit -1, SIGKILL, DeadlineExceeded", res, err)
	}
	ps := backendtest.PIDs(t, stdout.String())
	if len(ps) != 2 {
		t.Fatalf("pids %v in %q", ps, stdout.String())
	}
	backendtest.WaitGone(t, ps)
	sb := f.Sandboxes()[0]
	if sb.Status != "terminated" {
		t.Errorf("sandbox status %q, want terminated", sb.Status)
	}
	// 2s deadline + 0.5s grace + 30s margin, in whole seconds.
	if sb.Timeout < 31*time.Second || sb.Timeout > 33*time.Second {
		t.Errorf("sandbox timeout %s, want about 33s", sb.Timeout)
	}
}

// TestSandboxTimeoutEndsJob: when Modal's own sandbox timeout ends a job
// (the worker set no deadline), the fake kills its processes and Run
// reports the timeout as permanent rather than an exit of 137.
func TestSandboxTimeoutEndsJob(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	cfg := fakeConfig(t, f)
	cfg.SandboxTimeout = time.Second
	b := newBackend(t, cfg)
	var stdout testenv.Buffer
	res, err := b.Run(t.Context(), backends.Spec{Command: `echo "pid $$"; sleep 300 & echo "pid $!"; wait`}, backends.Output{Stdout: &stdout})
	if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), "reached its timeout") {
		t.Fatalf("Run: %+v, %v; want a permanent timeout error", res, err)
	}
	backendtest.WaitGone(t, backendtest.PIDs(t, stdout.String()))
	if sb := f.Sandboxes()[0]; sb.Status != "timeout" {
		t.Errorf("sandbox status %q, want timeout", sb.Status)
	}
	// The fake records a kill once its signal is sent, which the killed
	// processes may not wait for.
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		return len(f.Killed()) > 0, fmt.Sprintf("killed %v, want the job's group", f.Killed())
	})
}

// TestSessions: jobs with one session key share a sandbox, kept between
// jobs; what a job leaves running is killed when it ends; an idle session
// is terminated by the next reap; another key gets its own sandbox.
func TestSessions(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	cfg := fakeConfig(t, f)
	cfg.SessionIdle = time.Second
	b := newBackend(t, cfg)
	run := func(job, session, cmd string) string {
		t.Helper()
		var stdout testenv.Buffer
		spec := backends.Spec{JobID: job, Attempt: 1, Worker: "w1", Session: session, Command: cmd}
		res, err := b.Run(t.Context(), spec, backends.Output{Stdout: &stdout})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %+v, %v", job, res, err)
		}
		return stdout.String()
	}
	left := run("j1", "s1", `echo kept >state; sleep 300 & echo "pid $!"`)
	backendtest.WaitGone(t, backendtest.PIDs(t, left))
	beforeJ2 := time.Now()
	if got := run("j2", "s1", "cat state"); got != "kept\n" {
		t.Errorf("the session's second job read %q, want the first job's file", got)
	}
	run("j3", "s2", "true")
	live := f.Live()
	if len(live) != 2 || len(f.Sandboxes()) != 2 {
		t.Fatalf("%d live of %d sandboxes, want 2 of 2", len(live), len(f.Sandboxes()))
	}
	if s1 := live[0]; s1.Tags[TagSession] != "s1" || s1.Tags[TagJob] != "j2" || s1.IdleTimeout != time.Second {
		t.Errorf("session s1: tags %v, idle timeout %s; want s1, last job j2, 1s", s1.Tags, s1.IdleTimeout)
	}
	// Reaps from now on: none before the sessions have been idle for
	// SessionIdle, both once they have.
	reaped := 0
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		n, err := b.ReapOrphans(t.Context(), "", func(string, int, string) bool { return true })
		if err != nil {
			t.Fatalf("ReapOrphans: %v", err)
		}
		if n > 0 && time.Since(beforeJ2) < cfg.SessionIdle {
			t.Errorf("ReapOrphans reaped %d sessions used less than %s ago", n, cfg.SessionIdle)
		}
		reaped += n
		return reaped == 2 && len(f.Live()) == 0, fmt.Sprintf("ReapOrphans after idle: %d reaped, %d live; want 2 reaped, none live", reaped, len(f.Live()))
	})
	if reaped != 2 {
		t.Errorf("%d sessions reaped, want 2", reaped)
	}
}
