// Package backendtest is the conformance suite that every backends.Backend
// implementation runs from its own tests:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, func(t *testing.T) backends.Backend { ... }, backendtest.Options{...})
//	}
//
// It checks the contract documented on backends.Backend, every capability
// a backend declares and every optional interface it implements (through
// the Options hook each needs: a claim without its hook fails), plus two
// rules that every backend keeps:
//
//   - A job leaves nothing running: when its main process ends, on its own
//     or because ctx was done, its other processes are ended too, and Run
//     does not wait for a background process that still holds the output.
//   - A job's environment is Spec.Env plus what the backend documents,
//     never the worker's own environment; its standard input is empty.
//
// Job commands are POSIX sh; besides shell built-ins they need sh, sleep,
// head, tail and wc on PATH, and /dev/zero, in the backend's environment.
package backendtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// Options declares what the backend's environment supports. The zero
// value suits a backend that shares the test's filesystem and whose
// processes the test cannot see.
type Options struct {
	// TempDir returns an existing directory in the filesystem where the
	// backend runs commands, for the working directory test. Nil means
	// t.TempDir().
	TempDir func(t *testing.T) string
	// ProcessGone reports whether the process with pid, as a job's shell
	// printed it with $! or $$, no longer runs; a zombie counts as gone.
	// Nil skips the checks that a job's processes are gone after Run
	// (the checks on how Run returns still run). HostProcessGone serves
	// backends whose processes run on the test's host.
	ProcessGone func(t *testing.T, pid int) bool
	// Refuses lists what the backend must declare it cannot do, among
	// "session", "workspace" and "container.FIELD" for every container
	// option (backends.AllContainerOptions): the Capabilities sub-test
	// checks that Capabilities().Unsupported names exactly these, so that
	// the worker refuses the jobs that ask for them instead of running
	// them without. Nil: it refuses nothing.
	Refuses []string
	// HostVisible says why a backend that declares Isolated runs its jobs
	// where the host's files are visible anyway (a fake of a cloud API
	// whose sandboxes are host processes); the Isolated sub-test then
	// skips with it. Empty: the claim is checked.
	HostVisible string
	// Reaper returns the OrphanReaper that outlives the backend running
	// an orphan (the next worker's), or a reason to skip the reaping
	// test. Nil: a new backend from newBackend.
	Reaper func(t *testing.T, running backends.Backend) (backends.OrphanReaper, string)
	// Limited returns a backend whose profile limits a job's memory to
	// memBytes, small enough for a test (tens of MiB), for the
	// ResourceLimits sub-test; or, with a nil backend, why the limit
	// cannot be checked here, which skips it. Nil fails that sub-test for
	// a backend that declares ResourceLimits: a claim must be checked.
	Limited func(t *testing.T) (b backends.Backend, memBytes int64, why string)
	// CutLinks returns a backend whose connections to where its jobs run
	// go through a proxy (see Proxy), and cut, which breaks every live
	// connection and returns how many it broke, for the ResumableOutput
	// sub-test. Nil fails that sub-test for a backend that declares
	// ResumableOutput.
	CutLinks func(t *testing.T) (b backends.Backend, cut func() int)
	// HostAccess returns a spec whose job reaches the host (a bind mount
	// of a host directory), for the HostAccess sub-test. Nil fails that
	// sub-test for a backend that is a backends.HostAccessChecker.
	HostAccess func(t *testing.T) backends.Spec
	// Leftovers lists what b keeps of spec's attempt (the files of its
	// run directory), for the Finisher sub-test. Nil fails that sub-test
	// for a backend that is a backends.Finisher.
	Leftovers func(t *testing.T, b backends.Backend, spec backends.Spec) []string
	// KeepsFailed says that Finished(spec, false) keeps a failed attempt's
	// state (for a look at it, until the backend's own expiry): the
	// Finisher sub-test checks that it is still there then; otherwise,
	// that it is gone.
	KeepsFailed bool
	// StopMargin is how long Run may take to return after ctx is done,
	// beyond the KillGrace the job had. It is an upper bound for the
	// contract, not a speed benchmark. Zero means 5s.
	StopMargin time.Duration
}

// jobTimeout bounds every job the suite runs, so that a broken backend
// fails the test instead of hanging it.
const jobTimeout = 2 * time.Minute

