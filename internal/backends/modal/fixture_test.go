package modal

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
)

// env is a fake worker environment.
type env map[string]string

func (e env) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }

// fakeConfig is a direct-mode profile for f: its token in the (fake)
// environment, its URL as server_url, no ~/.modal.toml.
func fakeConfig(t *testing.T, f *modaltest.Fake) Config {
	t.Helper()
	dir := t.TempDir()
	return Config{
		Mode:       ModeDirect,
		ServerURL:  f.URL,
		ConfigPath: filepath.Join(dir, "absent.toml"),
		Image:      "alpine:3.21",
		StateDir:   dir,
		LookupEnv:  env{envTokenID: f.TokenID, envTokenSecret: f.TokenSecret}.lookup,
	}
}

// newBackend returns a validated backend for cfg, closed when t ends.
func newBackend(t *testing.T, cfg Config) *Backend {
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

// pids returns the numbers on "pid N" lines of out.
func pids(t *testing.T, out string) []int {
	t.Helper()
	var ps []int
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "pid "); ok {
			p, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("bad pid line %q", line)
			}
			ps = append(ps, p)
		}
	}
	return ps
}

// assertGone waits a little for each pid to be gone from the host.
func assertGone(t *testing.T, ps []int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range ps {
		for !backendtest.HostProcessGone(t, p) {
			if time.Now().After(deadline) {
				t.Errorf("process %d still runs", p)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
