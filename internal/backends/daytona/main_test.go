package daytona

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
)

// TestMain checks that closed backends and fakes leave no goroutine
// behind: log streams, polls and executes end with their run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeConfig returns a profile that reaches f, its key read from a
// LookupEnv of its own.
func fakeConfig(f *daytonatest.Fake) Config {
	return Config{
		APIURL:       f.URL,
		PollInterval: 200 * time.Millisecond,
		LookupEnv: func(k string) (string, bool) {
			if k == DefaultAPIKeyEnv {
				return f.APIKey, true
			}
			return "", false
		},
	}
}

// newBackend returns a backend for cfg, closed when the test ends.
func newBackend(t *testing.T, cfg Config) *Backend {
	t.Helper()
	return sandboxtest.NewBackend(t, New, cfg)
}
