package apptainertest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apptainer/sif/v2/pkg/sif"
	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/backends/singularity/apptainertest"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// result is how a run of the fake ended.
type result struct {
	stdout, stderr string
	code           int            // exit code, -1 when killed
	signal         syscall.Signal // the signal that killed it
}

// run runs the fake with args, its environment being the test's plus env.
func run(t *testing.T, f *apptainertest.Fake, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.Bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("run %q: %v", args, err)
	}
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		r.signal = ws.Signal()
	}
	return r
}

// pull makes a SIF of ref with the fake and returns its path.
func pull(t *testing.T, f *apptainertest.Fake, ref string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.sif")
	if r := run(t, f, nil, "pull", out, ref); r.code != 0 {
		t.Fatalf("pull %s: exit %d: %s", ref, r.code, r.stderr)
	}
	return out
}

func TestVersion(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	if r := run(t, f, nil, "version"); r.code != 0 || r.stdout != "1.5.3-fake\n" {
		t.Errorf("version: %+v", r)
	}
	if r := run(t, f, nil, "--version"); r.code != 0 || r.stdout != "apptainer version 1.5.3-fake\n" {
		t.Errorf("--version: %+v", r)
	}
}

func TestPullMakesRealSIF(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	a, b := pull(t, f, "docker://alpine:3.20"), pull(t, f, "docker://debian:12")
	for _, path := range []string{a, b} {
		img, err := sif.LoadContainerFromPath(path, sif.OptLoadWithFlag(os.O_RDONLY))
		if err != nil {
			t.Fatalf("load %s: %v", path, err)
		}
		d, err := img.GetDescriptor(sif.WithPartitionType(sif.PartPrimSys))
		if err != nil {
			t.Fatalf("%s: primary partition: %v", path, err)
		}
		fs, pt, arch, err := d.PartitionMetadata()
		if err != nil || fs != sif.FsSquash || pt != sif.PartPrimSys || arch != runtime.GOARCH {
			t.Errorf("%s: partition %v %v %v, %v", path, fs, pt, arch, err)
		}
		magic := make([]byte, 4)
		if _, err := d.GetReader().Read(magic); err != nil || string(magic) != "hsqs" {
			t.Errorf("%s: partition starts %q, %v", path, magic, err)
		}
		if s := img.LaunchScript(); s != "#!/usr/bin/env run-singularity\n" {
			t.Errorf("%s: launch script %q", path, s)
		}
		if err := img.UnloadContainer(); err != nil {
			t.Fatal(err)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if bytes.Equal(da, db) {
		t.Error("images of two references are identical")
	}
	// A local SIF is a valid build source, another file is not.
	c := filepath.Join(t.TempDir(), "copy.sif")
	if r := run(t, f, nil, "build", c, a); r.code != 0 {
		t.Fatalf("build from a SIF: %+v", r)
	}
	if r := run(t, f, nil, "build", c+"2", "/etc/passwd"); r.code != 255 {
		t.Errorf("build from a non-SIF file: %+v", r)
	}
}

func TestPullRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	out := pull(t, f, "docker://alpine:3.20")
	r := run(t, f, nil, "pull", out, "docker://alpine:3.20")
	if r.code != 255 || !strings.HasPrefix(r.stderr, "FATAL:   Image file already exists") {
		t.Errorf("pull onto an existing file: %+v", r)
	}
	if r := run(t, f, nil, "pull", "-F", out, "docker://alpine:3.20"); r.code != 0 {
		t.Errorf("pull -F: %+v", r)
	}
	if r := run(t, f, nil, "build", out, "docker://alpine:3.20"); r.code != 255 {
		t.Errorf("build onto an existing file: %+v", r)
	}
}

func TestPullFailures(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	dir := t.TempDir()
	for _, ref := range []string{"alpine:3.20", "http://example.com/x.sif", "docker://"} {
		if r := run(t, f, nil, "pull", filepath.Join(dir, "x.sif"), ref); r.code != 255 || !strings.HasPrefix(r.stderr, "FATAL:") {
			t.Errorf("pull %s: %+v", ref, r)
		}
	}
	f.Configure(t, apptainertest.Config{FailPull: true, PullDelay: 50 * time.Millisecond})
	start := time.Now()
	r := run(t, f, nil, "pull", filepath.Join(dir, "y.sif"), "docker://alpine:3.20")
	if r.code != 255 || !strings.Contains(r.stderr, "fail_pull") || time.Since(start) < 50*time.Millisecond {
		t.Errorf("failing pull: %+v after %v", r, time.Since(start))
	}
	if _, err := os.Stat(filepath.Join(dir, "y.sif")); err == nil {
		t.Error("a failed pull left an image")
	}
}

func TestPullCacheAndClean(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	cacheDir := t.TempDir()
	env := []string{"APPTAINER_CACHEDIR=" + cacheDir}
	dir := t.TempDir()
	if r := run(t, f, env, "pull", filepath.Join(dir, "a.sif"), "docker://alpine:3.20"); r.code != 0 {
		t.Fatalf("pull: %+v", r)
	}
	cached, _ := filepath.Glob(filepath.Join(cacheDir, "cache", "oci-tmp", "*"))
	if len(cached) != 1 {
		t.Fatalf("cache entries %v, want 1", cached)
	}
	if r := run(t, f, env, "cache", "clean"); r.code != 255 {
		t.Errorf("cache clean without --force at end of input: %+v", r)
	}
	if r := run(t, f, env, "cache", "clean", "--force"); r.code != 0 {
		t.Fatalf("cache clean: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(cacheDir, "cache")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cache still there after clean: %v", err)
	}
}

func TestExecEnvAndExitCode(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	image := pull(t, f, "docker://alpine:3.20")
	env := []string{"APPTAINERENV_B=2", "SANDRUN_CALLER_ONLY=secret"}
	r := run(t, f, env, "exec", "--cleanenv", "--env", "A=1", image, "sh", "-c", "echo $A $B; pwd; env; exit 3")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	if lines[0] != "1 2" {
		t.Errorf("A B printed %q", lines[0])
	}
	if strings.Contains(r.stdout, "SANDRUN_CALLER_ONLY") {
		t.Errorf("--cleanenv passed the caller's variable:\n%s", r.stdout)
	}
	for _, want := range []string{"HOME=", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", "APPTAINER_CONTAINER=" + image} {
		if !strings.Contains(r.stdout, "\n"+want) {
			t.Errorf("env lacks %s:\n%s", want, r.stdout)
		}
	}
	// Without --cleanenv the caller's variables are passed.
	if r := run(t, f, env, "exec", image, "sh", "-c", "echo $SANDRUN_CALLER_ONLY"); r.stdout != "secret\n" {
		t.Errorf("without --cleanenv: %+v", r)
	}
}

// TestExecEnvFlagParsesLikePflag: --env is a pflag StringToString, as in
// apptainer: one "=" keeps commas in the value, several make a CSV list.
func TestExecEnvFlagParsesLikePflag(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	image := pull(t, f, "docker://alpine:3.20")
	r := run(t, f, nil, "exec", "-e", "--env", "A=x,y", "--env=B=1,C=2", image, "sh", "-c", `echo "$A|$B|$C"`)
	if r.code != 0 || r.stdout != "x,y|1|2\n" {
		t.Errorf("--env: %+v", r)
	}
	if r := run(t, f, nil, "exec", "--env", "NOEQUALS", image, "true"); r.code != 1 {
		t.Errorf("--env without =: %+v", r)
	}
}

func TestExecWorkingDirectory(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	image := pull(t, f, "docker://alpine:3.20")
	job := t.TempDir()
	r := run(t, f, nil, "exec", "--containall", "--bind", job+":/job", "--pwd", "/job", image, "pwd")
	if r.code != 0 || r.stdout != job+"\n" {
		t.Errorf("host mode --pwd under a bind: %+v, want %s", r, job)
	}
	if r := run(t, f, nil, "exec", "-C", image, "pwd"); r.code != 0 || r.stdout != "/\n" {
		t.Errorf("contained default working directory in host mode: %+v, want /", r)
	}
	r = run(t, f, nil, "exec", "--pwd", "/nonexistent-sandrun-dir", image, "true")
	if r.code != 255 || !strings.HasPrefix(r.stderr, "FATAL:") {
		t.Errorf("missing --pwd: %+v", r)
	}
	if r := run(t, f, nil, "exec", "-B", "/nonexistent-sandrun-src:/x", image, "true"); r.code != 255 {
		t.Errorf("missing bind source: %+v", r)
	}
}

func TestExecRefusesNonSIF(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	notSIF := filepath.Join(t.TempDir(), "x.sif")
	if err := os.WriteFile(notSIF, []byte("not a sif"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, image := range []string{notSIF, filepath.Join(t.TempDir(), "missing.sif")} {
		r := run(t, f, nil, "exec", image, "true")
		if r.code != 255 || !strings.HasPrefix(r.stderr, "FATAL:   could not open image") {
			t.Errorf("exec %s: %+v", image, r)
		}
	}
}

// TestCommandLineErrors: like apptainer (cobra), flag and command errors
// exit 1, not 255.
func TestCommandLineErrors(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	image := pull(t, f, "docker://alpine:3.20")
	for _, args := range [][]string{
		{"exec", "--bogus", image, "true"},
		{"exec", "-Z", image, "true"},
		{"exec", image},
		{"frobnicate"},
	} {
		r := run(t, f, nil, args...)
		if r.code != 1 || !strings.HasPrefix(r.stderr, "Error") {
			t.Errorf("%q: %+v", args, r)
		}
	}
	if r := run(t, f, nil, "exec", "--bogus", image, "true"); !strings.Contains(r.stderr, "unknown flag: --bogus") {
		t.Errorf("unknown flag not named: %q", r.stderr)
	}
	// After the image, flags belong to the command.
	if r := run(t, f, nil, "exec", image, "echo", "--bogus"); r.code != 0 || r.stdout != "--bogus\n" {
		t.Errorf("flag after the image: %+v", r)
	}
}

func TestPayloadKilledBySignal(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	image := pull(t, f, "docker://alpine:3.20")
	r := run(t, f, nil, "exec", image, "sh", "-c", "kill -USR1 $$")
	if r.signal != syscall.SIGUSR1 {
		t.Errorf("payload killed by SIGUSR1: fake ended %+v, want killed by the same signal", r)
	}
}

func TestCallLog(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	image := pull(t, f, "docker://alpine:3.20")
	env := []string{"APPTAINERENV_X=1", "SINGULARITY_BIND=", "OTHER_VAR=2"}
	if r := run(t, f, env, "-q", "exec", "--cleanenv", image, "true"); r.code != 0 {
		t.Fatalf("exec: %+v", r)
	}
	calls := f.Calls(t)
	if len(calls) != 2 || calls[0].Command() != "pull" {
		t.Fatalf("calls %+v", calls)
	}
	execs := f.CallsOf(t, "exec")
	if len(execs) != 1 {
		t.Fatalf("exec calls %+v", execs)
	}
	c := execs[0]
	if !slices.Equal(c.Args, []string{"-q", "exec", "--cleanenv", image, "true"}) {
		t.Errorf("args %q", c.Args)
	}
	if c.Env["APPTAINERENV_X"] != "1" || c.Env["OTHER_VAR"] != "" || len(c.Env) < 2 {
		t.Errorf("env %v: want the APPTAINER*/SINGULARITY* variables only", c.Env)
	}
	wd, _ := os.Getwd()
	if c.Dir != wd || c.PID <= 0 {
		t.Errorf("dir %q pid %d", c.Dir, c.PID)
	}
}

// sleeper returns a sleep command line unique to the test, and a function
// reporting whether a live (not zombie) process runs it.
func sleeper() (cmd string, alive func() bool) {
	secs := fmt.Sprint(1_000_000 + rand.IntN(1_000_000))
	want := "sleep\x00" + secs + "\x00"
	return "sleep " + secs, func() bool {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			line, err := os.ReadFile(filepath.Join(d, "cmdline"))
			if err != nil || !strings.HasSuffix(string(line), want) {
				continue
			}
			if stat, err := os.ReadFile(filepath.Join(d, "stat")); err == nil {
				if _, rest, ok := strings.Cut(string(stat), ") "); ok && !strings.HasPrefix(rest, "Z") {
					return true
				}
			}
		}
		return false
	}
}

// startGroup starts the fake in its own process group and waits for the
// payload's first line of output.
func startGroup(t *testing.T, f *apptainertest.Fake, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(f.Bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("payload output: %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return cmd
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) { return cond(), "waiting until " + what })
}

func testKillGroup(t *testing.T, cfg apptainertest.Config, flags ...string) {
	f := apptainertest.Install(t)
	f.Configure(t, cfg)
	image := pull(t, f, "docker://alpine:3.20")
	sleep, alive := sleeper()
	args := append(append([]string{"exec"}, flags...), image, "sh", "-c", sleep+" & echo started; wait")
	cmd := startGroup(t, f, args...)
	waitUntil(t, "the payload's sleep runs", alive)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitUntil(t, "the sleep is gone", func() bool { return !alive() })
}

func testTermGroup(t *testing.T, cfg apptainertest.Config, flags ...string) {
	f := apptainertest.Install(t)
	f.Configure(t, cfg)
	image := pull(t, f, "docker://alpine:3.20")
	sleep, _ := sleeper()
	script := `trap "exit 7" TERM; ` + sleep + ` & echo ready; wait`
	cmd := startGroup(t, f, append(append([]string{"exec"}, flags...), image, "sh", "-c", script)...)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Fatalf("fake ended %v (exit %d), want 7: the payload's trap", err, code)
	}
}

// TestKillGroup: SIGKILL to the fake's process group ends the payload.
func TestKillGroup(t *testing.T) {
	t.Parallel()
	testKillGroup(t, apptainertest.Config{})
}

// TestTermGroup: the fake survives SIGTERM to its group and exits with the
// payload's code.
func TestTermGroup(t *testing.T) {
	t.Parallel()
	testTermGroup(t, apptainertest.Config{}, "--containall")
}

// TestTermFakeOnlyIsForwarded: SIGTERM to the fake alone reaches the
// payload, as apptainer forwards signals.
func TestTermFakeOnlyIsForwarded(t *testing.T) {
	t.Parallel()
	f := apptainertest.Install(t)
	image := pull(t, f, "docker://alpine:3.20")
	sleep, _ := sleeper()
	cmd := startGroup(t, f, "exec", image, "sh", "-c", `trap "exit 9" TERM; `+sleep+` & echo ready; wait`)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 9 {
		t.Fatalf("exit %d, want 9", code)
	}
}

func TestChrootExec(t *testing.T) {
	t.Parallel()
	apptainertest.RequireChroot(t)
	f := apptainertest.Install(t)
	f.Configure(t, apptainertest.Config{Chroot: true})
	image := pull(t, f, "docker://alpine:3.20")
	job := t.TempDir()
	if err := os.WriteFile(filepath.Join(job, "in"), []byte("from host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `cat /etc/sandrun-ref; pwd; cat in; echo out > out;
		touch /rootfs-file 2>/dev/null && echo root writable || echo root read-only;
		touch /tmp/x && echo tmp writable; grep -c : /proc/net/dev; echo "$1|$2"; exit 4`
	r := run(t, f, []string{"APPTAINERENV_SEEN=yes"}, "exec", "--containall", "--no-home", "--cleanenv", "--net", "--network", "none",
		"--bind", job+":/job", "--pwd", "/job", image, "/bin/sh", "-c", script, "sh", "a b", "")
	want := "docker://alpine:3.20\n/job\nfrom host\nroot read-only\ntmp writable\n1\na b|\n"
	if r.code != 4 || r.stdout != want {
		t.Fatalf("chroot exec: exit %d\nstdout %q\nwant   %q\nstderr %s", r.code, r.stdout, want, r.stderr)
	}
	if out, err := os.ReadFile(filepath.Join(job, "out")); err != nil || string(out) != "out\n" {
		t.Errorf("write through the bind: %q, %v", out, err)
	}
	r = run(t, f, nil, "exec", "--containall", "--writable-tmpfs", image, "sh", "-c", "touch /rootfs-file && echo ok")
	if r.stdout != "ok\n" {
		t.Errorf("--writable-tmpfs: %+v", r)
	}
	if r := run(t, f, nil, "exec", "--containall", "--pwd", "/nonexistent", image, "true"); r.code != 255 {
		t.Errorf("missing --pwd in the container: %+v", r)
	}
	// A host directory is not in a contained container, bound or not.
	if r := run(t, f, nil, "exec", "--containall", "--pwd", job, image, "true"); r.code != 255 {
		t.Errorf("--pwd of a host directory: %+v", r)
	}
	// Contained, apptainer starts in the home directory; where that is not
	// in the container it warns and uses /.
	if r := run(t, f, nil, "exec", "--containall", "--no-home", "--home", "/tmp:/root", image, "pwd"); r.stdout != "/root\n" || r.stderr != "" {
		t.Errorf("contained default working directory: %+v, want /root (in the image)", r)
	}
	r = run(t, f, nil, "exec", "--containall", "--no-home", "--home", "/tmp:/sandrun-nohome", image, "pwd")
	if r.stdout != "/\n" || !strings.HasPrefix(r.stderr, "WARNING: Error changing the container working directory. Using '/' instead") {
		t.Errorf("contained, home not in the container: %+v, want / and a warning", r)
	}
	if r := run(t, f, nil, "exec", "-C", image, "sh", "-c", "kill -TERM $$"); r.signal != syscall.SIGTERM {
		t.Errorf("payload killed by SIGTERM in the chroot: %+v", r)
	}
}

func TestChrootKillGroup(t *testing.T) {
	t.Parallel()
	apptainertest.RequireChroot(t)
	testKillGroup(t, apptainertest.Config{Chroot: true}, "--containall")
}

func TestChrootTermGroup(t *testing.T) {
	t.Parallel()
	apptainertest.RequireChroot(t)
	testTermGroup(t, apptainertest.Config{Chroot: true}, "--containall")
}
