package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// Fake is what the scenarios read of a backend's fake API; S is the
// fake's description of a sandbox.
type Fake[S any] interface {
	// Sandboxes returns the sandboxes not deleted, in creation order.
	Sandboxes() []S
	// Deleted returns the names or IDs of the deleted sandboxes, in order.
	Deleted() []string
}

// NewBackend returns the backend newBackend makes of cfg, closed when the
// test ends; the test fails at once if it cannot be made.
func NewBackend[C any, B interface{ Close() error }](t testing.TB, newBackend func(C) (B, error), cfg C) B {
	t.Helper()
	b, err := newBackend(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// TimeoutEndsSandbox runs, on b, a job that ignores TERM and outlives its
// 3s deadline, and checks that Run fails with context.DeadlineExceeded,
// reports SIGKILL, that the job got TERM first and that no process it
// started still runs. Then checkFake checks what the backend's fake
// recorded of the stop.
func TimeoutEndsSandbox(t *testing.T, b backends.Backend, checkFake func(t *testing.T)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var stdout testenv.Buffer
	spec := backends.Spec{JobID: "slow", Attempt: 1, KillGrace: 300 * time.Millisecond,
		Command: `trap 'echo got-term' TERM; sleep 300 & echo "pid $!"; echo "pid $$"; while :; do wait; done`}
	res, err := b.Run(ctx, spec, backends.Output{Stdout: &stdout})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v; want an error wrapping context.DeadlineExceeded", err)
	}
	if res.ExitCode != -1 || res.Signal != "SIGKILL" {
		t.Errorf("result %+v; want exit -1, SIGKILL", res)
	}
	if !strings.Contains(stdout.String(), "got-term") {
		t.Errorf("stdout %q: the job never got TERM before KILL", stdout.String())
	}
	p := backendtest.PIDs(t, stdout.String())
	if len(p) != 2 {
		t.Fatalf("want 2 pids in %q", stdout.String())
	}
	backendtest.WaitGone(t, p)
	checkFake(t)
}

// allBytes returns a command that prints every byte value on stdout, and
// in reverse on stderr, and what it prints on stdout.
func allBytes() (string, []byte) {
	var format, revFormat strings.Builder
	var want []byte
	for b := range 256 {
		fmt.Fprintf(&format, `\%03o`, b)
		fmt.Fprintf(&revFormat, `\%03o`, 255-b)
		want = append(want, byte(b))
	}
	return "printf '" + format.String() + "'; printf '" + revFormat.String() + "' >&2", want
}

// OutputAllBytes runs, on b, a job that prints every byte value on
// stdout, and in reverse on stderr, and checks that both streams come
// through exactly, in the order written.
func OutputAllBytes(t *testing.T, b backends.Backend) {
	t.Helper()
	cmd, want := allBytes()
	var stdout, stderr testenv.Buffer
	if _, err := b.Run(t.Context(), backends.Spec{JobID: "b", Attempt: 1, Command: cmd},
		backends.Output{Stdout: &stdout, Stderr: &stderr}); err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(want)
	slices.Reverse(rev)
	if got := []byte(stdout.String()); !bytes.Equal(got, want) {
		t.Errorf("stdout %q\nwant %q", got, want)
	}
	if got := []byte(stderr.String()); !bytes.Equal(got, rev) {
		t.Errorf("stderr %q\nwant %q", got, rev)
	}
}

// StartTimeout runs a job on b, whose sandbox f never lets start within
// b's start timeout, and checks that Run fails with ErrUnavailable (not
// ErrPermanent) and that the sandbox was deleted.
func StartTimeout[S any](t *testing.T, b backends.Backend, f Fake[S]) {
	t.Helper()
	_, err := b.Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Command: "true"}, backends.Output{})
	if !errors.Is(err, backends.ErrUnavailable) || errors.Is(err, backends.ErrPermanent) {
		t.Fatalf("Run: %v; want ErrUnavailable", err)
	}
	if len(f.Sandboxes()) != 0 || len(f.Deleted()) != 1 {
		t.Errorf("%d sandboxes left, %d deleted; want 0, 1", len(f.Sandboxes()), len(f.Deleted()))
	}
}
