package modal

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that closed backends and stopped fakes leave no
// goroutine behind (SDK connections, streams, waiters, process readers).
// Run as the orphan test's helper process, it is a worker instead.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	goleak.VerifyTestMain(m)
}
