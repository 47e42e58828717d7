package backendtest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
)

// These sub-tests run commands to completion: Run must return a nil error
// and the command's own exit code, with its output delivered exactly.

// mustComplete fails the test unless o is a completed run with exit code
// want.
func mustComplete(t *testing.T, o outcome, want int, stdout, stderr *recorder) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("Run: %v\nstdout: %q\nstderr: %q", o.err, stdout, stderr)
	}
	if o.res.ExitCode != want || o.res.Signal != "" {
		t.Fatalf("exit code %d, signal %q; want %d, no signal\nstdout: %q\nstderr: %q",
			o.res.ExitCode, o.res.Signal, want, stdout, stderr)
	}
}

func (s *suite) testExitCodes(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 1, 3, 255} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			o, stdout, stderr := s.run(t, backends.Spec{Command: fmt.Sprintf("exit %d", code)})
			mustComplete(t, o, code, stdout, stderr)
		})
	}
}

func (s *suite) testCommandNotFound(t *testing.T) {
	t.Parallel()
	o, stdout, stderr := s.run(t, backends.Spec{Command: "sandrun-backendtest-no-such-command"})
	mustComplete(t, o, 127, stdout, stderr)
}

func (s *suite) testStdoutStderr(t *testing.T) {
	t.Parallel()
	o, stdout, stderr := s.run(t, backends.Spec{Command: "echo out1; echo err1 >&2; echo out2; echo err2 >&2"})
	mustComplete(t, o, 0, stdout, stderr)
	if got, want := stdout.String(), "out1\nout2\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := stderr.String(), "err1\nerr2\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// leakVar is set in the test process; no job may see it.
const leakVar = "SANDRUN_BACKENDTEST_WORKER_ONLY"

func (s *suite) testEnv(t *testing.T) {
	t.Setenv(leakVar, "leaked")
	spec := backends.Spec{
		Command: `printf '%s\n' "$SANDRUN_A" "${SANDRUN_EMPTY-unset}" "$SANDRUN_QUOTED" "${` + leakVar + `-unset}"`,
		Env: map[string]string{
			"SANDRUN_A":      "hello world",
			"SANDRUN_EMPTY":  "",
			"SANDRUN_QUOTED": `it's "$HOME" \n`,
		},
	}
	o, stdout, stderr := s.run(t, spec)
	mustComplete(t, o, 0, stdout, stderr)
	want := "hello world\n\n" + `it's "$HOME" \n` + "\nunset\n"
	if got := stdout.String(); got != want {
		t.Errorf("stdout %q, want %q (the last line is the worker-only variable, which must be unset)", got, want)
	}
}

func (s *suite) testCwd(t *testing.T) {
	t.Parallel()
	dir := s.opts.TempDir(t)
	o, stdout, stderr := s.run(t, backends.Spec{Command: "pwd -P", Dir: dir})
	mustComplete(t, o, 0, stdout, stderr)
	want := dir
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		want = resolved // The directory is visible here too: compare physical paths.
	}
	if got := strings.TrimSuffix(stdout.String(), "\n"); got != want {
		t.Errorf("pwd -P printed %q, want %q", got, want)
	}
}

func (s *suite) testStdinEmpty(t *testing.T) {
	t.Parallel()
	o, stdout, stderr := s.run(t, backends.Spec{Command: "wc -c"})
	mustComplete(t, o, 0, stdout, stderr)
	if got := strings.TrimSpace(stdout.String()); got != "0" {
		t.Errorf("wc -c read %q bytes from stdin, want 0", got)
	}
}

func (s *suite) testTiming(t *testing.T) {
	t.Parallel()
	o, stdout, stderr := s.run(t, backends.Spec{Command: "exit 0"})
	mustComplete(t, o, 0, stdout, stderr)
	r := o.res
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() || r.FinishedAt.Before(r.StartedAt) {
		t.Errorf("StartedAt %v, FinishedAt %v: want both set, FinishedAt >= StartedAt", r.StartedAt, r.FinishedAt)
	}
}

// testLargeOutput fills both streams at once, so a backend that reads
// them one after the other deadlocks. Bounding output is the worker's job:
// a backend delivers everything.
func (s *suite) testLargeOutput(t *testing.T) {
	t.Parallel()
	const outBytes, errBytes = 20 << 20, 4 << 20
	var stdout, stderr counter
	spec := backends.Spec{
		JobID:   "backendtest",
		Command: fmt.Sprintf("head -c %d /dev/zero >&2 & head -c %d /dev/zero; wait", errBytes, outBytes),
	}
	res, err := s.newBackend(t).Run(jobContext(t), spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: exit %d, err %v", res.ExitCode, err)
	}
	if stdout.n != outBytes || stdout.nonZero != 0 {
		t.Errorf("stdout: %d bytes (%d not zero), want %d zero bytes", stdout.n, stdout.nonZero, outBytes)
	}
	if stderr.n != errBytes || stderr.nonZero != 0 {
		t.Errorf("stderr: %d bytes (%d not zero), want %d zero bytes", stderr.n, stderr.nonZero, errBytes)
	}
}

func (s *suite) testBinaryOutput(t *testing.T) {
	t.Parallel()
	o, stdout, stderr := s.run(t, backends.Spec{Command: `printf '\377\376\000\200abc\n\r'; printf '\300\000' >&2`})
	mustComplete(t, o, 0, stdout, stderr)
	if got, want := stdout.Bytes(), []byte("\xff\xfe\x00\x80abc\n\r"); !bytes.Equal(got, want) {
		t.Errorf("stdout %q, want %q", got, want)
	}
	if got, want := stderr.Bytes(), []byte("\xc0\x00"); !bytes.Equal(got, want) {
		t.Errorf("stderr %q, want %q", got, want)
	}
}

// testConcurrent runs several jobs on one backend at once; each must get
// its own output and only its own.
func (s *suite) testConcurrent(t *testing.T) {
	t.Parallel()
	const jobs, lines = 8, 500
	b := s.newBackend(t)
	ctx := jobContext(t)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			id := fmt.Sprintf("job-%d", i)
			stdout, stderr := newRecorder(""), newRecorder("")
			spec := backends.Spec{
				JobID:   id,
				Command: fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "$ID"; i=$((i+1)); done; echo "err-$ID" >&2`, lines),
				Env:     map[string]string{"ID": id},
			}
			res, err := b.Run(ctx, spec, backends.Output{Stdout: stdout, Stderr: stderr})
			if err != nil || res.ExitCode != 0 {
				t.Errorf("%s: exit %d, err %v", id, res.ExitCode, err)
				return
			}
			if got, want := stdout.String(), strings.Repeat(id+"\n", lines); got != want {
				t.Errorf("%s: stdout has %d bytes, want %d lines of %q", id, len(got), lines, id)
			}
			if got, want := stderr.String(), "err-"+id+"\n"; got != want {
				t.Errorf("%s: stderr %q, want %q", id, got, want)
			}
		})
	}
	wg.Wait()
}
