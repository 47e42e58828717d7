package singularity

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
)

// newArgsBackend builds a backend whose runtime is never run: the tests
// here only look at the command lines it would run.
func newArgsBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	if cfg.Binary == "" {
		cfg.Binary = "/bin/true"
	}
	cfg.Scratch = t.TempDir()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInvocationGolden pins the exact argument list for each profile
// setting and job option.
func TestInvocationGolden(t *testing.T) {
	t.Parallel()
	const img = "/cache/img.sif"
	base := []string{"exec", "--containall", "--no-home", "--cleanenv"}
	tail := []string{img, "/bin/sh", "-c", "echo hi"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name string
		cfg  Config
		spec backends.Spec
		want []string
	}{
		{"defaults", Config{}, backends.Spec{}, cat(base, []string{"--net", "--network", "none"}, tail)},
		{"host network", Config{Network: "host"}, backends.Spec{}, cat(base, tail)},
		{"writable tmpfs", Config{WritableTmpfs: true}, backends.Spec{}, cat(base, []string{"--net", "--network", "none", "--writable-tmpfs"}, tail)},
		{"fakeroot", Config{Fakeroot: true, Network: "host"}, backends.Spec{}, cat(base, []string{"--fakeroot"}, tail)},
		{"binds", Config{Binds: []string{"/data:/data:ro", "/scratch/x"}}, backends.Spec{},
			cat(base, []string{"--net", "--network", "none", "--bind", "/data:/data:ro", "--bind", "/scratch/x"}, tail)},
		{"profile pwd", Config{Pwd: "/work"}, backends.Spec{}, cat(base, []string{"--net", "--network", "none", "--pwd", "/work"}, tail)},
		{"job cwd wins", Config{Pwd: "/work"}, backends.Spec{Dir: "/job"}, cat(base, []string{"--net", "--network", "none", "--pwd", "/job"}, tail)},
		{"job mounts after profile binds", Config{Binds: []string{"/a:/a"}},
			backends.Spec{Container: &backends.ContainerOptions{Mounts: []string{"/b:/b:rw"}}},
			cat(base, []string{"--net", "--network", "none", "--bind", "/a:/a", "--bind", "/b:/b:rw"}, tail)},
		{"job network host", Config{}, backends.Spec{Container: &backends.ContainerOptions{Network: "host"}}, cat(base, tail)},
		{"everything", Config{Network: "none", WritableTmpfs: true, Binds: []string{"/d"}, Pwd: "/w"}, backends.Spec{},
			cat(base, []string{"--net", "--network", "none", "--writable-tmpfs", "--bind", "/d", "--pwd", "/w"}, tail)},
		{"everything with fakeroot", Config{Network: "host", WritableTmpfs: true, Fakeroot: true, Binds: []string{"/d"}, Pwd: "/w"}, backends.Spec{},
			cat(base, []string{"--writable-tmpfs", "--fakeroot", "--bind", "/d", "--pwd", "/w"}, tail)},
	} {
		b := newArgsBackend(t, tc.cfg)
		tc.spec.Command = "echo hi"
		inv, err := b.invocation(tc.spec, img)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(inv.args, tc.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, inv.args, tc.want)
		}
	}
}

// TestEnvTravelsInRuntimeEnvironment: the job's variables are
// APPTAINERENV_* (SINGULARITYENV_* for singularity) in the runtime's own
// environment, never on its command line; the worker's own variables do
// not reach the runtime beyond PATH, HOME and USER.
func TestEnvTravelsInRuntimeEnvironment(t *testing.T) {
	t.Setenv("SANDRUN_WORKER_ONLY", "leak")
	dir := t.TempDir()
	sing := filepath.Join(dir, "singularity")
	if err := os.Symlink("/bin/true", sing); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ binary, prefix string }{{"/bin/true", "APPTAINERENV_"}, {sing, "SINGULARITYENV_"}} {
		b := newArgsBackend(t, Config{Binary: tc.binary})
		inv, err := b.invocation(backends.Spec{Command: "env", Env: map[string]string{"TOKEN": "s3cret,with,commas", "B": "x=y"}}, "/i.sif")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.Join(inv.args, " "), "s3cret") {
			t.Errorf("a secret is on the command line: %q", inv.args)
		}
		for _, want := range []string{tc.prefix + "B=x=y", tc.prefix + "TOKEN=s3cret,with,commas"} {
			if !slices.Contains(inv.env, want) {
				t.Errorf("%s: env %q lacks %q", tc.binary, inv.env, want)
			}
		}
		for _, kv := range inv.env {
			if strings.Contains(kv, "SANDRUN_WORKER_ONLY") {
				t.Errorf("the worker's environment leaks to the runtime: %q", kv)
			}
		}
	}
}

