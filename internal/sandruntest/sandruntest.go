// Package sandruntest starts the real parts sandrun's tests run against:
// an embedded JetStream server (file storage in a temp dir), the layout,
// and workers with the local backend. It is imported by tests only.
package sandruntest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/policy"
	"github.com/sandrun/sandrun/internal/secrets"
	"github.com/sandrun/sandrun/internal/worker"
)

// Server starts an embedded JetStream server on a free loopback port with
// file storage in dir (a fresh temp dir when empty), and stops it at the
// end of the test.
func Server(t testing.TB, dir string) *server.Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: dir, Port: -1, MaxPayload: 16 << 20})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

// SecureServer starts an embedded JetStream server as `sandrun dev` does:
// credentials required (fresh material in a temp dir) and the store
// encrypted at rest.
func SecureServer(t testing.TB) (*server.Server, *auth.Material) {
	t.Helper()
	dir := t.TempDir()
	m, err := auth.Ensure(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := auth.EncryptionKey(filepath.Join(dir, "jetstream.key"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: filepath.Join(dir, "js"), Port: -1, MaxPayload: 16 << 20, Auth: m, EncryptionKey: key})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s, m
}

// StoreAs connects to url with the credentials in creds and ensures the
// layout cfg describes.
func StoreAs(t testing.TB, url, creds string, cfg jobs.LayoutConfig) *jobs.Store {
	t.Helper()
	nc, js := ConnectAs(t, url, creds)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := jobs.EnsureLayout(ctx, js, nc.ConnectedServerVersion(), cfg)
	if err != nil {
		t.Fatalf("layout as %s: %v", filepath.Base(creds), err)
	}
	return st
}

// Connect returns a daemon-style connection to url, closed at cleanup.
func Connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return ConnectAs(t, url, "")
}

// ConnectAs is Connect with credentials (none when creds is empty).
func ConnectAs(t testing.TB, url, creds string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, err := natsutil.Connect(ctx, natsutil.ConnConfig{URL: url, CredsFile: creds, Name: t.Name(), Daemon: true}, Logger(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc, js
}

// Cluster starts n embedded servers as one JetStream cluster (data in a
// temp dir) and stops them at the end of the test.
func Cluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	servers, err := natsutil.StartCluster(ctx, t.TempDir(), n, natsutil.EmbeddedConfig{})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	return servers
}

// Store connects to url and ensures the layout.
func Store(t testing.TB, url string) *jobs.Store {
	t.Helper()
	st, err := StoreWith(t, url, jobs.LayoutConfig{})
	if err != nil {
		t.Fatalf("layout: %v", err)
	}
	return st
}

// StoreWith connects to url and ensures the layout cfg describes (the
// error is the caller's to judge).
func StoreWith(t testing.TB, url string, cfg jobs.LayoutConfig) (*jobs.Store, error) {
	t.Helper()
	nc, js := Connect(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return jobs.EnsureLayout(ctx, js, nc.ConnectedServerVersion(), cfg)
}

// Logger logs to the test log when SANDRUN_TEST_LOG is set, else nowhere.
func Logger(t testing.TB) *slog.Logger {
	if os.Getenv("SANDRUN_TEST_LOG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// Worker is a running worker under test.
type Worker struct {
	*worker.Worker
	Metrics *metrics.Metrics
	cancel  context.CancelFunc
	done    chan struct{}
}

// Stop drains the worker and waits for it to return.
func (w *Worker) Stop() {
	w.cancel()
	<-w.done
}

// FastConfig is a worker config with short timings for tests.
func FastConfig() worker.Config {
	return worker.Config{
		Slots:        4,
		LeaseTTL:     3 * time.Second,
		ElectionTTL:  2 * time.Second,
		ClaimWindow:  10 * time.Second,
		PullWait:     time.Second,
		KillGrace:    time.Second,
		ReaperScan:   2 * time.Second,
		DrainTimeout: 5 * time.Second,
	}
}

// StartWorker runs a worker with the local backend (profile "local") and
// the default policy until the test ends.
func StartWorker(t testing.TB, st *jobs.Store, cfg worker.Config) *Worker {
	t.Helper()
	return StartWorkerWith(t, st, cfg, LocalBackends(t))
}

// LocalBackends is the backend profiles of StartWorker: the local backend
// as profile "local".
func LocalBackends(t testing.TB) *backends.Registry {
	t.Helper()
	reg := backends.NewRegistry()
	lb, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("local", lb); err != nil {
		t.Fatal(err)
	}
	return reg
}

// StartWorkerWith runs a worker with the given backend profiles.
func StartWorkerWith(t testing.TB, st *jobs.Store, cfg worker.Config, reg *backends.Registry) *Worker {
	t.Helper()
	return StartWorkerDeps(t, st, cfg, reg, nil)
}

// StartWorkerDeps runs a worker with the given backend profiles, its
// dependencies adjusted by edit (forward_env, a clock) when it is not nil.
func StartWorkerDeps(t testing.TB, st *jobs.Store, cfg worker.Config, reg *backends.Registry, edit func(*worker.Deps)) *Worker {
	t.Helper()
	pol, err := policy.New(policy.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	deps := worker.Deps{Store: st, Backends: reg, Policy: pol, Metrics: m, Logger: Logger(t), Secrets: SecretsKey(t)}
	if edit != nil {
		edit(&deps)
	}
	w, err := worker.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tw := &Worker{Worker: w, Metrics: m, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(tw.done)
		// A test that ends while the worker is still starting cancels
		// its start-up: that is not a failure.
		if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("worker: %v", err)
		}
	}()
	t.Cleanup(tw.Stop)
	WaitSealKey(t, st)
	return tw
}

// WaitSealKey waits until a worker has published the secrets key that
// clients seal secret_env values to (at the start of its Run).
func WaitSealKey(t testing.TB, st *jobs.Store) {
	t.Helper()
	Eventually(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := st.State.Get(ctx, jobs.SealKey); err != nil {
			return false, fmt.Sprintf("no secrets key published: %v", err)
		}
		return true, ""
	})
}

// Client returns a client over st.
func Client(st *jobs.Store) *client.Client { return client.New(st) }

// WaitResult waits up to d for job id's result.
func WaitResult(t testing.TB, c *client.Client, id string, d time.Duration) jobs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := c.Wait(ctx, id)
	if err != nil {
		st, _ := c.Status(context.Background(), id)
		t.Fatalf("wait for %s: %v (state %s, last error %q)", id, err, st.State(), st.Run.LastError)
	}
	return r
}

// Ctx returns a context cancelled at the end of the test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// BuildCLI builds cmd/sandrun into a temp dir for tests that run workers
// or schedulers as separate processes (kill -9, SIGSTOP). Call it from
// TestMain; remove the returned dir when done.
func BuildCLI(race bool) (bin, dir string, err error) {
	dir, err = os.MkdirTemp("", "sandrun-test-bin")
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "sandrun")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/sandrun/sandrun/cmd/sandrun")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", fmt.Errorf("build sandrun: %w", err)
	}
	return bin, dir, nil
}

