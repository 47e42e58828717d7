package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
)

// underTestEnv names a plugin for TestConformance instead of the
// reference plugin: a plugin author runs the suite on their own plugin with
//
//	SANDRUN_PLUGIN_UNDER_TEST=/path/to/plugin go test ./internal/backends/plugin -run TestConformance
//
// A plugin that announces resource_limits is checked with a small memory
// limit, set through its own arguments (limitArgsEnv, split on spaces)
// and stated in bytes (limitBytesEnv), such as
//
//	SANDRUN_PLUGIN_LIMIT_ARGS="--memory-mib 64" SANDRUN_PLUGIN_LIMIT_BYTES=67108864
const (
	underTestEnv  = "SANDRUN_PLUGIN_UNDER_TEST"
	limitArgsEnv  = "SANDRUN_PLUGIN_LIMIT_ARGS"
	limitBytesEnv = "SANDRUN_PLUGIN_LIMIT_BYTES"
)

// TestConformance runs the backend conformance suite on the reference
// plugin, whose jobs run on this host, so the suite checks that their
// processes are gone too; or on the plugin SANDRUN_PLUGIN_UNDER_TEST
// names, whose jobs may run elsewhere.
func TestConformance(t *testing.T) {
	// The reference plugin announces resource usage only: sessions,
	// workspaces and containers are refused for it.
	path, opts := localexec(), backendtest.Options{ProcessGone: backendtest.HostProcessGone,
		Refuses: append([]string{"session", "workspace"}, backendtest.ContainerRefusals()...)}
	if p := os.Getenv(underTestEnv); p != "" {
		// A plugin's hello says what it does; the protocol carries no
		// workspace or container options, so those are always refused.
		path, opts = p, backendtest.Options{Refuses: append([]string{"workspace"}, backendtest.ContainerRefusals()...)}
		if !setup(t, Config{Path: p}, true).b.Capabilities().PersistentSessions {
			opts.Refuses = append(opts.Refuses, "session")
		}
		opts.Limited = limitedUnderTest(p)
	}
	backendtest.Run(t, func(t *testing.T) backends.Backend {
		return setup(t, Config{Path: path}, true).b
	}, opts)
}

// limitedUnderTest is Options.Limited for the plugin at path: started
// with the arguments limitArgsEnv names, it holds jobs to limitBytesEnv
// bytes of memory. Without them the sub-test fails: the plugin claims
// limits the suite has no way to check.
func limitedUnderTest(path string) func(t *testing.T) (backends.Backend, int64, string) {
	return func(t *testing.T) (backends.Backend, int64, string) {
		args, bytes := os.Getenv(limitArgsEnv), os.Getenv(limitBytesEnv)
		limit, err := strconv.ParseInt(bytes, 10, 64)
		if args == "" || err != nil || limit <= 0 {
			t.Fatalf("the plugin announces resource_limits: set %s to the arguments that give it a small memory limit, and %s to that limit in bytes (now %q, %q)",
				limitArgsEnv, limitBytesEnv, args, bytes)
		}
		return setup(t, Config{Path: path, Args: strings.Fields(args)}, true).b, limit, ""
	}
}

func TestKindAndCapabilities(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: localexec()}, false)
	if got := tb.b.Kind(); got != "plugin" {
		t.Errorf("Kind() = %q, want plugin", got)
	}
	if got := tb.b.Capabilities(); !reflect.DeepEqual(got, backends.Capabilities{}) {
		t.Errorf("Capabilities() before Validate = %+v, want none", got)
	}
	if err := tb.b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got, want := tb.b.Capabilities(), (backends.Capabilities{ResourceUsage: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("Capabilities() = %+v, want %+v from the hello", got, want)
	}
}

func TestPermanentSpecErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		spec  backends.Spec
		field string
	}{
		// The plugin finds these.
		{"missing cwd", backends.Spec{Command: "exit 0", Dir: filepath.Join(file, "missing")}, "cwd"},
		{"bad env key", backends.Spec{Command: "exit 0", Env: map[string]string{"A=B": secret}}, "env"},
		// The host finds these: JSON cannot carry them.
		{"invalid UTF-8 in env", backends.Spec{Command: "exit 0", Env: map[string]string{"TOKEN": secret + "\xff"}}, "env"},
		{"invalid UTF-8 in command", backends.Spec{Command: "echo \xff"}, "command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, Config{Path: localexec()}, false)
			res, err := tb.b.Run(t.Context(), tt.spec, backends.Output{})
			tb.assertErr(t, err, []error{backends.ErrPermanent}, tt.field)
			if res.ExitCode != -1 {
				t.Errorf("exit code %d, want -1 for a run that never started", res.ExitCode)
			}
		})
	}
}

// failingWriter fails every write with errSink.
type failingWriter struct{}

var errSink = errors.New("sink failed")

func (failingWriter) Write([]byte) (int, error) { return 0, errSink }

func TestFailingWriterDoesNotStopJob(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: localexec()}, false)
	var stderr strings.Builder
	res, err := tb.b.Run(t.Context(), backends.Spec{Command: "echo one; head -c 1000000 /dev/zero; echo err >&2; exit 3"},
		backends.Output{Stdout: failingWriter{}, Stderr: &stderr})
	if !errors.Is(err, errSink) || !strings.Contains(err.Error(), "stdout") {
		t.Errorf("error %v, want one wrapping the stdout write error", err)
	}
	if res.ExitCode != 3 || stderr.String() != "err\n" {
		t.Errorf("exit %d, stderr %q; want 3, %q", res.ExitCode, stderr.String(), "err\n")
	}
}
