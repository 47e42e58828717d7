package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// These tests run the misbehaving plugins of plugins_test.go: each must
// fail the request with the documented error, naming the plugin, without
// a job env value, and leave nothing running.

func TestProtocolMismatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		plugin string
		says   []string
	}{
		{"future", []string{"the plugin speaks protocol 3, this sandrun speaks protocol 2", "older than the plugin"}},
		// A plugin of protocol 1 signs nothing, its hello included.
		{"v1", []string{"the plugin speaks protocol 1, this sandrun speaks protocol 2", "update the plugin"}},
	}
	for _, tt := range tests {
		t.Run(tt.plugin, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, Config{Path: testPlugin(tt.plugin)}, false)
			err := tb.b.Validate(t.Context())
			tb.assertErr(t, err, []error{ErrProtocol, backends.ErrUnavailable}, append(tt.says, "validate: start")...)
			_, err = tb.b.Run(t.Context(), secretSpec("exit 0"), backends.Output{})
			tb.assertErr(t, err, []error{ErrProtocol, backends.ErrUnavailable}, tt.says...)
		})
	}
}

func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		plugin string
		says   string
	}{
		{"garbage", "rejected 8 stdout line(s) not signed with the plugin process's session key (the first, line 2: it is not a MAC, a space and a message"},
		{"unsigned", "stdout line 1 is not signed with the session key: it is not a MAC, a space and a message"},
		{"forgedhello", "stdout line 1 is not signed with the session key: its MAC does not match"},
		{"echo", `unexpected message type "run"`},
		{"wrongid", `id "other"`},
		{"noexitcode", "exit_code"},
		{"unknown", `"progress"`},
		{"nohello", "first message"},
		{"badbase64", "base64"},
		{"latestart", `"started" after output`},
		{"longline", "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.plugin, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, Config{Path: testPlugin(tt.plugin)}, false)
			_, err := tb.b.Run(t.Context(), secretSpec("exit 0"), backends.Output{})
			tb.assertErr(t, err, []error{ErrProtocol, backends.ErrUnavailable}, tt.says)
		})
	}
}

func TestExitBeforeHello(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: testPlugin("quitter")}, false)
	err := tb.b.Validate(t.Context())
	tb.assertErr(t, err, []error{ErrExited, backends.ErrUnavailable}, "exit status 1")
	if !strings.Contains(tb.logs.String(), "cannot start: no configuration") {
		t.Errorf("the plugin's stderr is not in the log:\n%s", tb.logs)
	}
}

func TestNoHello(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	tb := setup(t, Config{Path: testPlugin("mute"), Timeout: timeout}, false)
	begun := time.Now()
	err := tb.b.Validate(t.Context())
	tb.assertErr(t, err, []error{ErrTimeout, backends.ErrUnavailable}, "no hello")
	if took := time.Since(begun); took > timeout+2*time.Second {
		t.Errorf("Validate took %s with a timeout of %s", took, timeout)
	}
}

func TestCrashMidRun(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: testPlugin("crash")}, false)
	stdout, stderr := &testenv.Buffer{}, &testenv.Buffer{}
	res, err := tb.b.Run(t.Context(), secretSpec("exit 0"), backends.Output{Stdout: stdout, Stderr: stderr})
	tb.assertErr(t, err, []error{ErrExited, backends.ErrUnavailable}, "exit status 3")
	if res.ExitCode != -1 || res.StartedAt.IsZero() {
		t.Errorf("result %+v, want exit code -1 and the start time", res)
	}
	if stdout.String() != "partial\n" || stderr.String() != "" {
		t.Errorf("job stdout %q, stderr %q; want the output sent before the crash, and no plugin log", stdout, stderr)
	}
	if !strings.Contains(tb.logs.String(), "crashing now") {
		t.Errorf("the plugin's stderr is not in the log:\n%s", tb.logs)
	}
}

// TestIgnoredCancel cancels a run on a plugin that ignores cancels: it
// must be killed, process group and all, and Run return, once the grace
// and the force margin have passed.
func TestIgnoredCancel(t *testing.T) {
	t.Parallel()
	const grace, margin = 200 * time.Millisecond, 300 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "pid")
	tb := setup(t, Config{Path: testPlugin("deaf"), Env: map[string]string{"PIDFILE": pidFile}}, false)
	tb.b.forceMargin = margin
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	spec := secretSpec("exit 0")
	spec.KillGrace = grace
	ready := &firstWrite{seen: make(chan struct{})}
	returned := make(chan error, 1)
	go func() {
		_, err := tb.b.Run(ctx, spec, backends.Output{Stdout: ready})
		returned <- err
	}()
	select { // The plugin says "ready" once it has left its process behind.
	case <-ready.seen:
	case err := <-returned:
		t.Fatalf("Run returned before the plugin was ready: %v\nlogs:\n%s", err, tb.logs)
	}

	cause := errors.New("test: cancel")
	cancelled := time.Now()
	cancel(cause)
	err := <-returned
	took := time.Since(cancelled)
	tb.assertErr(t, err, []error{cause, ErrTimeout}, "killed")
	if took < grace+margin || took > grace+margin+2*time.Second {
		t.Errorf("Run returned %s after the cancel; want between %s and 2s more", took, grace+margin)
	}
	assertGone(t, pidFile)
}

// TestLingeringPlugin ends a run with a plugin that does not exit
// afterwards: Run returns the run's result all the same, once the plugin
// and its process group have been killed.
func TestLingeringPlugin(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	tb := setup(t, Config{Path: testPlugin("lingers"), Env: map[string]string{"PIDFILE": pidFile}}, false)
	begun := time.Now()
	res, err := tb.b.Run(t.Context(), secretSpec("exit 0"), backends.Output{})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: exit %d, err %v", res.ExitCode, err)
	}
	// The plugin lingers for 300 s: a Run that returned well before that
	// gave up on it after exitWait instead of waiting (the margin is for
	// a loaded machine, not a speed target).
	if took := time.Since(begun); took > exitWait+time.Minute {
		t.Errorf("Run took %s: it waited for the lingering plugin instead of giving up after %s", took, exitWait)
	}
	if !strings.Contains(tb.logs.String(), "did not exit") {
		t.Errorf("no warning in the log:\n%s", tb.logs)
	}
	assertGone(t, pidFile)
}

func TestErrorEvents(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: testPlugin("refuses")}, false)
	err := tb.b.Validate(t.Context())
	tb.assertErr(t, err, nil, "validate", "no quota left")
	_, err = tb.b.Run(t.Context(), secretSpec("exit 0"), backends.Output{})
	tb.assertErr(t, err, []error{backends.ErrPermanent}, "no quota left")
	if errors.Is(err, backends.ErrUnavailable) {
		t.Errorf("error %v wraps ErrUnavailable: the plugin worked, it refused the job", err)
	}
}

// firstWrite is an io.Writer that closes seen on the first write.
type firstWrite struct {
	once sync.Once
	seen chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.seen) })
	return len(p), nil
}

// assertGone checks that the process whose pid is in file has gone.
func assertGone(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	if ok, _ := sandruntest.Poll(5*time.Second, func() (bool, string) { return backendtest.HostProcessGone(t, pid), "" }); !ok {
		t.Errorf("process %d, left in the plugin's group, still runs", pid)
	}
}
