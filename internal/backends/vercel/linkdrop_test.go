package vercel

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// numbered prints line-1..line-n on stdout and err-1..err-n on stderr,
// one pair every 100 ms, then exits with code.
func numbered(n, code int) string {
	return fmt.Sprintf(`for i in $(seq 1 %d); do echo "line-$i"; echo "err-$i" >&2; sleep 0.1; done; exit %d`, n, code)
}

// wantNumbered is what numbered prints on one stream.
func wantNumbered(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s-%d\n", prefix, i)
	}
	return b.String()
}

// proxied returns a profile that reaches f only through a TCP proxy the
// test can cut.
func proxied(t *testing.T, f *verceltest.Fake) (Config, *backendtest.Proxy) {
	t.Helper()
	u, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := backendtest.NewProxy(t, u.Host)
	cfg := fakeConfig(f)
	cfg.APIURL = "http://" + proxy.Addr + u.Path
	return cfg, proxy
}

// TestOutputSurvivesCuts: the connection to the API is cut twice while
// the job prints a numbered line on each stream every 100 ms; the log
// stream is reopened each time and skips what it had copied, and the
// wait for the exit code is made again, so both streams arrive whole, in
// order, with no line lost or repeated, and the exit code with them.
func TestOutputSurvivesCuts(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	cfg, proxy := proxied(t, f)
	b := newBackend(t, cfg)

	const n = 40
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	type outcome struct {
		res backends.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Run(ctx, backends.Spec{JobID: "cuts", Attempt: 1, Command: numbered(n, 3)},
			backends.Output{Stdout: &stdout, Stderr: &stderr})
		done <- outcome{res, err}
	}()
	stdout.WaitFor(t, "line-10\n", 20*time.Second)
	if c := proxy.Cut(); c == 0 {
		t.Fatal("first cut: no live connection to cut")
	}
	stdout.WaitFor(t, "line-25\n", 20*time.Second)
	if c := proxy.Cut(); c == 0 {
		t.Fatal("second cut: no live connection to cut")
	}
	o := <-done
	if o.err != nil || o.res.ExitCode != 3 || o.res.Signal != "" {
		t.Fatalf("Run: %+v, %v; want exit 3", o.res, o.err)
	}
	if got, want := stdout.String(), wantNumbered("line", n); got != want {
		t.Errorf("stdout has gaps or repeats:\ngot  %q\nwant %q", got, want)
	}
	if got, want := stderr.String(), wantNumbered("err", n); got != want {
		t.Errorf("stderr has gaps or repeats:\ngot  %q\nwant %q", got, want)
	}
	// The log stream and the wait hold two connections; each cut ends
	// both, and the backend opens them again.
	if a := proxy.Accepted(); a < 4 {
		t.Errorf("the proxy accepted %d connections; want the backend to have reconnected after each cut", a)
	}
	if len(f.Sandboxes()) != 0 {
		t.Errorf("sandbox left behind: %+v", f.Sandboxes())
	}
}

// TestStalledStreamCaughtUp: the log stream goes silent partway without
// ending, as one whose link died without a reset. Once the job has ended
// and nothing has come for httpsandbox.LogDrain, the ended command's log
// is read once more and the rest copied: both streams arrive whole,
// nothing repeated, where the drain alone ended the output short with
// no error.
func TestStalledStreamCaughtUp(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	f.StallLogs(5)
	b := newBackend(t, fakeConfig(f))
	const n = 30
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := b.Run(ctx, backends.Spec{JobID: "stall", Attempt: 1, Command: numbered(n, 4)},
		backends.Output{Stdout: &stdout, Stderr: &stderr})
	if err != nil || res.ExitCode != 4 {
		t.Fatalf("Run: %+v, %v; want exit 4", res, err)
	}
	if got, want := stdout.String(), wantNumbered("line", n); got != want {
		t.Errorf("stdout has gaps or repeats:\ngot  %q\nwant %q", got, want)
	}
	if got, want := stderr.String(), wantNumbered("err", n); got != want {
		t.Errorf("stderr has gaps or repeats:\ngot  %q\nwant %q", got, want)
	}
}
