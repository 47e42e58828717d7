// Package dockertest gives tests the real Docker engine and a test image
// imported from Debian's busybox-static (no registry is reachable here, so
// nothing is pulled). Under CI a missing engine fails the test.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/testenv"
)

// ImageRef is the test image: busybox with its applets, nothing else.
const ImageRef = "sandrun-test/busybox:1"

const testImageRef = ImageRef

var (
	imageOnce sync.Once
	imageErr  error
)

// Engine returns a client to the local engine. Under CI the engine
// is required: a missing engine fails the test instead of skipping it.
func Engine(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = c.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		testenv.Missing(t, "no docker engine: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Image imports a busybox image built from Debian's busybox-static —
// no registry is reachable, so nothing is pulled.
func Image(t testing.TB, c *client.Client) string {
	t.Helper()
	imageOnce.Do(func() { imageErr = ImportBusybox(c) })
	if imageErr != nil {
		t.Fatalf("test image: %v", imageErr)
	}
	return testImageRef
}

// ImportBusybox imports ImageRef (if absent) from the host's
// /bin/busybox (Debian's busybox-static) through the Engine API.
func ImportBusybox(c *client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.ImageInspect(ctx, testImageRef); err == nil {
		return nil
	}
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return errors.New("/bin/busybox missing: install Debian's busybox-static (scripts/test.sh does)")
	}
	if f, err := elf.NewFile(bytes.NewReader(bin)); err == nil {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				return errors.New("/bin/busybox is dynamically linked (Debian's busybox, not busybox-static): its applets cannot start in the image")
			}
		}
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return err
	}
	if applets := strings.Fields(string(list)); len(applets) < 50 || !slices.Contains(applets, "sh") {
		// an image without /bin/sh would be kept under its tag and fail
		// every later run: refuse to make one
		return fmt.Errorf("/bin/busybox --list names %d applets, without sh: not Debian's busybox-static", len(applets))
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