// Run runs the conformance suite as sub-tests of t. newBackend is called
// once per sub-test and returns a validated backend; it may register
// cleanups on the sub-test's t. Most sub-tests run in parallel; one uses
// t.Setenv, so t must not be a parallel test.
func Run(t *testing.T, newBackend func(t *testing.T) backends.Backend, opts Options) {
	t.Helper()
	if opts.TempDir == nil {
		opts.TempDir = func(t *testing.T) string { return t.TempDir() }
	}
	if opts.StopMargin <= 0 {
		opts.StopMargin = 5 * time.Second
	}
	s := &suite{newBackend: newBackend, opts: opts}

	t.Run("Validate", s.testValidate)
	t.Run("ExitCodes", s.testExitCodes)
	t.Run("CommandNotFound", s.testCommandNotFound)
	t.Run("StdoutStderrSeparate", s.testStdoutStderr)
	t.Run("Env", s.testEnv) // Not parallel: uses t.Setenv.
	t.Run("Cwd", s.testCwd)
	t.Run("StdinEmpty", s.testStdinEmpty)
	t.Run("Timing", s.testTiming)
	t.Run("LargeOutput", s.testLargeOutput)
	t.Run("BinaryOutput", s.testBinaryOutput)
	t.Run("Concurrent", s.testConcurrent)
	t.Run("DoneBeforeRun", s.testDoneBeforeRun)
	t.Run("DeadlineStopsJob", s.testDeadline)
	t.Run("CancelIsGraceful", s.testGracefulCancel)
	t.Run("CancelKillsProcessTree", s.testCancelKillsTree)
	t.Run("ExitKillsLeftovers", s.testExitKillsLeftovers)
	t.Run("Capabilities", s.testCapabilities)
	t.Run("Workspace", s.testWorkspace)
	t.Run("ResourceUsage", s.testResourceUsage)
	t.Run("Session", s.testSession)
	t.Run("Isolated", s.testIsolated)
	t.Run("OrphanReaper", s.testOrphanReaper)
	t.Run("ResourceLimits", s.testResourceLimits)
	t.Run("ResumableOutput", s.testResumableOutput)
	t.Run("HostAccess", s.testHostAccess)
	t.Run("Finisher", s.testFinisher)
}

// asks are the things a job may ask of a backend that it may not do.
func asks() map[string]backends.Spec {
	m := map[string]backends.Spec{
		"session":   {Session: "backendtest"},
		"workspace": {Workspace: "backendtest"},
	}
	for _, f := range backends.AllContainerOptions {
		var o backends.ContainerOptions
		switch f {
		case "image":
			o.Image = "backendtest:latest"
		case "mounts":
			o.Mounts = []string{"vol:/data"}
		case "network":
			o.Network = "none"
		case "privileged":
			o.Privileged = true
		case "pid_mode":
			o.PidMode = "host"
		case "ipc_mode":
			o.IpcMode = "host"
		case "uts_mode":
			o.UTSMode = "host"
		case "devices":
			o.Devices = []string{"/dev/null"}
		case "cap_add":
			o.CapAdd = []string{"NET_ADMIN"}
		default:
			panic("backendtest: no ask for container option " + f)
		}
		m["container."+f] = backends.Spec{Container: &o}
	}
	return m
}

// testCapabilities: what the backend declares it cannot do is exactly
// what its test says (Options.Refuses), so the worker's refusals are a
// checked contract.
func (s *suite) testCapabilities(t *testing.T) {
	t.Parallel()
	caps := s.newBackend(t).Capabilities()
	for name, spec := range asks() {
		want := ""
		if slices.Contains(s.opts.Refuses, name) {
			want = name
		}
		if got := caps.Unsupported(spec); got != want {
			t.Errorf("a job asking for %s: Unsupported = %q, want %q (Capabilities %+v)", name, got, want, caps)
		}
	}
	for _, name := range s.opts.Refuses {
		if _, ok := asks()[name]; !ok {
			t.Errorf("Options.Refuses names %q, which is not something a job can ask for", name)
		}
	}
}

