package daytona

import (
	"errors"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// TestSandboxFromImage: the create request carries the image as a
// Dockerfile, the resources, the labels, auto-stop and auto-delete 0; the
// sandbox is deleted once the job is over.
func TestSandboxFromImage(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	cfg := fakeConfig(f)
	cfg.Image, cfg.CPU, cfg.MemoryGB, cfg.DiskGB, cfg.AutoStopMinutes = "ubuntu:24.04", 2, 4, 8, intp(30)
	cfg.Target, cfg.NetworkBlockAll = "eu", true
	spec := backends.Spec{JobID: "job-1", Attempt: 3, Worker: "w1", Deployment: "prod", Command: "exit 5"}
	c := sandboxtest.OnlyCreateRequest(t, newBackend(t, cfg), spec, 0, 5, f.Created)
	if c.BuildInfo == nil || c.BuildInfo.DockerfileContent != "FROM ubuntu:24.04\n" || c.Snapshot != "" {
		t.Errorf("image: buildInfo %+v, snapshot %q", c.BuildInfo, c.Snapshot)
	}
	if c.CPU != 2 || c.Memory != 4 || c.Disk != 8 || c.Target != "eu" || !c.NetworkBlockAll {
		t.Errorf("resources: %+v", c)
	}
	if c.AutoStopInterval == nil || *c.AutoStopInterval != 30 || c.AutoDeleteInterval == nil || *c.AutoDeleteInterval != 0 {
		t.Errorf("autoStopInterval %v, autoDeleteInterval %v; want 30, 0", c.AutoStopInterval, c.AutoDeleteInterval)
	}
	sandboxtest.CheckMetadata(t, "label", c.Labels,
		map[string]string{LabelManaged: "true", LabelDeployment: "prod", LabelJob: "job-1", LabelAttempt: "3", LabelWorker: "w1"})
	if len(f.Sandboxes()) != 0 || len(f.Deleted()) != 1 {
		t.Errorf("after the job: %d sandboxes left, %d deleted; want 0, 1", len(f.Sandboxes()), len(f.Deleted()))
	}
}

// TestSandboxFromSnapshot: a snapshot profile sends the snapshot and no
// resources; a job's container.image replaces it with an image.
func TestSandboxFromSnapshot(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	f.AddSnapshot("my-snap")
	cfg := fakeConfig(f)
	cfg.Snapshot = "my-snap"
	b := newBackend(t, cfg)
	for _, spec := range []backends.Spec{
		{JobID: "a", Attempt: 1, Command: "true"},
		{JobID: "b", Attempt: 1, Command: "true", Container: &backends.ContainerOptions{Image: "alpine:3"}},
	} {
		if res, err := b.Run(t.Context(), spec, backends.Output{}); err != nil || res.ExitCode != 0 {
			t.Fatalf("Run %s: %+v, %v", spec.JobID, res, err)
		}
	}
	c := f.Created()
	if c[0].Snapshot != "my-snap" || c[0].BuildInfo != nil || c[0].CPU != 0 {
		t.Errorf("snapshot profile sent %+v", c[0])
	}
	if c[1].Snapshot != "" || c[1].BuildInfo == nil || c[1].BuildInfo.DockerfileContent != "FROM alpine:3\n" {
		t.Errorf("container.image sent %+v", c[1])
	}
}

// TestBadImageOrSnapshotIsPermanent: a build that fails and an unknown
// snapshot end the attempt with ErrPermanent, and leave no sandbox.
func TestBadImageOrSnapshotIsPermanent(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	f.RejectImage("no/such:image", "manifest unknown")
	for _, cfg := range []Config{{Image: "no/such:image"}, {Snapshot: "no-such-snapshot"}} {
		c := fakeConfig(f)
		c.Image, c.Snapshot = cfg.Image, cfg.Snapshot
		_, err := newBackend(t, c).Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Command: "true"}, backends.Output{})
		if !errors.Is(err, backends.ErrPermanent) {
			t.Errorf("image %q snapshot %q: %v; want ErrPermanent", cfg.Image, cfg.Snapshot, err)
		}
	}
	// The failed build's sandbox existed: it is deleted. The unknown
	// snapshot's never did.
	if left, deleted := f.Sandboxes(), f.Deleted(); len(left) != 0 || len(deleted) != 1 {
		t.Errorf("%d sandboxes left, %d deleted; want 0, 1", len(left), len(deleted))
	}
}

// TestUnsupportedSpec: sessions and host-facing container options are
// refused before anything is created.
func TestUnsupportedSpec(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	sandboxtest.RefusesSpecs(t, newBackend(t, fakeConfig(f)),
		backends.Spec{JobID: "s", Command: "true", Session: "k"},
		backends.Spec{JobID: "m", Command: "true", Container: &backends.ContainerOptions{Mounts: []string{"/:/host"}}},
		backends.Spec{JobID: "e", Command: "true", Env: map[string]string{"NOT-A-NAME": "x"}},
	)
	if n := len(f.Created()); n != 0 {
		t.Errorf("%d sandboxes created", n)
	}
}

// TestStartTimeout: a sandbox that does not start within start_timeout
// fails the attempt as unavailable (retried later), and is deleted.
func TestStartTimeout(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	f.SetStartPolls(1000)
	cfg := fakeConfig(f)
	cfg.StartTimeout = 300 * time.Millisecond
	sandboxtest.StartTimeout(t, newBackend(t, cfg), f)
}
