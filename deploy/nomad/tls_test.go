package nomad_test

import (
	"os"
	"path/filepath"
	"testing"
)

// renderSecrets renders a task's templates whose destination is under
// secrets/ into dir (standing in for NOMAD_SECRETS_DIR), so that a config
// naming those files can be loaded for real.
func renderSecrets(t *testing.T, ts []tmpl, fx fixture, dir string) {
	t.Helper()
	for _, tp := range ts {
		rel, ok := cutPrefix(tp.destination, "secrets/")
		if !ok || filepath.Ext(rel) != ".pem" {
			continue
		}
		out, err := render(tp, fx)
		if err != nil {
			t.Fatalf("render %s: %v", tp.destination, err)
		}
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return s, false
}
