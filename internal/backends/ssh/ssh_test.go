package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// fixture is an sshd on loopback that a user key may log in to, with a
// known_hosts file that trusts it.
type fixture struct {
	srv        *sshtest.Server
	key        *sshtest.Key
	knownHosts string
	dir        string
}

// sshdExtra lets the parallel sub-tests of one server connect at once.
const sshdExtra = "MaxStartups 200\n"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	key := sshtest.NewKey(t, dir, "id_ed25519", "")
	srv := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key}, ExtraConfig: sshdExtra})
	f := &fixture{srv: srv, key: key, dir: dir, knownHosts: filepath.Join(dir, "known_hosts")}
	f.trust(t, srv.Addr)
	return f
}

// trust appends a known_hosts line for the server's key at addr.
func (f *fixture) trust(t *testing.T, addr string) {
	t.Helper()
	appendFile(t, f.knownHosts, knownhosts.Line([]string{knownhosts.Normalize(addr)}, f.srv.HostKey.Public)+"\n")
}

// config is a profile for the fixture's server; each call gets its own run root.
func (f *fixture) config(t *testing.T) Config {
	t.Helper()
	root, err := os.MkdirTemp(f.dir, "runs-")
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Host: "127.0.0.1", Port: f.srv.Port, User: f.srv.User,
		IdentityFiles: []string{f.key.Path}, KnownHosts: []string{f.knownHosts}, RunRoot: root,
	}
}

// proxiedConfig is config through a TCP proxy the test can cut.
func (f *fixture) proxiedConfig(t *testing.T) (Config, *sshtest.Proxy) {
	t.Helper()
	proxy := sshtest.NewProxy(t, f.srv.Addr)
	f.trust(t, proxy.Addr)
	cfg := f.config(t)
	cfg.Port = proxy.Port
	return cfg, proxy
}

// backend builds and validates a backend, closed with the test.
func backend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return b
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	f := newFixture(t)
	var configs sync.Map // backends.Backend -> Config
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		cfg := f.config(t)
		b := backend(t, cfg)
		configs.Store(b, cfg)
		return b
	}, backendtest.Options{
		// The next worker's reaper sees the same run root, and kills
		// orphans (adopting them is TestNextAttemptAdoptsOrphan's).
		Reaper: func(t *testing.T, running backends.Backend) (backends.OrphanReaper, string) {
			cfg, _ := configs.Load(running)
			c := cfg.(Config)
			c.OnOrphan = orphanKill
			return backend(t, c), ""
		},
		CutLinks: func(t *testing.T) (backends.Backend, func() int) {
			cfg, proxy := f.proxiedConfig(t)
			return backend(t, cfg), proxy.Cut
		},
		// sshd runs on this host: an attempt's run directory is here too.
		Leftovers: func(t *testing.T, b backends.Backend, spec backends.Spec) []string {
			cfg, _ := configs.Load(b)
			return runDirFiles(t, cfg.(Config).RunRoot, spec)
		},
		KeepsFailed: true, // for KeepFailed, then the reaper removes it
		ProcessGone: backendtest.HostProcessGone,
		StopMargin:  10 * time.Second,
		Refuses:     append([]string{"session"}, backendtest.ContainerRefusals()...),
	})
}

// runDirFiles lists the run directory of spec's attempt under root and
// its files, or nothing if it is gone.
func runDirFiles(t *testing.T, root string, spec backends.Spec) []string {
	t.Helper()
	dir := filepath.Join(root, fmt.Sprintf("%s-%d", spec.JobID, spec.Attempt))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	files := []string{dir}
	for _, e := range entries {
		files = append(files, filepath.Join(dir, e.Name()))
	}
	return files
}

type outcome struct {
	res backends.Result
	err error
}

func start(ctx context.Context, b *Backend, spec backends.Spec, stdout, stderr io.Writer) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Run(ctx, spec, backends.Output{Stdout: stdout, Stderr: stderr})
		done <- outcome{res, err}
	}()
	return done
}

