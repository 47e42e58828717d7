package ssh

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that closed backends leave no goroutine behind: the
// connection's watchers, keepalives and file-transfer client end with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
