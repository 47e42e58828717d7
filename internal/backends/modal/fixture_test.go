package modal

import (
	"path/filepath"
	"testing"

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