// testWorkspace: a backend that declares Workspaces keeps a workspace's
// files from one job to the next, and removes them if it is a
// WorkspaceRemover.
func (s *suite) testWorkspace(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	if !b.Capabilities().Workspaces {
		t.Skip("no Workspaces declared")
	}
	ws := fmt.Sprintf("backendtest-%d", time.Now().UnixNano())
	spec := func(id, cmd string) backends.Spec {
		return backends.Spec{JobID: id, Attempt: 1, Deployment: "backendtest", Command: cmd, Workspace: ws}
	}
	o, _, stderr := s.runOn(t, b, spec("ws-1", "echo kept > f"))
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("first job in the workspace: %+v %v %q", o.res, o.err, stderr.String())
	}
	o, stdout, stderr := s.runOn(t, b, spec("ws-2", "cat f"))
	if o.err != nil || o.res.ExitCode != 0 || stdout.String() != "kept\n" {
		t.Fatalf("second job: %+v %v stdout %q stderr %q, want the first job's file", o.res, o.err, stdout.String(), stderr.String())
	}
	if r, ok := b.(backends.WorkspaceRemover); ok {
		if err := r.RemoveWorkspace(t.Context(), "backendtest", ws); err != nil {
			t.Fatalf("RemoveWorkspace: %v", err)
		}
		o, stdout, _ := s.runOn(t, b, spec("ws-3", "cat f 2>/dev/null || echo gone"))
		if o.err != nil || stdout.String() != "gone\n" {
			t.Fatalf("after RemoveWorkspace: %+v %v %q, want an empty workspace", o.res, o.err, stdout.String())
		}
		if err := r.RemoveWorkspace(t.Context(), "backendtest", ws); err != nil {
			t.Fatalf("RemoveWorkspace again: %v", err)
		}
	}
}

// testResourceUsage: a backend that declares ResourceUsage reports the
// CPU time and peak memory of a job that used some.
func (s *suite) testResourceUsage(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	if !b.Capabilities().ResourceUsage {
		t.Skip("no ResourceUsage declared")
	}
	o, _, stderr := s.runOn(t, b, backends.Spec{Command: "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"})
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("busy job: %+v %v %q", o.res, o.err, stderr.String())
	}
	if o.res.UserCPU+o.res.SysCPU <= 0 || o.res.MaxRSSBytes <= 0 {
		t.Fatalf("ResourceUsage declared, but the result says cpu %s+%s, peak rss %d", o.res.UserCPU, o.res.SysCPU, o.res.MaxRSSBytes)
	}
}

// suite carries Run's arguments to the sub-tests.
type suite struct {
	newBackend func(t *testing.T) backends.Backend
	opts       Options
}

// outcome is what one Run call returned, and when.
type outcome struct {
	res      backends.Result
	err      error
	returned time.Time
}

// run runs command on a new backend to completion and returns the outcome
// with everything it wrote.
func (s *suite) run(t *testing.T, spec backends.Spec) (outcome, *recorder, *recorder) {
	t.Helper()
	stdout, stderr := newRecorder(""), newRecorder("")
	o := <-start(jobContext(t), s.newBackend(t), spec, stdout, stderr)
	return o, stdout, stderr
}

// runOn runs spec on b to completion.
func (s *suite) runOn(t *testing.T, b backends.Backend, spec backends.Spec) (outcome, *recorder, *recorder) {
	t.Helper()
	stdout, stderr := newRecorder(""), newRecorder("")
	o := <-start(jobContext(t), b, spec, stdout, stderr)
	return o, stdout, stderr
}

// jobContext returns the context for a job that should not be stopped:
// it ends only with the test or after jobTimeout.
func jobContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), jobTimeout)
	t.Cleanup(cancel)
	return ctx
}

// start runs spec on b in the background. The channel receives the
// outcome once Run has returned.
func start(ctx context.Context, b backends.Backend, spec backends.Spec, stdout, stderr *recorder) <-chan outcome {
	if spec.JobID == "" {
		spec.JobID = "backendtest"
		spec.Attempt = 1
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Run(ctx, spec, backends.Output{Stdout: stdout, Stderr: stderr})
		done <- outcome{res: res, err: err, returned: time.Now()}
	}()
	return done
}

func (s *suite) testValidate(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	if b.Kind() == "" {
		t.Error("Kind() is empty")
	}
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate (second call): %v", err)
	}
}

// ContainerRefusals is "container.FIELD" for every container option but
// those honoured, for Options.Refuses.
func ContainerRefusals(honoured ...string) []string {
	var out []string
	for _, f := range backends.AllContainerOptions {
		if !slices.Contains(honoured, f) {
			out = append(out, "container."+f)
		}
	}
	return out
}

