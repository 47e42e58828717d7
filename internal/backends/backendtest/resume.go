package backendtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// numberedCommand prints line-1..line-n on stdout and err-1..err-n on
// stderr, one pair every 100 ms, then exits with code.
func numberedCommand(n, code int) string {
	return fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo "line-$i"; echo "err-$i" >&2; i=$((i+1)); sleep 0.1; done; exit %d`, n, code)
}

// numbered is what numberedCommand prints on one stream.
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s-%d\n", prefix, i)
	}
	return b.String()
}

// testResumableOutput: a backend that declares ResumableOutput, its
// connections going through a proxy (Options.CutLinks), has them all cut
// twice while a job prints a numbered line on each stream every 100 ms:
// Run reconnects each time and delivers both streams whole, in order,
// with no line lost or repeated, and the job's exit code.
func (s *suite) testResumableOutput(t *testing.T) {
	t.Parallel()
	if !s.newBackend(t).Capabilities().ResumableOutput {
		t.Skip("no ResumableOutput declared")
	}
	if s.opts.CutLinks == nil {
		t.Fatal("ResumableOutput declared, but Options.CutLinks is nil: the claim is not checked")
	}
	b, cut := s.opts.CutLinks(t)
	const n, code = 40, 3
	stdout, stderr := newRecorder(""), newRecorder("")
	done := start(jobContext(t), b, backends.Spec{JobID: "resume", Attempt: 1, Command: numberedCommand(n, code)}, stdout, stderr)
	for _, at := range []string{"line-10\n", "line-25\n"} {
		stdout.waitFor(t, at, stderr, done)
		if cut() == 0 {
			t.Fatalf("cut after %q: no live connection to cut", strings.TrimSpace(at))
		}
	}
	// The job prints for 1.5 s more; reconnecting may take some seconds.
	o := awaitReturn(t, done, time.Now().Add(time.Minute))
	if o.err != nil || o.res.ExitCode != code || o.res.Signal != "" {
		t.Errorf("Run: %+v, %v; want exit %d", o.res, o.err, code)
	}
	if got, want := stdout.String(), numbered("line", n); got != want {
		t.Errorf("stdout has gaps or repeats:\ngot  %q\nwant %q", got, want)
	}
	if got, want := stderr.String(), numbered("err", n); got != want {
		t.Errorf("stderr has gaps or repeats:\ngot  %q\nwant %q", got, want)
	}
}
