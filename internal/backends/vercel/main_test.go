package vercel

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// TestMain checks that closed backends and fakes leave no goroutine
// behind: log streams, waits and kills end with their run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeConfig returns a profile that reaches f with its access token,
// read from a LookupEnv of its own.
func fakeConfig(f *verceltest.Fake) Config {
	return Config{
		APIURL:    f.URL,
		TeamID:    f.TeamID,
		ProjectID: f.ProjectID,
		LookupEnv: envOf(map[string]string{DefaultTokenEnv: f.Token}),
	}
}

// envOf returns a LookupEnv that reads env.
func envOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// newBackend returns a backend for cfg, closed when the test ends.
func newBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	return sandboxtest.NewBackend(t, New, cfg)
}
