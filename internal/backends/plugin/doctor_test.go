package plugin

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// What `sandrun doctor` asks of the backend.
var _ backends.Describer = (*Backend)(nil)

// TestDescribe: Describe names the plugin executable and, once Validate
// has had its hello, the name, version, protocol and capabilities the
// plugin announced; it starts no plugin, and never shows the plugin's
// arguments or environment.
func TestDescribe(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: localexec(), Env: map[string]string{"API_TOKEN": secret}}, false)
	got, err := tb.b.Describe(t.Context())
	if want := fmt.Sprintf("plugin %s: no hello yet (not validated); host protocol %d, timeout 10s", localexec(), Protocol); err != nil || got != want {
		t.Errorf("Describe before Validate: %q, %v; want %q", got, err, want)
	}
	if sessions := tb.rand.sessions(); len(sessions) != 0 {
		t.Errorf("Describe started the plugin: %d sessions drawn", len(sessions))
	}
	if err := tb.b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	got, err = tb.b.Describe(t.Context())
	if want := fmt.Sprintf(`plugin %s: "localexec" "1.0.0", protocol 2, capabilities resource_usage; timeout 10s`, localexec()); err != nil || got != want {
		t.Errorf("Describe: %q, %v; want %q", got, err, want)
	}
	if n := len(tb.rand.sessions()); n != 1 {
		t.Errorf("%d plugin sessions; want only Validate's", n)
	}

	// A test plugin that takes any argument, and announces no version
	// and no capability.
	tb = setup(t, Config{Path: testPlugin("env"), Args: []string{"--token=" + secret}, Timeout: 30 * time.Second,
		Env: map[string]string{"ENVFILE": filepath.Join(t.TempDir(), "env"), "API_TOKEN": secret}}, true)
	got, err = tb.b.Describe(t.Context())
	if want := fmt.Sprintf(`plugin %s: "test", protocol 2, capabilities none; timeout 30s`, testPlugin("env")); err != nil || got != want {
		t.Errorf("Describe: %q, %v; want %q", got, err, want)
	}
	if strings.Contains(got, secret) || strings.Contains(got, "API_TOKEN") {
		t.Errorf("Describe shows the plugin's arguments or environment: %q", got)
	}
}
