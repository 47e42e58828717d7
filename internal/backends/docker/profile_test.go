package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
)

// runOut runs spec on d and returns its stdout.
func runOut(t *testing.T, d *Docker, spec backends.Spec) (string, backends.Result, error) {
	t.Helper()
	var out, errb bytes.Buffer
	if spec.JobID == "" {
		spec.JobID = "p-" + strings.ReplaceAll(t.Name(), "/", "-")
	}
	if spec.Attempt == 0 {
		spec.Attempt = 1
	}
	r, err := d.Run(t.Context(), spec, backends.Output{Stdout: &out, Stderr: &errb})
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), r, err
}

// TestProfileAllowedImages: a job may name an image the profile's
// allowed_images admit (and runs in it, not in the profile's); any other
// image, or any image where the profile lists none, is refused for good
// with an error naming container.image.
func TestProfileAllowedImages(t *testing.T) {
	t.Parallel()
	c := dockertest.Engine(t)
	img := dockertest.Image(t, c)
	// An image of its own: the test image with ENV SANDRUN_ROW=7.
	row := fmt.Sprintf("sandrun-test/eval-row:%d", len(t.Name()))
	ctx := t.Context()
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: img, Cmd: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = c.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := c.ContainerCommit(ctx, created.ID, client.ContainerCommitOptions{Reference: row, Changes: []string{"ENV SANDRUN_ROW=7"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.ImageRemove(context.Background(), row, client.ImageRemoveOptions{}) })

	d, err := New(Config{Image: img, Pull: PullNever, AllowedImages: []string{"sandrun-test/eval-*"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	out, r, err := runOut(t, d, backends.Spec{Command: `echo "row=$SANDRUN_ROW"`, Container: &backends.ContainerOptions{Image: row}})
	if err != nil || r.ExitCode != 0 || out != "row=7\n" {
		t.Fatalf("allowed image: %q exit %d err %v; want row=7 (the job's image, not the profile's)", out, r.ExitCode, err)
	}
	if out, _, err := runOut(t, d, backends.Spec{Command: `echo "row=$SANDRUN_ROW"`}); err != nil || out != "row=\n" {
		t.Fatalf("no image named: %q %v; want the profile's image", out, err)
	}
	_, _, err = runOut(t, d, backends.Spec{JobID: "other", Command: "true", Container: &backends.ContainerOptions{Image: "evil.example/x:1"}})
	if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), "container.image") || !strings.Contains(err.Error(), "allowed_images") {
		t.Fatalf("an image outside allowed_images: %v", err)
	}
	strict, err := New(Config{Image: img, Pull: PullNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = strict.Close() })
	_, _, err = runOut(t, strict, backends.Spec{JobID: "strict", Command: "true", Container: &backends.ContainerOptions{Image: row}})
	if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), "runs only its image") {
		t.Fatalf("a profile without allowed_images: %v", err)
	}
	if !imageAllowed([]string{"ghcr.io/acme/*"}, "ghcr.io/acme/tools/x:1") || imageAllowed([]string{"python:3.*"}, "python:2.7") ||
		imageAllowed([]string{"python:3.1"}, "python:3.12") {
		t.Error("imageAllowed: * must match any run of characters and nothing else be a wildcard")
	}
}

// TestProfileVolumesAndSizes: a profile's volumes are mounted in every
// container (what one job writes there the next reads), /dev/shm and
// /tmp have the sizes the profile gives, and a profile volume that
// reaches the host is judged as host access like a job's mount.
func TestProfileVolumesAndSizes(t *testing.T) {
	t.Parallel()
	c := dockertest.Engine(t)
	img := dockertest.Image(t, c)
	vol := "sandrun-test-profile-vol-" + fmt.Sprint(len(t.Name()))
	t.Cleanup(func() { _, _ = c.VolumeRemove(context.Background(), vol, client.VolumeRemoveOptions{Force: true}) })
	d, err := New(Config{Image: img, Pull: PullNever, User: "0:0", Volumes: []string{vol + ":/data"}, ShmSize: 32 << 20, TmpSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	out, _, err := runOut(t, d, backends.Spec{JobID: "w", Command: "echo kept > /data/f && df -k /dev/shm /tmp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" 32768 ", " 16384 "} {
		if !strings.Contains(out, want) {
			t.Errorf("df: %q lacks a %s-KiB filesystem", out, strings.TrimSpace(want))
		}
	}
	if out, _, err := runOut(t, d, backends.Spec{JobID: "r", Command: "cat /data/f"}); err != nil || out != "kept\n" {
		t.Fatalf("the next job reads %q (%v), want what the first wrote", out, err)
	}
	host, err := New(Config{Image: img, Pull: PullNever, Volumes: []string{"/etc:/host-etc:ro"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close() })
	reasons, allowed, err := host.HostAccess(t.Context(), backends.Spec{JobID: "h", Attempt: 1, Command: "true"})
	if err != nil || allowed || len(reasons) == 0 || !strings.Contains(strings.Join(reasons, ";"), "/etc") {
		t.Fatalf("a profile volume binding /etc: reasons %v allowed %v err %v; want host access found and refused", reasons, allowed, err)
	}
	for cfg, field := range map[*Config]string{
		{Image: img, Volumes: []string{"nodest"}}:    "volumes[0]",
		{Image: img, ShmSize: -1}:                    "shm_size",
		{Image: img, AllowedImages: []string{"a b"}}: "allowed_images[0]",
	} {
		if _, err := New(*cfg); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("New(%+v): %v, want an error naming %s", *cfg, err, field)
		}
	}
}
