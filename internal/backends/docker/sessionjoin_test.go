package docker

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
)

// A job may join a session container when it asks for no options, or for
// exactly the container's — as the engine reports them, normalised.
func TestSessionOptionsCompared(t *testing.T) {
	t.Parallel()
	d, err := New(Config{Image: "unused", CapAdd: []string{"CHOWN"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	// The session container as the engine reports one created with
	// mounts /srv:/srv:ro, cap_add net_bind_service, the default IPC mode.
	sess := &container.HostConfig{
		NetworkMode: "none", IpcMode: "private", CgroupnsMode: "private",
		CapDrop: []string{"ALL"}, CapAdd: []string{"CAP_CHOWN", "CAP_NET_BIND_SERVICE"},
		Mounts: []mount.Mount{{Type: mount.TypeBind, Source: "/srv", Target: "/srv", ReadOnly: true}},
	}
	cases := []struct {
		name string
		opts *backends.ContainerOptions
		want string // "" = may join
	}{
		{"no options", nil, ""},
		{"empty options", &backends.ContainerOptions{Mounts: []string{}, CapAdd: []string{}}, ""},
		{"the profile's own values", &backends.ContainerOptions{Network: "none", IpcMode: "private"}, ""},
		{"the same options", &backends.ContainerOptions{Mounts: []string{"/srv:/srv:ro"}, CapAdd: []string{"net_bind_service"}}, ""},
		{"the same options, CAP_ prefix", &backends.ContainerOptions{Mounts: []string{"/srv:/srv:ro"}, CapAdd: []string{"CAP_NET_BIND_SERVICE", "NET_BIND_SERVICE"}}, ""},
		{"another mount", &backends.ContainerOptions{Mounts: []string{"/:/host"}}, "mounts: job [/:/host], session [/srv:/srv:ro]"},
		{"the mount writable", &backends.ContainerOptions{Mounts: []string{"/srv:/srv"}, CapAdd: []string{"NET_BIND_SERVICE"}}, "mounts: job [/srv:/srv], session [/srv:/srv:ro]"},
		{"fewer options", &backends.ContainerOptions{Mounts: []string{"/srv:/srv:ro"}}, "cap_add: job [CHOWN], session [CHOWN NET_BIND_SERVICE]"},
		{"privileged", &backends.ContainerOptions{Privileged: true}, "privileged: job true, session false"},
		{"network", &backends.ContainerOptions{Network: "host"}, "network: job host, session none"},
		{"pid", &backends.ContainerOptions{PidMode: "container:x"}, "pid_mode: job container:x, session private"},
		{"ipc", &backends.ContainerOptions{IpcMode: "host"}, "ipc_mode: job host, session private"},
		{"uts", &backends.ContainerOptions{UTSMode: "host"}, "uts_mode: job host, session private"},
		{"device", &backends.ContainerOptions{Devices: []string{"/dev/fuse"}}, "devices: job [/dev/fuse:/dev/fuse], session []"},
	}
	for _, tc := range cases {
		spec := backends.Spec{Session: "s", Container: tc.opts}
		_, own, err := d.containerConfig(spec)
		if err != nil {
			t.Fatal(err)
		}
		err = d.sameOptions(spec, own, sess)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrSessionOptions) || !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrSessionOptions naming %q", tc.name, err, tc.want)
		}
	}
}

// sessionSetup is a profile that allows host access, with a host
// directory holding a file.
type sessionSetup struct {
	d       *Docker
	hostDir string
}

func setupSession(t *testing.T) sessionSetup {
	t.Helper()
	c := dockertest.Engine(t)
	d, err := New(Config{Image: dockertest.Image(t, c), AllowHostAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "f"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return sessionSetup{d: d, hostDir: hostDir}
}

// run judges spec as the worker does, then runs it.
func (s sessionSetup) run(t *testing.T, spec backends.Spec) (reasons []string, out string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reasons, allowed, err := s.d.HostAccess(ctx, spec)
	if err != nil {
		return nil, "", err
	}
	if !allowed {
		t.Fatalf("%s: host access not allowed by an allowing profile", spec.JobID)
	}
	var stdout strings.Builder
	res, err := s.d.Run(ctx, spec, backends.Output{Stdout: &stdout, Stderr: io.Discard})
	if err == nil && res.ExitCode != 0 {
		t.Fatalf("%s: exit %d", spec.JobID, res.ExitCode)
	}
	return reasons, stdout.String(), err
}

// A session created by a job with a host bind mount keeps it: a later job
// of the session without options is judged as host access (it reads the
// host's file), one with other options is refused, one with the same
// options joins.
func TestSessionJoinJudgedOnItsContainer(t *testing.T) {
	t.Parallel()
	s := setupSession(t)
	mounts := []string{s.hostDir + ":/host:ro"}
	first := backends.Spec{JobID: "first", Session: "k", Command: "cat /host/f",
		Container: &backends.ContainerOptions{Mounts: mounts, CapAdd: []string{"chown"}}}
	reasons, out, err := s.run(t, first)
	if err != nil || out != "from the host\n" {
		t.Fatalf("first job: %v, output %q", err, out)
	}
	if got := strings.Join(reasons, "; "); !strings.Contains(got, "bind mount of host path "+s.hostDir) {
		t.Fatalf("first job judged %q, want the bind mount", got)
	}

	plain := backends.Spec{JobID: "plain", Session: "k", Command: "cat /host/f"}
	reasons, out, err = s.run(t, plain)
	if err != nil || out != "from the host\n" {
		t.Fatalf("job without options: %v, output %q", err, out)
	}
	got := strings.Join(reasons, "; ")
	if !strings.Contains(got, `session "k" container `) || !strings.Contains(got, "bind mount of host path "+s.hostDir) {
		t.Fatalf("job without options judged %q, want the session container's bind mount", got)
	}

	same := backends.Spec{JobID: "same", Session: "k", Command: "cat /host/f",
		Container: &backends.ContainerOptions{Mounts: mounts, CapAdd: []string{"CAP_CHOWN"}}}
	if reasons, out, err = s.run(t, same); err != nil || out != "from the host\n" || len(reasons) == 0 {
		t.Fatalf("job with the session's options: %v, reasons %q, output %q", err, reasons, out)
	}

	for _, opts := range []backends.ContainerOptions{
		{Mounts: []string{"/:/host:ro"}},
		{Mounts: mounts, CapAdd: []string{"CHOWN", "SYS_ADMIN"}},
		{Mounts: mounts, CapAdd: []string{"CHOWN"}, PidMode: "host"},
	} {
		other := backends.Spec{JobID: "other", Session: "k", Command: "echo ran", Container: &opts}
		if _, _, err := s.d.HostAccess(context.Background(), other); !errors.Is(err, ErrSessionOptions) || !errors.Is(err, backends.ErrPermanent) {
			t.Errorf("HostAccess of a job asking %+v: %v, want ErrSessionOptions", opts, err)
		}
		var stdout strings.Builder
		if _, err := s.d.Run(context.Background(), other, backends.Output{Stdout: &stdout, Stderr: io.Discard}); !errors.Is(err, ErrSessionOptions) || stdout.Len() > 0 {
			t.Errorf("Run of a job asking %+v: %v, output %q, want ErrSessionOptions and no run", opts, err, stdout.String())
		}
	}
}

// A session created without options refuses a job asking for a mount.
func TestSessionRefusesWiderOptions(t *testing.T) {
	t.Parallel()
	s := setupSession(t)
	if reasons, out, err := s.run(t, backends.Spec{JobID: "first", Session: "k", Command: "echo ok"}); err != nil || len(reasons) > 0 || out != "ok\n" {
		t.Fatalf("first job: %v, reasons %q, output %q", err, reasons, out)
	}
	wider := backends.Spec{JobID: "wider", Session: "k", Command: "cat /host/f",
		Container: &backends.ContainerOptions{Mounts: []string{s.hostDir + ":/host:ro"}}}
	_, _, err := s.run(t, wider)
	if !errors.Is(err, ErrSessionOptions) || !strings.Contains(err.Error(), "mounts: job ["+s.hostDir+":/host:ro], session []") {
		t.Fatalf("job asking for a mount the session lacks: %v", err)
	}
}

// A job judged before its session container existed, which another job
// then created with a host mount, is not run as judged: Run refuses it
// (retryable), and its next attempt is judged on the container.
func TestSessionJudgedBeforeItsContainer(t *testing.T) {
	t.Parallel()
	s := setupSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	late := backends.Spec{JobID: "late", Attempt: 1, Session: "k", Command: "cat /host/f"}
	if reasons, _, err := s.d.HostAccess(ctx, late); err != nil || len(reasons) > 0 {
		t.Fatalf("judged before the session existed: %v, reasons %q", err, reasons)
	}
	creator := backends.Spec{JobID: "creator", Session: "k", Command: "true",
		Container: &backends.ContainerOptions{Mounts: []string{s.hostDir + ":/host:ro"}}}
	if _, _, err := s.run(t, creator); err != nil {
		t.Fatalf("creator: %v", err)
	}
	var stdout strings.Builder
	_, err := s.d.Run(ctx, late, backends.Output{Stdout: &stdout, Stderr: io.Discard})
	if !errors.Is(err, ErrSessionJudged) || errors.Is(err, backends.ErrPermanent) || stdout.Len() > 0 {
		t.Fatalf("run judged without its session: %v, output %q; want retryable ErrSessionJudged, no run", err, stdout.String())
	}
	late.Attempt = 2
	reasons, out, err := s.run(t, late)
	if err != nil || len(reasons) == 0 || out != "from the host\n" {
		t.Fatalf("next attempt: %v, reasons %q, output %q", err, reasons, out)
	}
}
