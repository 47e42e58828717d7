package docker

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
	"github.com/sandrun/sandrun/internal/metrics"
)

func newTestBackend(t *testing.T) *Docker {
	t.Helper()
	c := dockertest.Engine(t)
	img := dockertest.Image(t, c)
	d, err := New(Config{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// newLimitedBackend is newTestBackend with containers limited to
// memBytes of memory.
func newLimitedBackend(t *testing.T, memBytes int64) *Docker {
	t.Helper()
	d, err := New(Config{Image: dockertest.Image(t, dockertest.Engine(t)), MemoryBytes: memBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// testMemoryLimit is the limit the conformance suite checks.
const testMemoryLimit = 64 << 20

// hostBindSpec is a job that bind-mounts a host directory.
func hostBindSpec(t *testing.T) backends.Spec {
	return backends.Spec{JobID: "bind", Attempt: 1, Command: "ls /data",
		Container: &backends.ContainerOptions{Mounts: []string{t.TempDir() + ":/data"}}}
}

func TestConformanceOneShot(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backends.Backend { return newTestBackend(t) }, backendtest.Options{
		TempDir:    func(*testing.T) string { return "/work" },
		StopMargin: 15 * time.Second,
		Limited: func(t *testing.T) (backends.Backend, int64, string) {
			return newLimitedBackend(t, testMemoryLimit), testMemoryLimit, ""
		},
		HostAccess: hostBindSpec,
	})
}

func TestOOMKillIsReported(t *testing.T) {
	t.Parallel()
	img := newTestBackend(t).cfg.Image
	m := metrics.New()
	d, err := New(Config{Image: img, MemoryBytes: 32 << 20, Metrics: m, Profile: "box"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	// Hold ~64 MiB in the shell's memory.
	cmd := `x=$(head -c 67108864 /dev/zero | tr '\0' 'x'); echo ${#x}`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := d.Run(ctx, backends.Spec{JobID: "oom", Command: cmd}, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
	if !errors.Is(err, ErrOOM) || res.ExitCode != 137 {
		t.Fatalf("res %+v err %v: want ErrOOM with exit 137", res, err)
	}
	if n := testutil.ToFloat64(m.OOMKills.WithLabelValues("box")); n != 1 {
		t.Fatalf("oom kills counted %v, want 1", n)
	}
	if n := testutil.CollectAndCount(m.ContainerCreate); n != 1 {
		t.Fatalf("container create series %d, want 1", n)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	dockertest.Engine(t)
	d, err := New(Config{Image: "sandrun-test/does-not-exist:0", Pull: PullNever})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "image:") {
		t.Fatalf("validate: %v", err)
	}
	if _, err := New(Config{}); err == nil || !strings.HasPrefix(err.Error(), "image:") {
		t.Fatalf("new without image: %v", err)
	}
}
