package docker

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/docker/dockertest"
)

// Every form of host access is detected from the final configuration,
// including a named volume whose local driver binds a host directory,
// created through the API.
func TestHostAccessEveryForm(t *testing.T) {
	t.Parallel()
	d := newTestBackend(t)
	ctx := context.Background()
	hostDir := t.TempDir()
	c := dockertest.Engine(t)
	bound := "sandrun-test-bound-" + filepath.Base(hostDir)
	if _, err := c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: bound, Driver: "local",
		DriverOpts: map[string]string{"type": "none", "o": "bind", "device": hostDir}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.VolumeRemove(context.Background(), bound, client.VolumeRemoveOptions{Force: true}) })
	plain := "sandrun-test-plain-" + filepath.Base(hostDir)
	if _, err := c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: plain, Driver: "local"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.VolumeRemove(context.Background(), plain, client.VolumeRemoveOptions{Force: true}) })

	cases := []struct {
		name string
		opts backends.ContainerOptions
		want string // "" = no host access
	}{
		{"none", backends.ContainerOptions{}, ""},
		{"absolute bind", backends.ContainerOptions{Mounts: []string{hostDir + ":/data"}}, "bind mount of host path " + hostDir},
		{"root bind", backends.ContainerOptions{Mounts: []string{"/:/host:ro"}}, "bind mount of host path /"},
		{"home bind", backends.ContainerOptions{Mounts: []string{"~/.ssh:/keys"}}, "bind mount of host path ~/.ssh"},
		{"relative bind", backends.ContainerOptions{Mounts: []string{"./src:/src"}}, "bind mount of host path ./src"},
		{"parent bind", backends.ContainerOptions{Mounts: []string{"../x:/x"}}, "bind mount of host path ../x"},
		{"windows bind", backends.ContainerOptions{Mounts: []string{`C:\Users:/u`}}, `bind mount of host path C:\Users`},
		{"docker socket", backends.ContainerOptions{Mounts: []string{"/var/run/docker.sock:/var/run/docker.sock"}}, "docker socket"},
		{"volume binding a host dir", backends.ContainerOptions{Mounts: []string{bound + ":/data"}}, "binds host path " + hostDir},
		{"plain volume", backends.ContainerOptions{Mounts: []string{plain + ":/data"}}, ""},
		{"new volume", backends.ContainerOptions{Mounts: []string{"sandrun-test-never-created:/data"}}, ""},
		{"privileged", backends.ContainerOptions{Privileged: true}, "privileged"},
		{"host pid", backends.ContainerOptions{PidMode: "host"}, "host pid namespace"},
		{"host ipc", backends.ContainerOptions{IpcMode: "host"}, "host ipc namespace"},
		{"host uts", backends.ContainerOptions{UTSMode: "host"}, "host uts namespace"},
		{"host network", backends.ContainerOptions{Network: "host"}, "host network namespace"},
		{"device", backends.ContainerOptions{Devices: []string{"/dev/sda"}}, "host device /dev/sda"},
		{"pid of another container", backends.ContainerOptions{PidMode: "container:abc"}, "pid namespace of another container (container:abc)"},
		{"ipc of another container", backends.ContainerOptions{IpcMode: "container:abc"}, "ipc namespace of another container (container:abc)"},
		{"uts of another container", backends.ContainerOptions{UTSMode: "container:abc"}, "uts namespace of another container (container:abc)"},
		{"network of another container", backends.ContainerOptions{Network: "container:abc"}, "network namespace of another container (container:abc)"},
		{"sys_admin", backends.ContainerOptions{CapAdd: []string{"SYS_ADMIN"}}, "capability SYS_ADMIN"},
		{"cap_ prefix, lower case", backends.ContainerOptions{CapAdd: []string{"cap_sys_ptrace"}}, "capability SYS_PTRACE added"},
		{"unknown cap", backends.ContainerOptions{CapAdd: []string{"CAP_NEW_THING"}}, "capability NEW_THING added: not a capability sandrun knows"},
		{"harmless cap", backends.ContainerOptions{CapAdd: []string{"CHOWN", "cap_setuid", "Net_Bind_Service"}}, ""},
	}
	for _, tc := range cases {
		opts := tc.opts
		reasons, allowed, err := d.HostAccess(ctx, backends.Spec{Command: "true", Container: &opts})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if allowed {
			t.Errorf("%s: allowed without allow_host_access", tc.name)
		}
		got := strings.Join(reasons, "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: host access %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A refused job never creates a container; an allowed one sees the host
// directory.
func TestHostAccessRefusedOrAllowed(t *testing.T) {
	t.Parallel()
	d := newTestBackend(t)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "f"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := backends.Spec{JobID: "ha", Command: "cat /data/f", Container: &backends.ContainerOptions{Mounts: []string{hostDir + ":/data:ro"}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.Run(ctx, spec, backends.Output{Stdout: io.Discard, Stderr: io.Discard}); err == nil || !strings.Contains(err.Error(), "host access refused") {
		t.Fatalf("refused run: %v", err)
	}
	allowed, err := New(Config{Image: d.cfg.Image, AllowHostAccess: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = allowed.Close() })
	var out strings.Builder
	res, err := allowed.Run(ctx, spec, backends.Output{Stdout: &out, Stderr: io.Discard})
	if err != nil || res.ExitCode != 0 || out.String() != "from the host\n" {
		t.Fatalf("allowed run: %+v %v %q", res, err, out.String())
	}
}
