package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForwardSources: forward_env reads the worker's variables and files
// when a job starts, names the field of every refusal, and never puts a
// value in an error.
func TestForwardSources(t *testing.T) {
	t.Setenv("SANDRUN_TEST_FORWARD", "from-env-value")
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte("from-file-value\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxForwardFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	f := Forward{"A": "env:SANDRUN_TEST_FORWARD", "B": "file:" + file, "C": "env:SANDRUN_TEST_UNSET_X", "D": "file:" + big}
	if err := f.Validate("backends.p.forward_env"); err != nil {
		t.Fatal(err)
	}
	w := &Worker{deps: Deps{Forward: map[string]Forward{"p": f}}}
	env := map[string]string{}
	values, err := w.forwardEnv("p", []string{"A", "B"}, env)
	if err != nil || env["A"] != "from-env-value" || env["B"] != "from-file-value" || len(values) != 2 {
		t.Fatalf("forwardEnv: %v %v %v", env, values, err)
	}
	for name, want := range map[string]string{"C": "SANDRUN_TEST_UNSET_X is not set", "D": "limit", "E": "does not forward it"} {
		_, err := w.forwardEnv("p", []string{name}, map[string]string{})
		if err == nil || !strings.Contains(err.Error(), "forward_env."+name) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming forward_env.%s: %s", name, err, name, want)
		}
	}
	for _, bad := range []Forward{{"1X": "env:A"}, {"X": "A"}, {"X": "file:relative"}, {"X": "env:not a name"}} {
		if err := bad.Validate("backends.p.forward_env"); err == nil || !strings.Contains(err.Error(), "backends.p.forward_env.") {
			t.Errorf("%v: %v, want an error naming the field", bad, err)
		}
	}
}
