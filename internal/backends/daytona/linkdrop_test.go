package daytona

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// proxied returns a profile that reaches f, control plane and toolboxes
// alike, only through a TCP proxy the test can cut.
func proxied(t *testing.T, f *daytonatest.Fake) (Config, *backendtest.Proxy) {
	t.Helper()
	u, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := backendtest.NewProxy(t, u.Host)
	f.SetToolboxHost(proxy.Addr)
	cfg := fakeConfig(f)
	cfg.APIURL = "http://" + proxy.Addr + u.Path
	return cfg, proxy
}

// mustReachToolboxVia fails the test unless the toolbox of f's one
// sandbox is reached through proxy, as the control plane is.
func mustReachToolboxVia(t *testing.T, b *Backend, f *daytonatest.Fake, proxy *backendtest.Proxy) {
	t.Helper()
	sbs := f.Sandboxes()
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes, want 1", len(sbs))
	}
	sb, err := b.api.get(t.Context(), sbs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(sb.ToolboxProxyURL); err != nil || u.Host != proxy.Addr {
		t.Fatalf("toolboxProxyUrl %q is not on the proxy %s", sb.ToolboxProxyURL, proxy.Addr)
	}
}

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

type outcome struct {
	res backends.Result
	err error
}

func startRun(ctx context.Context, b *Backend, spec backends.Spec, out backends.Output) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Run(ctx, spec, out)
		done <- outcome{res, err}
	}()
	return done
}

// TestOutputSurvivesCuts: in the default mode (session), the connection
// to the API and the toolbox is cut twice while the job prints a
// numbered line on each stream every 100 ms; the log stream is reopened
// each time and skips what it had copied, so both streams arrive whole,
// in order, with no line lost or repeated, and the exit code with them.
func TestOutputSurvivesCuts(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	cfg, proxy := proxied(t, f)
	if cfg.Mode != "" {
		t.Fatalf("the profile sets mode %q; this test is of the default", cfg.Mode)
	}
	b := newBackend(t, cfg)
	if b.cfg.Mode != ModeSession {
		t.Fatalf("default mode %q, want %s (the one that survives a drop)", b.cfg.Mode, ModeSession)
	}

	const n = 40
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := startRun(ctx, b, backends.Spec{JobID: "cuts", Attempt: 1, Command: numbered(n, 3)},
		backends.Output{Stdout: &stdout, Stderr: &stderr})
	stdout.WaitFor(t, "line-10\n", 20*time.Second)
	mustReachToolboxVia(t, b, f, proxy)
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
	// Three or more connections: the first and one after each cut.
	if a := proxy.Accepted(); a < 3 {
		t.Errorf("the proxy accepted %d connections; want the backend to have reconnected after each cut", a)
	}
	if len(f.Sandboxes()) != 0 {
		t.Errorf("sandbox left behind: %+v", f.Sandboxes())
	}
}

// TestExecuteModeLinkDrop: execute mode gets the job's output and exit
// code only in the answer to its one request, so a cut while the job runs
// loses both: Run says so with a retryable error (ErrUnavailable, naming
// session mode), writes no partial output, reports no exit code, and
// deletes the sandbox, which ends the job still running in it.
func TestExecuteModeLinkDrop(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	cfg, proxy := proxied(t, f)
	cfg.Mode = ModeExecute
	b := newBackend(t, cfg)

	ready := filepath.Join(t.TempDir(), "ready")
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	spec := backends.Spec{JobID: "cut", Attempt: 1, Env: map[string]string{"READY": ready},
		Command: `echo before; : >"$READY"; ` + numbered(100, 0)}
	done := startRun(ctx, b, spec, backends.Output{Stdout: &stdout, Stderr: &stderr})
	waitUntil(t, 20*time.Second, "the job to start", func() bool { return exists(ready) })
	mustReachToolboxVia(t, b, f, proxy)
	if c := proxy.Cut(); c == 0 {
		t.Fatal("cut: no live connection to cut")
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the cut (the job prints for 10s more)")
	}
	if !errors.Is(o.err, backends.ErrUnavailable) || errors.Is(o.err, backends.ErrPermanent) ||
		!strings.Contains(o.err.Error(), "output") || !strings.Contains(o.err.Error(), "mode: session") {
		t.Fatalf("Run: %v; want ErrUnavailable saying the output is lost and naming mode: session", o.err)
	}
	if o.res.ExitCode != -1 {
		t.Errorf("result %+v; want exit code -1 (unknown)", o.res)
	}
	if stdout.String() != "" || stderr.String() != "" {
		t.Errorf("stdout %q, stderr %q; want nothing (no answer, no output)", stdout.String(), stderr.String())
	}
	if len(f.Sandboxes()) != 0 || len(f.Deleted()) != 1 {
		t.Errorf("after the drop: %d sandboxes left, %d deleted; want 0, 1", len(f.Sandboxes()), len(f.Deleted()))
	}
	killed := false
	for _, k := range f.Kills() {
		killed = killed || k.Reason == "sandbox deleted"
	}
	if !killed {
		t.Errorf("kills %+v; want the running job killed with its sandbox", f.Kills())
	}
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	sandruntest.Eventually(t, within, func() (bool, string) { return cond(), "waiting for " + what })
}

// TestStalledStreamCaughtUp: the log stream goes silent partway, its
// connection left open, as one whose link died without a reset. Once the
// job has ended and nothing has come for httpsandbox.LogDrain, the log
// is read once more without following it and the rest copied: both
// streams arrive whole, nothing repeated, where the drain alone ended
// the output short with no error.
func TestStalledStreamCaughtUp(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	f.StallFollows(200)
	b := newBackend(t, fakeConfig(f))
	const n = 30
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := fmt.Sprintf(`for i in $(seq 1 %d); do echo "line-$i"; echo "err-$i" >&2; done; exit 4`, n)
	res, err := b.Run(ctx, backends.Spec{JobID: "stall", Attempt: 1, Command: cmd},
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
