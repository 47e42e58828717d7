package local

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newLocal returns a validated backend built from cfg.
func newLocal(t *testing.T, cfg Config) *Local {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := l.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return l
}

// run runs command to completion and returns its result and output.
func run(t *testing.T, l *Local, spec backends.Spec) (backends.Result, string, string, error) {
	t.Helper()
	var stdout, stderr strings.Builder
	res, err := l.Run(t.Context(), spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
	return res, stdout.String(), stderr.String(), err
}

// TestConformance runs the suite with each attempt in a cgroup of its own
// and, as where the host has none, in its process group alone.
func TestConformance(t *testing.T) {
	for _, mode := range []string{CgroupRequired, CgroupOff} {
		t.Run("cgroup="+mode, func(t *testing.T) {
			newCgroupLocal(t, Config{Cgroup: mode}) // Missing: no cgroup v2 to require.
			backendtest.Run(t, func(t *testing.T) backends.Backend {
				return newLocal(t, Config{Cgroup: mode})
			}, backendtest.Options{ProcessGone: backendtest.HostProcessGone,
				Refuses: append([]string{"session"}, backendtest.ContainerRefusals()...)})
		})
	}
}

func TestKindAndCapabilities(t *testing.T) {
	t.Parallel()
	l := newLocal(t, Config{})
	if got := l.Kind(); got != "local" {
		t.Errorf("Kind() = %q, want local", got)
	}
	if got, want := l.Capabilities(), (backends.Capabilities{ResourceUsage: true, Workspaces: true, Shell: DefaultShell}); !reflect.DeepEqual(got, want) {
		t.Errorf("Capabilities() = %+v, want %+v", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-exec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		cfg   Config
		field string
		atNew bool // The error comes from New rather than Validate.
	}{
		{"relative shell", Config{Shell: "sh"}, "shell", true},
		{"bad base_env key", Config{BaseEnv: map[string]string{"A=B": "x"}}, "base_env", true},
		{"NUL in base_env value", Config{BaseEnv: map[string]string{"A": "x\x00"}}, "base_env", true},
		{"unknown cgroup mode", Config{Cgroup: "yes"}, "cgroup", true},
		{"relative cgroup_parent", Config{CgroupParent: "sandrun"}, "cgroup_parent", true},
		{"cgroup_parent with cgroup off", Config{Cgroup: CgroupOff, CgroupParent: "/sys/fs/cgroup/sandrun"}, "cgroup_parent", true},
		{"missing shell", Config{Shell: filepath.Join(dir, "missing")}, "shell", false},
		{"shell is a directory", Config{Shell: dir}, "shell", false},
		{"shell not executable", Config{Shell: notExec}, "shell", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := New(tt.cfg)
			if !tt.atNew {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				err = l.Validate(t.Context())
			}
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %v, want one naming %q", err, tt.field)
			}
		})
	}
}

func TestEnvLayers(t *testing.T) {
	t.Parallel()
	const cmd = `printf '%s\n' "$PATH" "$BASE" "$BOTH"`
	tests := []struct {
		name    string
		baseEnv map[string]string
		jobEnv  map[string]string
		want    string
	}{
		{"defaults", nil, nil, DefaultPath + "\n\n\n"},
		{"job over base", map[string]string{"BASE": "b", "BOTH": "base"}, map[string]string{"BOTH": "job"}, DefaultPath + "\nb\njob\n"},
		{"base PATH", map[string]string{"PATH": "/base"}, nil, "/base\n\n\n"},
		{"job PATH", map[string]string{"PATH": "/base"}, map[string]string{"PATH": "/job"}, "/job\n\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newLocal(t, Config{BaseEnv: tt.baseEnv})
			res, stdout, stderr, err := run(t, l, backends.Spec{Command: cmd, Env: tt.jobEnv})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
			}
			if stdout != tt.want {
				t.Errorf("stdout %q, want %q", stdout, tt.want)
			}
		})
	}
}

func TestPermanentSpecErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		spec  backends.Spec
		field string
	}{
		{"missing cwd", backends.Spec{Command: "exit 0", Dir: filepath.Join(file, "..", "missing")}, "cwd"},
		{"cwd is a file", backends.Spec{Command: "exit 0", Dir: file}, "cwd"},
		{"bad env key", backends.Spec{Command: "exit 0", Env: map[string]string{"A=B": "x"}}, "env"},
		{"reserved env key", backends.Spec{Command: "exit 0", Env: map[string]string{ReservedEnv: "1.00"}}, ReservedEnv},
		{"NUL in command", backends.Spec{Command: "echo \x00"}, "command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, _, _, err := run(t, newLocal(t, Config{}), tt.spec)
			if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %v, want one wrapping ErrPermanent and naming %q", err, tt.field)
			}
			if res.ExitCode != -1 || !res.StartedAt.IsZero() {
				t.Errorf("result %+v, want a run that never started", res)
			}
		})
	}
}

func TestResourceUsage(t *testing.T) {
	t.Parallel()
	// awk holds a 64 MiB string: peak RSS shows it, in bytes not KiB.
	const cmd = `awk 'BEGIN { s = "x"; while (length(s) < 67108864) s = s s; print length(s) }'`
	res, stdout, stderr, err := run(t, newLocal(t, Config{}), backends.Spec{Command: cmd})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
	}
	if stdout != "67108864\n" {
		t.Fatalf("stdout %q", stdout)
	}
	if res.MaxRSSBytes < 64<<20 {
		t.Errorf("MaxRSSBytes = %d, want at least 64 MiB", res.MaxRSSBytes)
	}
	if res.UserCPU+res.SysCPU <= 0 {
		t.Errorf("UserCPU %s + SysCPU %s, want > 0", res.UserCPU, res.SysCPU)
	}
}