// numbered prints the lines 1..n, one every 100 ms.
func numbered(n int) string {
	return fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo $i; i=$((i+1)); sleep 0.1; done`, n)
}

// mustBeNumbered fails the test unless the run succeeded and printed
// numbered(n)'s lines, each once and in order.
func mustBeNumbered(t *testing.T, o outcome, stdout, stderr *testenv.Buffer, n int) {
	t.Helper()
	if o.err != nil || o.res.ExitCode != 0 {
		t.Fatalf("Run: %+v, %v; stderr %q", o.res, o.err, stderr.String())
	}
	if got, want := stdout.String(), wantNumbered(n); got != want {
		t.Fatalf("output has gaps or repeats:\ngot  %q\nwant %q", got, want)
	}
}

func wantNumbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	return b.String()
}

// TestOutputSurvivesCuts cuts the connection twice while a job prints a
// numbered line every 100 ms for 10 s: the job succeeds and every line
// arrives exactly once.
func TestOutputSurvivesCuts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, proxy := f.proxiedConfig(t)
	m := metrics.New()
	cfg.Metrics, cfg.Profile = m, "lab"
	b := backend(t, cfg)

	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := start(ctx, b, backends.Spec{JobID: "cuts", Attempt: 1, Command: numbered(100)}, &stdout, &stderr)
	stdout.WaitFor(t, "\n20\n", 20*time.Second)
	if n := proxy.Cut(); n == 0 {
		t.Fatal("first cut: no live connection to cut")
	}
	stdout.WaitFor(t, "\n50\n", 20*time.Second)
	if n := proxy.Cut(); n == 0 {
		t.Fatal("second cut: no live connection to cut")
	}
	mustBeNumbered(t, <-done, &stdout, &stderr, 100)
	if n := testutil.ToFloat64(m.SSHReconnects.WithLabelValues("lab")); n < 2 {
		t.Errorf("reconnects %v, want at least 2", n)
	}
	if n := testutil.ToFloat64(m.SSHResumedStreams.WithLabelValues("lab")); n < 2 {
		t.Errorf("resumed streams %v, want at least 2", n)
	}
}

// grandchildren prints the pids of a child, a grandchild shell and a
// great-grandchild, then "ready".
const grandchildren = `sleep 3011 & echo "pid $!"
sh -c 'echo "pid $$"; sleep 3012 & echo "pid $!"; wait' &
sleep 0.2; echo ready; wait`

func pids(t *testing.T, out string) []int {
	t.Helper()
	var ps []int
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "pid "); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("bad pid line %q", line)
			}
			ps = append(ps, n)
		}
	}
	if len(ps) != 3 {
		t.Fatalf("want 3 pids, got %v from %q", ps, out)
	}
	return ps
}

// awaitGone fails the test unless every pid is gone within d.
func awaitGone(t *testing.T, ps []int, d time.Duration) {
	t.Helper()
	sandruntest.Eventually(t, d, func() (bool, string) {
		for _, pid := range ps {
			if !backendtest.HostProcessGone(t, pid) {
				return false, fmt.Sprintf("remote process %d still runs", pid)
			}
		}
		return true, ""
	})
}

// TestTimeoutKillsRemoteGrandchildren: a timeout ends the whole remote
// process tree, checked by pid on the server's side.
func TestTimeoutKillsRemoteGrandchildren(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	m := metrics.New()
	cfg := f.config(t)
	cfg.Metrics, cfg.Profile = m, "lab"
	b := backend(t, cfg)
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	o := <-start(ctx, b, backends.Spec{JobID: "grandkids", Attempt: 1, Command: "trap '' TERM\n" + grandchildren, KillGrace: 500 * time.Millisecond}, &stdout, &stderr)
	if !errors.Is(o.err, context.DeadlineExceeded) {
		t.Fatalf("Run error %v, want deadline exceeded", o.err)
	}
	if o.res.Signal != "SIGKILL" {
		t.Errorf("signal %q, want SIGKILL (the job ignores TERM)", o.res.Signal)
	}
	awaitGone(t, pids(t, stdout.String()), 5*time.Second)
	if n := testutil.ToFloat64(m.SSHRemoteKills.WithLabelValues("lab", "SIGKILL")); n != 1 {
		t.Errorf("remote SIGKILLs %v, want 1", n)
	}
}

// TestWatchdogKillsWithoutWorker: when the worker cannot reach the host at
// the deadline, the remote watchdog ends the job on its own.
func TestWatchdogKillsWithoutWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, proxy := f.proxiedConfig(t)
	cfg.ReconnectTimeout, cfg.WatchdogMargin = 5*time.Second, time.Second
	b := backend(t, cfg)
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	done := start(ctx, b, backends.Spec{JobID: "watchdog", Attempt: 1, Command: grandchildren, KillGrace: time.Second}, &stdout, &stderr)
	stdout.WaitFor(t, "ready", 10*time.Second)
	ps := pids(t, stdout.String())
	proxy.Block()
	o := <-done
	if !errors.Is(o.err, context.DeadlineExceeded) {
		t.Fatalf("Run error %v, want deadline exceeded", o.err)
	}
	// Deadline 2s + grace 1s + margin 1s, rounded up: about 4s after launch.
	awaitGone(t, ps, 15*time.Second)
	data, err := os.ReadFile(filepath.Join(cfg.RunRoot, "watchdog-1", "killed"))
	if err != nil || strings.TrimSpace(string(data)) != "TERM watchdog" {
		t.Errorf("killed marker %q, %v; want TERM from the watchdog", data, err)
	}
}

// TestSessionsBounded: sshd allows 3 sessions per connection (one is the
// file-transfer session); 12 concurrent jobs on one backend with
// max_sessions 2 all run, none refused by the server.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := sshtest.NewKey(t, dir, "id", "")
	srv := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key}, MaxSessions: 3})
	m := metrics.New()
	b := backend(t, Config{Host: "127.0.0.1", Port: srv.Port, User: srv.User, IdentityFiles: []string{key.Path},
		KnownHosts: []string{srv.WriteKnownHosts(t)}, RunRoot: filepath.Join(dir, "runs"), MaxSessions: 2, Metrics: m, Profile: "lab"})
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Go(func() {
			var stdout testenv.Buffer
			res, err := b.Run(t.Context(), backends.Spec{JobID: fmt.Sprintf("many-%d", i), Attempt: 1, Command: fmt.Sprintf("sleep 0.2; echo %d", i)},
				backends.Output{Stdout: &stdout, Stderr: io.Discard})
			if err == nil && (res.ExitCode != 0 || stdout.String() != fmt.Sprintf("%d\n", i)) {
				err = fmt.Errorf("job %d: exit %d, stdout %q", i, res.ExitCode, stdout.String())
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := testutil.ToFloat64(m.SSHConnections.WithLabelValues("lab", "ok")); n != 1 {
		t.Errorf("connections %v, want 1 shared by every job", n)
	}
}

// TestKeepaliveFindsSilentLink: a link that goes silent without a reset
// (no error on the socket) is found by unanswered keepalives and
// re-dialled; the job's output still arrives whole.
func TestKeepaliveFindsSilentLink(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, proxy := f.proxiedConfig(t)
	m := metrics.New()
	cfg.Metrics, cfg.Profile = m, "lab"
	cfg.KeepaliveInterval, cfg.KeepaliveCountMax = 200*time.Millisecond, 2
	b := backend(t, cfg)
	var stdout, stderr testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := start(ctx, b, backends.Spec{JobID: "silent", Attempt: 1, Command: numbered(30)}, &stdout, &stderr)
	stdout.WaitFor(t, "\n5\n", 20*time.Second)
	if n := proxy.Freeze(); n == 0 {
		t.Fatal("no live connection to freeze")
	}
	mustBeNumbered(t, <-done, &stdout, &stderr, 30)
	if n := testutil.ToFloat64(m.SSHReconnects.WithLabelValues("lab")); n < 1 {
		t.Errorf("reconnects %v, want at least 1", n)
	}
}