func TestJobOptionErrors(t *testing.T) {
	t.Parallel()
	b := newArgsBackend(t, Config{Image: "docker://alpine:3.20"})
	for _, tc := range []struct {
		spec  backends.Spec
		field string
	}{
		{backends.Spec{Env: map[string]string{"1BAD": "x"}}, "env:"},
		{backends.Spec{Dir: "relative"}, "cwd:"},
		{backends.Spec{Container: &backends.ContainerOptions{Mounts: []string{"data:/data"}}}, "container.mounts[0]:"},
		{backends.Spec{Container: &backends.ContainerOptions{Privileged: true, CapAdd: []string{"SYS_ADMIN"}}}, "container.cap_add, container.privileged:"},
		{backends.Spec{Container: &backends.ContainerOptions{Network: "bridge"}}, "container.network:"},
		{backends.Spec{Container: &backends.ContainerOptions{Image: "alpine"}}, "container.image:"},
	} {
		tc.spec.Command = "true"
		_, err := b.image(tc.spec)
		if err == nil {
			_, err = b.invocation(tc.spec, "/i.sif")
		}
		if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: error %v, want a permanent one naming %s", tc.spec, err, tc.field)
		}
	}
}

func TestHostAccess(t *testing.T) {
	t.Parallel()
	b := newArgsBackend(t, Config{Binds: []string{"/data:/data:ro"}})
	reasons, allowed, err := b.HostAccess(t.Context(), backends.Spec{Container: &backends.ContainerOptions{Mounts: []string{"/home/u:/h"}, Network: "host"}})
	if err != nil || allowed {
		t.Fatalf("HostAccess: %v, allowed %v", err, allowed)
	}
	want := []string{"bind mount of host path /data", "bind mount of host path /home/u", "the host's network"}
	if !slices.Equal(reasons, want) {
		t.Fatalf("reasons %q, want %q", reasons, want)
	}
	if r, _, _ := newArgsBackend(t, Config{}).HostAccess(t.Context(), backends.Spec{}); len(r) != 0 {
		t.Fatalf("a plain job has host access: %q", r)
	}
}

// TestFindsRuntime: apptainer first, then singularity, else a message
// that says what to install.
func TestFindsRuntime(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	if _, err := findBinary(""); err == nil || !strings.Contains(err.Error(), "install Apptainer") {
		t.Fatalf("no runtime: %v", err)
	}
	if err := os.Symlink("/bin/true", filepath.Join(dir, "singularity")); err != nil {
		t.Fatal(err)
	}
	if p, err := findBinary(""); err != nil || filepath.Base(p) != "singularity" {
		t.Fatalf("singularity only: %s, %v", p, err)
	}
	if err := os.Symlink("/bin/true", filepath.Join(dir, "apptainer")); err != nil {
		t.Fatal(err)
	}
	if p, err := findBinary(""); err != nil || filepath.Base(p) != "apptainer" {
		t.Fatalf("both: %s, %v", p, err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Binary: "/nonexistent/apptainer"}, "binary:"},
		{Config{Binary: "/bin/true", Network: "bridge"}, "network:"},
		{Config{Binary: "/bin/true", Image: "alpine:3"}, "image:"},
		{Config{Binary: "/bin/true", Binds: []string{"rel:/x"}}, "binds[0]:"},
		{Config{Binary: "/bin/true", Pwd: "work"}, "pwd:"},
		{Config{Binary: "/bin/true", Fakeroot: true}, "fakeroot:"},
		{Config{Binary: "/bin/true", Scratch: "/proc/sandrun-cannot"}, "scratch:"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%+v: error %v, want one starting %q", tc.cfg, err, tc.field)
		}
	}
}
