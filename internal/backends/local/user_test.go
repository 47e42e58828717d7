package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/testenv"
)

// A profile with a user runs commands as that user, with its group only:
// files only the worker's user may read (its credentials, its secrets
// key) are out of the command's reach.
func TestRunsAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "switching users needs root (CI runs as root)")
	}
	t.Parallel()
	private := filepath.Join(t.TempDir(), "admin.creds")
	if err := os.WriteFile(private, []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{User: "65534:65534"})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	res, err := l.Run(context.Background(), backends.Spec{JobID: "u", Command: "id -u; id -g; id -G; cat " + private},
		backends.Output{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(out.String())
	if len(lines) < 3 || lines[0] != "65534" || lines[1] != "65534" || lines[2] != "65534" {
		t.Fatalf("ran as %q, want uid, gid and groups 65534", out.String())
	}
	if res.ExitCode == 0 || strings.Contains(out.String(), "SECRET") || !strings.Contains(errb.String(), "Permission denied") {
		t.Fatalf("the command read a file only root may read: exit %d, %q %q", res.ExitCode, out.String(), errb.String())
	}
	for _, bad := range []string{"nobody-such-user-x", "12:ab", "1:"} {
		if _, err := New(Config{User: bad}); err == nil {
			t.Errorf("user %q accepted", bad)
		}
	}
}