func TestNilWritersDiscard(t *testing.T) {
	t.Parallel()
	res, err := newLocal(t, Config{}).Run(t.Context(), backends.Spec{Command: "echo out; echo err >&2; exit 2"}, backends.Output{})
	if err != nil || res.ExitCode != 2 {
		t.Fatalf("exit %d, err %v; want 2, nil", res.ExitCode, err)
	}
}

// failingWriter fails every write with errSink.
type failingWriter struct{}

var errSink = errors.New("sink failed")

func (failingWriter) Write([]byte) (int, error) { return 0, errSink }

func TestFailingWriterDoesNotStopJob(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	// Without the guard the second write would get SIGPIPE and exit 141.
	res, err := newLocal(t, Config{}).Run(t.Context(),
		backends.Spec{Command: "echo one; head -c 1000000 /dev/zero; echo err >&2; exit 3"},
		backends.Output{Stdout: failingWriter{}, Stderr: &stderr})
	if !errors.Is(err, errSink) || !strings.Contains(err.Error(), "stdout") {
		t.Errorf("error %v, want one wrapping the stdout write error", err)
	}
	if res.ExitCode != 3 || stderr.String() != "err\n" {
		t.Errorf("exit %d, stderr %q; want 3, %q", res.ExitCode, stderr.String(), "err\n")
	}
}

// TestStartGateStopsTheStart: a gate that says no stops the run before
// the command starts (the worker's lease check, asked as late as it can
// be), and its error comes back.
func TestStartGateStopsTheStart(t *testing.T) {
	t.Parallel()
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	closed := errors.New("lease gone")
	_, err = l.Run(t.Context(), backends.Spec{Command: "touch " + marker, StartGate: func() (time.Time, error) { return time.Time{}, closed }}, backends.Output{})
	if !errors.Is(err, closed) {
		t.Fatalf("Run: %v, want the gate's error", err)
	}
	if _, serr := os.Stat(marker); serr == nil {
		t.Fatal("the command ran though the gate said no")
	}
	open := func() (time.Time, error) { return time.Now().Add(time.Minute), nil }
	if _, err := l.Run(t.Context(), backends.Spec{Command: "touch " + marker, StartGate: open}, backends.Output{}); err != nil {
		t.Fatal(err)
	}
	if _, serr := os.Stat(marker); serr != nil {
		t.Fatal("the command did not run though the gate said yes")
	}
}

// TestStartGateDeadlineHoldsAcrossAFreeze: a worker frozen between the
// gate's yes and the start (TestChaos seed 9) starts nothing once the
// gate's deadline has passed: the started process checks the clock
// itself. The run says why — the gate's error when it has one by then,
// else a retryable late start — and a start in time runs the command in
// the very process the check ran in, with the job's own environment.
func TestStartGateDeadlineHoldsAcrossAFreeze(t *testing.T) {
	l := newLocal(t, Config{})
	freeze := func(d time.Duration) {
		afterGate = func() { time.Sleep(d) }
		t.Cleanup(func() { afterGate = func() {} })
	}
	lost := errors.New("lease lost meanwhile")
	for _, tt := range []struct {
		name  string
		later error // the gate's answer when asked again
		want  error
	}{
		{"lease lost", lost, lost},
		{"lease renewed meanwhile", nil, backends.ErrUnavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			freeze(300 * time.Millisecond)
			marker := filepath.Join(t.TempDir(), "ran")
			asked := 0
			gate := func() (time.Time, error) {
				asked++
				if asked == 1 {
					return time.Now().Add(100 * time.Millisecond), nil
				}
				return time.Now().Add(time.Minute), tt.later
			}
			res, stdout, stderr, err := run(t, l, backends.Spec{Command: "echo ran; touch " + marker, StartGate: gate})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "not started") {
				t.Errorf("Run: %v, want a run not started wrapping %v", err, tt.want)
			}
			if _, serr := os.Stat(marker); serr == nil || stdout != "" || stderr != "" {
				t.Errorf("the command ran past its deadline (stdout %q, stderr %q)", stdout, stderr)
			}
			if res.ExitCode != -1 {
				t.Errorf("exit code %d, want -1 (no command ran)", res.ExitCode)
			}
		})
	}

	t.Run("in time", func(t *testing.T) {
		freeze(50 * time.Millisecond)
		gate := func() (time.Time, error) { return time.Now().Add(5 * time.Second), nil }
		// $$ is the process the check ran in; fd 3 is closed; the
		// check's variable is gone; $0 is the job's shell.
		cmd := `echo "$0 ${` + ReservedEnv + `-unset} $$"; [ -e /proc/self/fd/3 ] && echo fd3 open; exit 7`
		res, stdout, stderr, err := run(t, l, backends.Spec{Command: cmd, StartGate: gate})
		if err != nil || res.ExitCode != 7 {
			t.Fatalf("Run: exit %d, err %v, stderr %q", res.ExitCode, err, stderr)
		}
		f := strings.Fields(stdout)
		if len(f) != 3 || f[0] != DefaultShell || f[1] != "unset" {
			t.Fatalf("stdout %q, want the job's shell, its variable unset, its pid and nothing else", stdout)
		}
	})
}
