// Package testenv holds what tests share about their environment: a
// missing service or program fails a test under CI (CI=true, where
// scripts/test.sh installs everything) and skips it elsewhere, and a
// buffer that collects a process's output safely.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// InCI reports whether the tests run under CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing ends a test whose service or program is missing: it fails under
// CI, where a green run that tested nothing would be a defect, and skips
// elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (required under CI=true; scripts/test.sh installs it)", msg)
	}
	t.Skip(msg)
}

// Buffer is a bytes.Buffer safe for concurrent writes and reads, for a
// process's or a logger's output.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WaitFor waits until the buffer holds s, or fails the test.
func (b *Buffer) WaitFor(t testing.TB, s string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output within %s; output so far %q", s, within, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
