package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
)

const testImageRef = "sandrun-test/busybox:1"

var (
	imageOnce sync.Once
	imageErr  error
)

// engineOrSkip returns a client to the local engine. Under CI the engine
// is required: a missing engine fails the test instead of skipping it.
func engineOrSkip(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = c.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("docker engine required under CI: %v", err)
		}
		t.Skipf("no docker engine: %v", err)
	}
	return c
}

// testImage imports a busybox image built from Debian's busybox-static —
// no registry is reachable, so nothing is pulled.
func testImage(t *testing.T, c *client.Client) string {
	t.Helper()
	imageOnce.Do(func() { imageErr = importBusybox(c) })
	if imageErr != nil {
		t.Fatalf("test image: %v", imageErr)
	}
	return testImageRef
}

func importBusybox(c *client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.ImageInspect(ctx, testImageRef); err == nil {
		return nil
	}
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return errors.New("/bin/busybox missing: install Debian's busybox-static (scripts/test.sh does)")
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "tmp/", "etc/", "work/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet == "busybox" {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := c.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, testImageRef, client.ImageImportOptions{})
	if err != nil {
		return err
	}
	defer func() { _ = res.Close() }()
	_, err = io.Copy(io.Discard, res)
	return err
}

func newTestBackend(t *testing.T) *Docker {
	t.Helper()
	c := engineOrSkip(t)
	img := testImage(t, c)
	d, err := New(Config{Image: img, WorkerName: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformanceOneShot(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backends.Backend { return newTestBackend(t) }, backendtest.Options{
		TempDir:    func(*testing.T) string { return "/work" },
		StopMargin: 15 * time.Second,
	})
}

func TestOOMKillIsReported(t *testing.T) {
	t.Parallel()
	d := newTestBackend(t)
	d.cfg.MemoryBytes = 32 << 20
	// Hold ~64 MiB in the shell's memory.
	cmd := `x=$(head -c 67108864 /dev/zero | tr '\0' 'x'); echo ${#x}`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := d.Run(ctx, backends.Spec{JobID: "oom", Command: cmd}, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
	if !errors.Is(err, ErrOOM) || res.ExitCode != 137 {
		t.Fatalf("res %+v err %v: want ErrOOM with exit 137", res, err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	t.Parallel()
	engineOrSkip(t)
	d, err := New(Config{Image: "sandrun-test/does-not-exist:0"})
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
