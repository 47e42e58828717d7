package plugin

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/testenv"
)

// pluginDir holds the plugins the tests run: the reference plugin, built
// once, and the test plugins of plugins_test.go. TestMain sets it before
// any test runs, and removes it after; tests only read it.
var pluginDir string

// signerEnv makes the test binary the test plugins' signer: it reads a
// session key and a JSON line on its stdin, and writes the line signed.
// The key goes through stdin, as it must: arguments show in ps.
const signerEnv = "SANDRUN_PLUGIN_TEST_SIGNER"

func TestMain(m *testing.M) {
	if os.Getenv(signerEnv) == "1" {
		os.Exit(signer(os.Stdin, os.Stdout))
	}
	dir, err := os.MkdirTemp("", "sandrun-plugin-test-")
	if err == nil {
		err = setUp(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plugin tests:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	pluginDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// setUp builds the reference plugin into dir, without -race to keep it
// fast, and writes the test plugins there. Writing them before any test
// starts a process keeps clear of ETXTBSY (golang.org/issue/22315).
func setUp(dir string) error {
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "sandrun-backend-localexec"),
		"github.com/sandrun/sandrun/examples/plugin/sandrun-backend-localexec")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the reference plugin: %w\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	return writeTestPlugins(dir, self)
}

// signer signs one line for a test plugin (see signerEnv).
func signer(stdin io.Reader, stdout io.Writer) int {
	in := bufio.NewScanner(stdin)
	in.Buffer(nil, maxLine)
	if !in.Scan() {
		return 2
	}
	key := sessionKey(in.Text())
	if !in.Scan() {
		return 2
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", key.sign(in.Bytes())); err != nil {
		return 1
	}
	return 0
}

// localexec returns the reference plugin's path.
func localexec() string { return filepath.Join(pluginDir, "sandrun-backend-localexec") }

// testPlugin returns the path of the test plugin name.
func testPlugin(name string) string { return filepath.Join(pluginDir, "sandrun-backend-"+name) }

// bundle is what a test needs of one backend.
type bundle struct {
	b    *Backend
	logs *testenv.Buffer // The backend's log, text-formatted.
	rand *recordedRand   // The backend's ids and session keys.
}

// setup returns a backend built from cfg, logging to a buffer. Unless
// validate is false, it is validated.
func setup(t *testing.T, cfg Config, validate bool) bundle {
	t.Helper()
	logs := &testenv.Buffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rec := &recordedRand{}
	b.rand = rec
	if validate {
		if err := b.Validate(t.Context()); err != nil {
			t.Fatalf("Validate: %v\nlogs:\n%s", err, logs)
		}
	}
	return bundle{b: b, logs: logs, rand: rec}
}

// recordedRand reads crypto/rand and keeps what it read, so that tests
// know the ids and session keys of a backend.
type recordedRand struct {
	mu   sync.Mutex
	read []byte
}

func (r *recordedRand) Read(p []byte) (int, error) {
	n, err := rand.Read(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read = append(r.read, p[:n]...)
	return n, err
}

// session is what newConversation drew for one request: its id, without
// prefix, and its session key.
type session struct{ id, key string }

// sessions returns the sessions drawn so far, in order.
func (r *recordedRand) sessions() []session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []session
	for rest := r.read; len(rest) >= idBytes+keyBytes; rest = rest[idBytes+keyBytes:] {
		all = append(all, session{
			id:  hex.EncodeToString(rest[:idBytes]),
			key: hex.EncodeToString(rest[idBytes : idBytes+keyBytes]),
		})
	}
	return all
}

// secret is a job environment value that must never show in an error or
// a log line of the host.
const secret = "hunter2-sandrun-secret"

// secretSpec returns a spec that runs command with secret in its env.
func secretSpec(command string) backends.Spec {
	return backends.Spec{JobID: "job-1", Attempt: 1, Command: command, KillGrace: time.Second,
		Env: map[string]string{"TOKEN": secret}}
}

// assertErr checks that err wraps every one of targets, names the plugin
// and holds every one of texts, and that no secret leaked into it or the
// logs.
func (tb bundle) assertErr(t *testing.T, err error, targets []error, texts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one wrapping %v\nlogs:\n%s", targets, tb.logs)
	}
	t.Logf("error: %v", err)
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Errorf("error %q does not wrap %q", err, target)
		}
	}
	for _, text := range append(texts, tb.b.Path()) {
		if !strings.Contains(err.Error(), text) {
			t.Errorf("error %q does not say %q", err, text)
		}
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(tb.logs.String(), secret) {
		t.Errorf("a job env value leaked:\nerror: %v\nlogs:\n%s", err, tb.logs)
	}
	for _, s := range tb.rand.sessions() {
		if strings.Contains(err.Error(), s.key) || strings.Contains(tb.logs.String(), s.key) {
			t.Errorf("a session key leaked:\nerror: %v\nlogs:\n%s", err, tb.logs)
		}
	}
}