// LeakOptions are the goroutines goleak may ignore in packages that run an
// embedded server: the server's store and the client's flusher finish
// shortly after Shutdown/Close, and nats.go v1.55 can start its
// reconnect watcher with a nil channel when a connection closes during an
// async publish, where it then blocks forever (library behaviour).
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).syncBlocks"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats.go.(*Conn).flusher"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
	}
}

// MainWithCLI is TestMain for packages whose tests run the CLI as separate
// processes: it builds the CLI into *bin, runs the tests, removes the
// build, and checks for leaked goroutines. It returns the exit code.
func MainWithCLI(m *testing.M, race bool, bin *string) int {
	// Servers started by the tests save contexts and credentials for
	// the local CLI: in a directory of the tests', never the user's.
	cfgDir, err := os.MkdirTemp("", "sandrun-test-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(cfgDir) }()
	_ = os.Setenv("XDG_CONFIG_HOME", cfgDir)
	path, dir, err := BuildCLI(race)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*bin = path
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(LeakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

// Queued returns the specs of the jobs waiting in JOBS (dispatched and not
// yet claimed: no record exists for them until a worker claims them), in
// stream order.
func Queued(t testing.TB, st *jobs.Store) []jobs.Spec {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := st.JS.Stream(ctx, jobs.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []jobs.Spec
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, ok := jobs.ParseJobSubject(m.Subject); !ok {
			continue // a delayed retry's schedule
		}
		spec, err := jobs.DecodeJSON(m.Data)
		if err != nil {
			t.Fatalf("queued message %d: %v", seq, err)
		}
		out = append(out, spec)
	}
	return out
}

var secretsKey struct {
	sync.Once
	key *secrets.Key
	err error
}

// SecretsKey is the workers' secrets key of every test worker in this
// process (workers of one deployment must share theirs).
func SecretsKey(t testing.TB) *secrets.Key {
	t.Helper()
	secretsKey.Do(func() {
		seed, err := secrets.NewKeySeed()
		if err != nil {
			secretsKey.err = err
			return
		}
		f, err := os.CreateTemp("", "sandrun-test-secrets-*.nk")
		if err != nil {
			secretsKey.err = err
			return
		}
		defer func() { _ = os.Remove(f.Name()) }()
		_, _ = f.Write(seed)
		_ = f.Close()
		secretsKey.key, secretsKey.err = secrets.LoadKey(f.Name())
	})
	if secretsKey.err != nil {
		t.Fatal(secretsKey.err)
	}
	return secretsKey.key
}

// PollInterval is how often Eventually and Poll look at their condition.
const PollInterval = 20 * time.Millisecond

// Poll looks at cond at once, then every PollInterval, until it holds or
// timeout has passed; it returns cond's last answer. It does not fail a
// test: it is for goroutines, and for callers that judge a timeout
// themselves. cond says why it does not hold yet.
func Poll(timeout time.Duration, cond func() (ok bool, why string)) (bool, string) {
	return PollCtx(context.Background(), timeout, cond)
}

// PollCtx is Poll that also gives up when ctx ends.
func PollCtx(ctx context.Context, timeout time.Duration, cond func() (ok bool, why string)) (bool, string) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return true, why
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		case <-ctx.Done():
			return false, fmt.Sprintf("%s (%v)", why, ctx.Err())
		}
	}
}

// Eventually waits until cond holds, failing the test with cond's last
// reason when timeout passes first. It is the one way tests wait for a
// condition: no test sleeps a fixed time hoping something happened.
func Eventually(t testing.TB, timeout time.Duration, cond func() (ok bool, why string)) {
	t.Helper()
	if ok, why := Poll(timeout, cond); !ok {
		t.Fatalf("not within %s: %s", timeout, why)
	}
}

// Handled tallies the dispatch messages workers are done with, by job ID:
// set its Add as worker.Deps.Handled, then wait on it.
type Handled struct {
	mu sync.Mutex
	n  map[string]int
}

// Add counts one message of job id handled.
func (h *Handled) Add(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[id]++
}

// Count is the number of messages of job id handled so far.
func (h *Handled) Count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[id]
}

// Wait waits until n messages of job id have been handled: everything the
// worker does for them (commit, release, ack, logs) is then done.
func (h *Handled) Wait(t testing.TB, id string, n int, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() (bool, string) {
		got := h.Count(id)
		return got >= n, fmt.Sprintf("%d of %d messages of job %s handled", got, n, id)
	})
}
