package natsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A second server on a data directory a running one holds is refused,
// naming the directory; once the first has shut down, the directory is
// free again.
func TestDataDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := StartEmbedded(EmbeddedConfig{Dir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Another process holds it (its pid in the lock file): refused at once.
	if err := os.WriteFile(filepath.Join(dir, ".sandrun.lock"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := StartEmbedded(EmbeddedConfig{Dir: dir, Port: -1}); !errors.Is(err, ErrDataDirInUse) || !strings.Contains(err.Error(), dir) {
		if s != nil {
			s.Shutdown()
		}
		t.Fatalf("a second server on %s: %v, want ErrDataDirInUse naming it", dir, err)
	}
	// This process's own server, just shut down: its successor waits for
	// the lock instead of failing (in-process restarts).
	if err := os.WriteFile(filepath.Join(dir, ".sandrun.lock"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first.Shutdown()
	first.WaitForShutdown()
	again, err := StartEmbedded(EmbeddedConfig{Dir: dir, Port: -1})
	if err != nil {
		t.Fatalf("after the first server stopped: %v", err)
	}
	again.Shutdown()
	again.WaitForShutdown()
}
