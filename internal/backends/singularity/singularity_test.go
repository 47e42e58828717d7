package singularity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/singularity/apptainertest"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// newFakeBackend builds a backend on a fresh fake apptainer.
func newFakeBackend(t *testing.T, cfg Config) (*Backend, *apptainertest.Fake) {
	t.Helper()
	fake := apptainertest.Install(t)
	cfg.Binary = fake.Bin
	if cfg.Scratch == "" {
		cfg.Scratch = t.TempDir()
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return b, fake
}

func TestConformance(t *testing.T) {
	image := filepath.Join(t.TempDir(), "busybox.sif")
	apptainertest.BuildSIF(t, image, "docker://busybox:conformance")
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		b, _ := newFakeBackend(t, Config{Image: image})
		return b
	}, backendtest.Options{ProcessGone: backendtest.HostProcessGone,
		HostVisible: "the fake apptainer runs jobs on the host here (TestConformanceInContainer runs them in the image, where the claim is checked)",
		HostAccess:  hostBindSpec,
		Refuses:     append([]string{"session", "workspace"}, backendtest.ContainerRefusals("image", "mounts", "network")...)})
}

// hostBindSpec is a job that binds a host directory.
func hostBindSpec(t *testing.T) backends.Spec {
	return backends.Spec{JobID: "bind", Attempt: 1, Command: "ls /data",
		Container: &backends.ContainerOptions{Mounts: []string{t.TempDir() + ":/data"}}}
}

// TestRuntimeSeesWhatTheJobAsked: the recorded call has the hardened
// flags, the SIF from the cache, and the job's env as APPTAINERENV_*.
func TestRuntimeSeesWhatTheJobAsked(t *testing.T) {
	t.Parallel()
	b, fake := newFakeBackend(t, Config{Image: "docker://alpine:3.20"})
	var stdout strings.Builder
	res, err := b.Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Command: `echo "$GREETING"; exit 3`,
		Env: map[string]string{"GREETING": "hello, world"}}, backends.Output{Stdout: &stdout, Stderr: io.Discard})
	if err != nil || res.ExitCode != 3 || stdout.String() != "hello, world\n" {
		t.Fatalf("Run: %+v, %v, stdout %q", res, err, stdout.String())
	}
	execs := fake.CallsOf(t, "exec")
	if len(execs) != 1 {
		t.Fatalf("exec calls %d, want 1", len(execs))
	}
	args := execs[0].Args
	if !slices.Equal(args[:4], []string{"exec", "--containall", "--no-home", "--cleanenv"}) {
		t.Errorf("exec args %q", args)
	}
	img := args[len(args)-4]
	if !strings.HasPrefix(img, filepath.Join(b.cfg.Scratch, "sif", "images")) || !strings.HasSuffix(img, ".sif") {
		t.Errorf("image %q is not from the cache", img)
	}
	if execs[0].Env["APPTAINERENV_GREETING"] != "hello, world" {
		t.Errorf("runtime env %v lacks APPTAINERENV_GREETING", execs[0].Env)
	}
	if n := len(fake.CallsOf(t, "pull")); n != 1 {
		t.Errorf("pulls %d, want 1", n)
	}
}

// TestRuntimeFatalIsABackendError: exit 255 with FATAL: from the runtime
// (here: a --pwd missing in the container) is the runtime's failure, not
// the job's exit code; a local image that is not a SIF is refused before
// the runtime runs, permanently.
func TestRuntimeFatalIsABackendError(t *testing.T) {
	t.Parallel()
	image := filepath.Join(t.TempDir(), "ok.sif")
	apptainertest.BuildSIF(t, image, "docker://busybox:fatal")
	b, _ := newFakeBackend(t, Config{Image: image})
	res, err := b.Run(t.Context(), backends.Spec{JobID: "fatal", Attempt: 1, Command: "true", Dir: "/nonexistent-sandrun-dir"}, backends.Output{})
	if err == nil || !strings.Contains(err.Error(), "FATAL") || errors.Is(err, backends.ErrPermanent) {
		t.Fatalf("Run: %+v, %v; want a (retryable) runtime failure quoting FATAL", res, err)
	}
	notSIF := filepath.Join(t.TempDir(), "broken.sif")
	if err := os.WriteFile(notSIF, []byte("not a sif"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = b.Run(t.Context(), backends.Spec{JobID: "bad", Attempt: 1, Command: "true",
		Container: &backends.ContainerOptions{Image: notSIF}}, backends.Output{})
	if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), "not a loadable SIF") {
		t.Fatalf("Run with a broken local image: %v, want a permanent error from the check", err)
	}
}

// TestRotationSparesRunningJob: with a 3-image budget, a fourth image
// evicts the least recently used one, not the one a running job uses.
func TestRotationSparesRunningJob(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	// The cache's clock moves a second at each look: distinct last-use
	// times.
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(1_800_000_000+clock.Add(1), 0) }
	b, fake := newFakeBackend(t, Config{Profile: "hpc", CacheMaxImages: 3, Metrics: m, Now: now})
	run := func(ref, cmd string) error {
		_, err := b.Run(t.Context(), backends.Spec{JobID: "r", Attempt: 1, Command: cmd,
			Container: &backends.ContainerOptions{Image: ref}}, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
		return err
	}
	// A long job on image a (the least recently used from now on).
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = b.Run(ctx, backends.Spec{JobID: "long", Attempt: 1, Command: "sleep 60", KillGrace: time.Second,
			Container: &backends.ContainerOptions{Image: "docker://a:1"}}, backends.Output{})
	})
	waitFor(t, func() bool { return len(fake.CallsOf(t, "exec")) == 1 })
	for _, ref := range []string{"docker://b:1", "docker://c:1", "docker://d:1"} {
		if err := run(ref, "true"); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := b.Cache().List()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, e := range entries {
		refs = append(refs, e.Ref)
	}
	slices.Sort(refs)
	if strings.Join(refs, " ") != "docker://a:1 docker://c:1 docker://d:1" {
		t.Fatalf("cache holds %v: want a (in use), c, d", refs)
	}
	cancel()
	wg.Wait()
	if n := testutil.ToFloat64(m.SIFEvictions.WithLabelValues("hpc", "size")); n != 1 {
		t.Errorf("size evictions %v, want 1", n)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) { return cond(), "condition not met" })
}

