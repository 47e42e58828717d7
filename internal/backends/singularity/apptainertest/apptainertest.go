// Package apptainertest installs a fake apptainer CLI for tests, on
// machines where Apptainer cannot be installed:
//
//	fake := apptainertest.Install(t)
//	// run fake.Bin (or put fake.Dir first on PATH) ...
//	for _, c := range fake.CallsOf(t, "exec") { ... c.Args, c.Env ... }
//
// The fake (./fakeapptainer) answers version, makes real SIF files for
// pull and build (a busybox rootfs squashed with mksquashfs), runs exec's
// command on the host, or in a chroot of the image with Config.Chroot,
// and records every call. It copies apptainer's exit codes: a flag or
// command-line error exits 1, apptainer's own failures print "FATAL:" and
// exit 255, the payload's exit code passes through, and a payload killed
// by signal N kills the fake with N.
//
// Host mode cannot isolate anything: the command sees the host's files,
// not the image's; --pwd is mapped through the --bind list to a host
// directory. Chroot mode (Config.Chroot, guarded by RequireChroot) runs
// the command in the unpacked image with the binds, a fresh /proc, /dev
// and /tmp, PID and network namespaces as the flags ask, and a read-only
// root unless --writable-tmpfs: there, PIDs the job prints are not host
// PIDs, and host paths are only visible where bound.
//
// It needs the go command (to build the fake once per source version),
// mksquashfs (squashfs-tools) and a static /bin/busybox (busybox-static);
// chroot mode also needs unsquashfs and root. Where they are missing the
// test is skipped, except under CI (CI=true), where it fails.
package apptainertest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/testenv"
)

// Fake is an installed fake apptainer.
type Fake struct {
	Dir string // holds the "apptainer" executable and fake.json: prepend it to PATH, or run Bin
	Bin string // Dir/apptainer
	Log string // the call log, one JSON object per line
}

// Config is how the fake behaves; the zero value is a prompt, working
// apptainer that runs exec's command on the host.
type Config struct {
	PullDelay time.Duration // pull and build take this long
	FailPull  bool          // pull and build fail (FATAL, exit 255) after the delay
	Chroot    bool          // exec runs in a chroot of the image (see RequireChroot)
}

// Call is one recorded invocation of the fake.
type Call struct {
	Args []string          // its arguments, without the program name
	Env  map[string]string // its APPTAINER* and SINGULARITY* variables
	Dir  string            // its working directory
	PID  int
}