// testSession: a backend that declares PersistentSessions keeps a
// session's state from one job of its key to the next.
func (s *suite) testSession(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	if !b.Capabilities().PersistentSessions {
		t.Skip("no PersistentSessions declared")
	}
	key := fmt.Sprintf("backendtest-%d", time.Now().UnixNano())
	file := "/tmp/" + key
	o, _, stderr := s.runOn(t, b, backends.Spec{JobID: "sess-1", Attempt: 1, Deployment: "backendtest", Session: key,
		Command: "echo kept > " + file})
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("first job of the session: %+v %v %q", o.res, o.err, stderr.String())
	}
	o, stdout, stderr := s.runOn(t, b, backends.Spec{JobID: "sess-2", Attempt: 1, Deployment: "backendtest", Session: key,
		Command: "cat " + file + "; rm -f " + file})
	if o.err != nil || o.res.ExitCode != 0 || stdout.String() != "kept\n" {
		t.Fatalf("second job of the session: %+v %v stdout %q stderr %q, want the first job's file", o.res, o.err, stdout.String(), stderr.String())
	}
}

// testOrphanReaper: a backend that reaps orphans — here another instance,
// as the worker that outlives a dead one — leaves the workload of a live
// attempt alone, and stops and removes the one of a worker that is no
// longer live, scoped to the deployment.
func (s *suite) testOrphanReaper(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	if _, ok := b.(backends.OrphanReaper); !ok {
		t.Skip("not an OrphanReaper")
	}
	var r backends.OrphanReaper
	if s.opts.Reaper != nil {
		var why string
		if r, why = s.opts.Reaper(t, b); r == nil {
			t.Skip(why)
		}
	} else {
		r = s.newBackend(t).(backends.OrphanReaper)
	}
	deployment := fmt.Sprintf("backendtest-orphan-%d", time.Now().UnixNano())
	spec := backends.Spec{JobID: "orphan-1", Attempt: 1, Worker: "backendtest-gone", Deployment: deployment,
		Command: "echo ready; exec sleep 120", KillGrace: time.Second}
	stdout, stderr := newRecorder("ready"), newRecorder("")
	done := start(jobContext(t), b, spec, stdout, stderr)
	waitReady(t, stdout, stderr, done)

	n, err := r.ReapOrphans(t.Context(), deployment, func(string, int, string) bool { return true })
	if err != nil || n != 0 {
		t.Fatalf("ReapOrphans with every attempt live: %d reaped, %v; want none", n, err)
	}
	n, err = r.ReapOrphans(t.Context(), deployment+"-other", func(string, int, string) bool { return false })
	if err != nil || n != 0 {
		t.Fatalf("ReapOrphans of another deployment: %d reaped, %v; want none of this one", n, err)
	}
	select {
	case o := <-done:
		t.Fatalf("the job ended while its attempt was live: %+v %v", o.res, o.err)
	default:
	}
	reaped := time.Now()
	n, err = r.ReapOrphans(t.Context(), deployment, func(_ string, _ int, worker string) bool { return worker != spec.Worker })
	if err != nil || n < 1 {
		t.Fatalf("ReapOrphans with the job's worker gone: %d reaped, %v; want its workload", n, err)
	}
	// A minute of slack: on a loaded CI machine (two cores shared with the
	// drills) one ssh run took longer than 10 s to see its remote tree
	// gone; a Run that never returns still fails.
	o := awaitReturn(t, done, reaped.Add(spec.KillGrace+s.opts.StopMargin+time.Minute))
	if o.err == nil && o.res.ExitCode == 0 {
		t.Fatalf("the reaped job's Run: %+v, want it stopped", o.res)
	}
}

// testIsolated: a backend that declares Isolated (the policy then skips
// its host-only rules) runs jobs that cannot see a file the test makes on
// the host.
func (s *suite) testIsolated(t *testing.T) {
	t.Parallel()
	b := s.newBackend(t)
	if !b.Capabilities().Isolated {
		t.Skip("no Isolated declared")
	}
	if s.opts.HostVisible != "" {
		t.Skip(s.opts.HostVisible)
	}
	marker, err := os.CreateTemp("", "backendtest-host-*")
	if err != nil {
		t.Fatal(err)
	}
	_ = marker.Close()
	t.Cleanup(func() { _ = os.Remove(marker.Name()) })
	o, stdout, stderr := s.runOn(t, b, backends.Spec{Command: "test -e " + marker.Name() + " && echo visible || echo hidden"})
	if o.err != nil || stdout.String() != "hidden\n" {
		t.Fatalf("Isolated declared, but a job sees the host's %s: %q %v %q", marker.Name(), stdout.String(), o.err, stderr.String())
	}
}