// TestPurgedImageIsPulledAgain: a cached SIF deleted or truncated behind
// the cache's back is found before the job runs and pulled again.
func TestPurgedImageIsPulledAgain(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	b, fake := newFakeBackend(t, Config{Profile: "hpc", Image: "docker://alpine:3.20", Metrics: m})
	run := func() {
		t.Helper()
		res, err := b.Run(t.Context(), backends.Spec{JobID: "p", Attempt: 1, Command: "cat /etc/hostname >/dev/null; true"}, backends.Output{})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Run: %+v, %v", res, err)
		}
	}
	run()
	entries, _ := b.Cache().List()
	if len(entries) != 1 {
		t.Fatalf("cache %v", entries)
	}
	sifs, _ := filepath.Glob(filepath.Join(b.cfg.Scratch, "sif", "images", "*.sif"))
	if len(sifs) != 1 {
		t.Fatalf("sif files %v", sifs)
	}
	if err := os.Remove(sifs[0]); err != nil {
		t.Fatal(err)
	}
	run()
	fi, _ := os.Stat(sifs[0])
	if err := os.Truncate(sifs[0], fi.Size()-1000); err != nil {
		t.Fatal(err)
	}
	run()
	if n := len(fake.CallsOf(t, "pull")); n != 3 {
		t.Errorf("pulls %d, want 3", n)
	}
	for reason, want := range map[string]float64{"purged": 1, "corrupt": 1} {
		if n := testutil.ToFloat64(m.SIFEvictions.WithLabelValues("hpc", reason)); n != want {
			t.Errorf("%s %v, want %v", reason, n, want)
		}
	}
}

// TestConformanceInContainer runs the suite with the fake runtime
// running jobs as apptainer does: in new mount, PID and network
// namespaces, chrooted into the image. Working directories are paths in
// the image; the jobs' pids are in their own namespace, so the suite
// cannot look them up on the host.
func TestConformanceInContainer(t *testing.T) {
	apptainertest.RequireChroot(t)
	image := filepath.Join(t.TempDir(), "busybox.sif")
	apptainertest.BuildSIF(t, image, "docker://busybox:contained")
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		b, fake := newFakeBackend(t, Config{Image: image})
		fake.Configure(t, apptainertest.Config{Chroot: true})
		return b
	}, backendtest.Options{TempDir: func(*testing.T) string { return "/etc" }, StopMargin: 10 * time.Second,
		HostAccess: hostBindSpec,
		Refuses:    append([]string{"session", "workspace"}, backendtest.ContainerRefusals("image", "mounts", "network")...)})
}

// TestContainedJobSeesTheImage: in a contained run the job sees the
// image's files, not the host's; a bind brings in a host directory.
func TestContainedJobSeesTheImage(t *testing.T) {
	t.Parallel()
	apptainertest.RequireChroot(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "input.txt"), []byte("from the host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, fake := newFakeBackend(t, Config{Image: "docker://busybox:seen", Binds: []string{host + ":/data:ro"}, AllowHostAccess: true})
	fake.Configure(t, apptainertest.Config{Chroot: true})
	var stdout, stderr strings.Builder
	res, err := b.Run(t.Context(), backends.Spec{JobID: "seen", Attempt: 1,
		Command: `cat /etc/sandrun-ref; cat /data/input.txt; test -e ` + host + ` && echo host-visible; echo x >/data/w 2>/dev/null || echo read-only`},
		backends.Output{Stdout: &stdout, Stderr: &stderr})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %+v, %v, stderr %q", res, err, stderr.String())
	}
	if want := "docker://busybox:seen\nfrom the host\nread-only\n"; stdout.String() != want {
		t.Fatalf("stdout %q, want %q", stdout.String(), want)
	}
}

// TestCancelKillsContainedTree: a cancel ends every process of a
// contained job, found on the host by their command lines.
func TestCancelKillsContainedTree(t *testing.T) {
	t.Parallel()
	apptainertest.RequireChroot(t)
	b, fake := newFakeBackend(t, Config{Image: "docker://busybox:tree"})
	fake.Configure(t, apptainertest.Config{Chroot: true})
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(ctx, backends.Spec{JobID: "tree", Attempt: 1, KillGrace: 500 * time.Millisecond,
			Command: `trap '' TERM; sleep 3021 & sh -c 'sleep 3022 & wait' & wait`}, backends.Output{})
		done <- err
	}()
	waitFor(t, func() bool { return len(hostProcesses(t, "sleep 3021", "sleep 3022")) == 2 })
	cause := errors.New("test: cancel the contained tree")
	cancel(cause)
	if err := <-done; !errors.Is(err, cause) {
		t.Fatalf("Run: %v, want the cancel cause", err)
	}
	sandruntest.Eventually(t, 5*time.Second, func() (bool, string) {
		left := hostProcesses(t, "sleep 3021", "sleep 3022")
		return len(left) == 0, fmt.Sprintf("still running on the host: %v", left)
	})
}

// hostProcesses returns the live (not zombie) host processes whose
// command line is one of cmds.
func hostProcesses(t *testing.T, cmds ...string) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		if slices.Contains(cmds, line) {
			out = append(out, d.Name()+": "+line)
		}
	}
	return out
}