// Command is the call's command word ("exec", "pull", ...): its first
// argument after apptainer's global flags.
func (c Call) Command() string {
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		switch {
		case a == "-c" || a == "--config":
			i++ // takes a value
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// fakeConfig is fake.json as the fake reads it.
type fakeConfig struct {
	Log       string `json:"log"`
	PullDelay string `json:"pull_delay,omitempty"`
	FailPull  bool   `json:"fail_pull,omitempty"`
	Chroot    bool   `json:"chroot,omitempty"`
}

// Install makes a fresh fake apptainer in a temp dir of the test, with its
// own (empty) call log and the default Config.
func Install(t testing.TB) *Fake {
	t.Helper()
	bin := program(t)
	dir := t.TempDir()
	f := &Fake{Dir: dir, Bin: filepath.Join(dir, "apptainer"), Log: filepath.Join(dir, "calls.jsonl")}
	if err := installBinary(bin, f.Bin); err != nil {
		t.Fatalf("apptainertest: install: %v", err)
	}
	f.Configure(t, Config{})
	return f
}

// Configure sets how the fake behaves from now on (the log is kept).
func (f *Fake) Configure(t testing.TB, c Config) {
	t.Helper()
	cfg := fakeConfig{Log: f.Log, FailPull: c.FailPull, Chroot: c.Chroot}
	if c.PullDelay > 0 {
		cfg.PullDelay = c.PullDelay.String()
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the file whole: a running fake may be reading it.
	tmp := filepath.Join(f.Dir, ".fake.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatalf("apptainertest: configure: %v", err)
	}
	if err := os.Rename(tmp, filepath.Join(f.Dir, "fake.json")); err != nil {
		t.Fatalf("apptainertest: configure: %v", err)
	}
}

// Calls returns every call recorded so far, oldest first.
func (f *Fake) Calls(t testing.TB) []Call {
	t.Helper()
	data, err := os.ReadFile(f.Log)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("apptainertest: call log: %v", err)
	}
	var calls []Call
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var c struct {
			Args []string          `json:"args"`
			Env  map[string]string `json:"env"`
			Dir  string            `json:"dir"`
			PID  int               `json:"pid"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("apptainertest: call log line %q: %v", sc.Text(), err)
		}
		calls = append(calls, Call{Args: c.Args, Env: c.Env, Dir: c.Dir, PID: c.PID})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("apptainertest: call log: %v", err)
	}
	return calls
}

// CallsOf returns the recorded calls of command cmd ("exec", "pull", ...;
// see Call.Command).
func (f *Fake) CallsOf(t testing.TB, cmd string) []Call {
	t.Helper()
	var out []Call
	for _, c := range f.Calls(t) {
		if c.Command() == cmd {
			out = append(out, c)
		}
	}
	return out
}

// BuildSIF makes a real SIF at path for ref (say docker://busybox:1) with
// the fake's build, for tests that need a local image. Images of
// different refs differ (the ref is in /etc/sandrun-ref); an existing file
// is replaced.
func BuildSIF(t testing.TB, path, ref string) {
	t.Helper()
	cmd := exec.Command(program(t), "build", "--force", path, ref)
	cmd.Env = append(os.Environ(), "APPTAINER_TMPDIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apptainertest: build %s %s: %v\n%s", path, ref, err, out)
	}
}

// RequireChroot skips the test (fails it under CI) unless the fake's
// chroot mode works here: it needs root (CAP_SYS_ADMIN for mount
// namespaces, mounts and chroot) and unsquashfs. The first call tries it.
func RequireChroot(t testing.TB) {
	t.Helper()
	program(t)
	chrootOnce.Do(func() { chrootErr = probeChroot() })
	if chrootErr != nil {
		requireFailed(t, "chroot mode does not work here: %v", chrootErr)
	}
}

var (
	chrootOnce sync.Once
	chrootErr  error
)

// probeChroot runs `true` in chroot mode once.
func probeChroot() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	if _, err := exec.LookPath("unsquashfs"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "apptainertest-probe-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "apptainer")
	if err := installBinary(buildBin, bin); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "fake.json"), []byte(`{"chroot":true}`), 0o600); err != nil {
		return err
	}
	image := filepath.Join(dir, "probe.sif")
	if out, err := exec.Command(bin, "build", image, "docker://sandrun/chroot-probe:1").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %w: %s", err, out)
	}
	if out, err := exec.Command(bin, "exec", "--containall", image, "/bin/true").CombinedOutput(); err != nil {
		return fmt.Errorf("exec: %w: %s", err, out)
	}
	return nil
}

var (
	buildOnce sync.Once
	buildBin  string // the built fake, shared by every Fake of the process
	buildErr  error
	missing   string // a requirement that is not there
)

// program returns the built fake, building it on first use.
func program(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { buildBin, missing, buildErr = build() })
	if missing != "" {
		requireFailed(t, "%s", missing)
	}
	if buildErr != nil {
		t.Fatalf("apptainertest: build the fake: %v", buildErr)
	}
	return buildBin
}

// requireFailed skips the test, or fails it under CI.
func requireFailed(t testing.TB, format string, args ...any) {
	t.Helper()
	testenv.Missing(t, "apptainertest: "+format, args...)
}

// build checks the requirements and builds the fake once per version of
// its sources, into os.TempDir()/sandrun-fakeapptainer-<hash>, so test
// binaries share it; a new build removes the builds unused for a day.
func build() (bin, missing string, err error) {
	if runtime.GOOS != "linux" {
		return "", "the fake apptainer runs on Linux only", nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", "the go command is needed to build the fake apptainer", nil
	}
	if _, err := exec.LookPath("mksquashfs"); err != nil {
		return "", "mksquashfs (Debian's squashfs-tools) is needed to make SIF images", nil
	}
	if st, err := os.Stat("/bin/busybox"); err != nil || st.Mode()&0o111 == 0 {
		return "", "/bin/busybox (Debian's busybox-static) is needed for the images' rootfs", nil
	}
	src := sourceDir()
	key, err := sourceKey(src)
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(os.TempDir(), buildPrefix+key)
	bin = filepath.Join(dir, "apptainer")
	if st, err := os.Stat(bin); err == nil && st.Mode()&0o111 != 0 {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // in use
		return bin, "", nil
	}
	pruneBuilds()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", "", err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", bin, os.Getpid())
	cmd := exec.Command(goBin, "build", "-o", tmp, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return "", "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", "", err
	}
	return bin, "", nil
}

// buildPrefix names the build directories in os.TempDir().
const buildPrefix = "sandrun-fakeapptainer-"

// pruneBuilds removes the builds of other source versions unused for a
// day.
func pruneBuilds() {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), buildPrefix+"*"))
	for _, d := range old {
		if st, err := os.Stat(d); err == nil && time.Since(st.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(d)
		}
	}
}

// sourceDir is the fakeapptainer package: next to this file, else (in a
// -trimpath build) as the go command finds it.
func sourceDir() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "fakeapptainer")
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}",
		"github.com/sandrun/sandrun/internal/backends/singularity/apptainertest/fakeapptainer").Output()
	if err != nil {
		return "fakeapptainer"
	}
	return strings.TrimSpace(string(out))
}

// sourceKey hashes what the fake is built from: its sources, the module's
// go.mod and go.sum, and the Go version.
func sourceKey(src string) (string, error) {
	h := sha256.New()
	_, _ = io.WriteString(h, runtime.Version())
	files, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("fake apptainer sources not found in %s", src)
	}
	moduleRoot := filepath.Join(src, "..", "..", "..", "..", "..")
	files = append(files, filepath.Join(moduleRoot, "go.mod"), filepath.Join(moduleRoot, "go.sum"))
	slices.Sort(files)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return "", err
		}
		_, _ = fmt.Fprintf(h, "%s %d\n", filepath.Base(name), len(data))
		_, _ = h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// installBinary hard-links the program at from as to, or copies it where
// linking fails (another file system). A link also avoids "text file
// busy": no descriptor is open for writing while other tests fork.
func installBinary(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	return copyExecutable(from, to)
}

// copyExecutable copies the program at from to to, mode 0700.
func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700) //nolint:gosec // an executable
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
