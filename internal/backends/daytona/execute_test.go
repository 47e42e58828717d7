package daytona

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// executeBackend returns an execute-mode backend on f.
func executeBackend(t *testing.T, f *daytonatest.Fake) *Backend {
	t.Helper()
	cfg := fakeConfig(f)
	cfg.Mode = ModeExecute
	return newBackend(t, cfg)
}

// TestExecuteMode: the job's output comes combined on stdout when it
// ends, with its exit code; its environment is exactly its own (the
// values in envs, not the command text) and its cwd the one asked for.
func TestExecuteMode(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	b := executeBackend(t, f)
	dir := t.TempDir()
	want, _ := filepath.EvalSymlinks(dir)
	var stdout, stderr testenv.Buffer
	spec := backends.Spec{JobID: "e", Attempt: 1, Dir: dir, Env: map[string]string{"A": `it's "$HOME"`},
		Command: `echo out; echo err >&2; printf '%s|%s|%s\n' "$A" "${DAYTONA_SANDBOX_ID-unset}" "$(pwd -P)"; exit 3`}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := b.Run(ctx, spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("Run: %+v, %v; want exit 3", res, err)
	}
	if got := stdout.String(); got != "out\nerr\nit's \"$HOME\"|unset|"+want+"\n" {
		t.Errorf("stdout %q", got)
	}
	if stderr.String() != "" {
		t.Errorf("stderr %q, want nothing (execute combines the streams)", stderr.String())
	}
	ex := f.Executes()
	if len(ex) != 1 || ex[0].Timeout == nil || *ex[0].Timeout < 31 || *ex[0].Timeout > 35 || ex[0].Cwd != dir {
		t.Fatalf("execute requests %+v; want one with timeout 35 (30s + the margin) and cwd %s", ex, dir)
	}
	if strings.Contains(ex[0].Command, "it's") || ex[0].Envs["A"] != spec.Env["A"] {
		t.Errorf("the env value is in the command text, or not in envs: %+v", ex[0])
	}
}

// TestExecuteWithoutDeadline: a job without a deadline gets execute_timeout.
func TestExecuteWithoutDeadline(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	if _, err := executeBackend(t, f).Run(t.Context(), backends.Spec{JobID: "e", Attempt: 1, Command: "true"}, backends.Output{}); err != nil {
		t.Fatal(err)
	}
	if ex := f.Executes(); len(ex) != 1 || ex[0].Timeout == nil || *ex[0].Timeout != 3600 {
		t.Fatalf("execute requests %+v; want one with timeout 3600", ex)
	}
}

// TestExecute408BeforeDeadline: the daemon times out (408) before the
// job's deadline, which passes within the margin: the job timed out, and
// Run says so with an error wrapping ctx's cause.
func TestExecute408BeforeDeadline(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	f.SetExecuteTimeout(200 * time.Millisecond)
	b := executeBackend(t, f)
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	res, err := b.Run(ctx, backends.Spec{JobID: "e", Attempt: 1, Command: "sleep 300"}, backends.Output{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v; want an error wrapping context.DeadlineExceeded", err)
	}
	if res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Errorf("result %+v; want -1, SIGKILL (the daemon killed it)", res)
	}
	if len(f.Sandboxes()) != 0 {
		t.Errorf("sandbox left behind")
	}
}

// TestExecute408WithoutDeadline: a 408 with no deadline near is the
// daemon's doing: a retryable failure, neither permanent nor ctx's.
func TestExecute408WithoutDeadline(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	f.SetExecuteTimeout(100 * time.Millisecond)
	b := executeBackend(t, f)
	b.executeMargin = 300 * time.Millisecond
	begun := time.Now()
	_, err := b.Run(t.Context(), backends.Spec{JobID: "e", Attempt: 1, Command: "sleep 300"}, backends.Output{})
	if err == nil || errors.Is(err, backends.ErrPermanent) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "408") {
		t.Fatalf("Run: %v; want a retryable error about the 408", err)
	}
	if took := time.Since(begun); took < 300*time.Millisecond {
		t.Errorf("Run returned after %s, before waiting out the margin", took)
	}
}

// TestExecuteCancelIsGraceful: cancelled, an execute-mode job gets TERM;
// its own exit code comes back on the execute still open.
func TestExecuteCancelIsGraceful(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	b := executeBackend(t, f)
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("cancelled by the test")
	ready := filepath.Join(t.TempDir(), "ready")
	go func() { // Cancel once the job has set its trap.
		sandruntest.PollCtx(ctx, time.Minute, func() (bool, string) { return exists(ready), "" })
		cancel(cause)
	}()
	var stdout testenv.Buffer
	spec := backends.Spec{JobID: "e", Attempt: 1, KillGrace: time.Minute, Env: map[string]string{"READY": ready},
		Command: `trap 'echo got-term; exit 7' TERM; : >"$READY"; sleep 300 & wait`}
	res, err := b.Run(ctx, spec, backends.Output{Stdout: &stdout})
	if !errors.Is(err, cause) {
		t.Fatalf("Run: %v; want the cause", err)
	}
	if res.ExitCode != 7 || stdout.String() != "got-term\n" {
		t.Errorf("result %+v, stdout %q; want 7 and got-term", res, stdout.String())
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
