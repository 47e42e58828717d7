package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
)

// TestDiscoveryOnPath finds the plugin of a profile that sets no path as
// sandrun-backend-<profile> on PATH, and one that sets a bare name on
// PATH too. Not parallel: it sets PATH.
func TestDiscoveryOnPath(t *testing.T) {
	bin := t.TempDir()
	want := filepath.Join(bin, NamePrefix+"lx")
	if err := os.Symlink(localexec(), want); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	for _, cfg := range []Config{{Profile: "lx"}, {Profile: "other", Path: NamePrefix + "lx"}} {
		tb := setup(t, cfg, true)
		if got := tb.b.Path(); got != want {
			t.Errorf("%+v: Path() = %q, want %q", cfg, got, want)
		}
		var stdout strings.Builder
		res, err := tb.b.Run(t.Context(), backends.Spec{Command: "echo found"}, backends.Output{Stdout: &stdout})
		if err != nil || res.ExitCode != 0 || stdout.String() != "found\n" {
			t.Errorf("%+v: Run: exit %d, err %v, stdout %q", cfg, res.ExitCode, err, stdout.String())
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-exec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no path, no profile", Config{}, "path"},
		{"profile not on PATH", Config{Profile: "sandrun-test-no-such-plugin"}, "sandrun-backend-sandrun-test-no-such-plugin"},
		{"profile with a slash", Config{Profile: "a/b"}, "path"},
		{"name not on PATH", Config{Path: "sandrun-test-no-such-plugin"}, "path"},
		{"relative path", Config{Path: "./plugin"}, "path"},
		{"missing file", Config{Path: filepath.Join(dir, "missing")}, "path"},
		{"directory", Config{Path: dir}, "path"},
		{"not executable", Config{Path: notExec}, "path"},
		{"negative timeout", Config{Path: localexec(), Timeout: -1}, "timeout"},
		{"NUL in args", Config{Path: localexec(), Args: []string{"-shell", "\x00"}}, "args[1]"},
		{"bad env key", Config{Path: localexec(), Env: map[string]string{"A=B": secret}}, "env"},
		{"NUL in env value", Config{Path: localexec(), Env: map[string]string{"TOKEN": secret + "\x00"}}, "env"},
		{"protocol env", Config{Path: localexec(), Env: map[string]string{ProtocolEnv: "2"}}, ProtocolEnv},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %v, want one naming %q", err, tt.field)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows an env value", err)
			}
		})
	}
}

// TestPluginEnvironment checks what a plugin process inherits: a few
// variables of the worker's, Config.Env, and the protocol version. Not
// parallel: it sets a variable of the worker's.
func TestPluginEnvironment(t *testing.T) {
	const workerOnly = "SANDRUN_PLUGIN_TEST_WORKER_ONLY"
	t.Setenv(workerOnly, "leaked")
	envFile := filepath.Join(t.TempDir(), "env")
	tb := setup(t, Config{Path: testPlugin("env"), Args: []string{"-x"}, Env: map[string]string{"ENVFILE": envFile, "EXTRA": "a b"}}, true)
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := "\n" + string(data)
	for _, want := range []string{"\nEXTRA=a b\n", "\n" + ProtocolEnv + "=" + fmt.Sprint(Protocol) + "\n", "\nPATH=" + os.Getenv("PATH") + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("plugin environment lacks %q:%s", strings.TrimSpace(want), env)
		}
	}
	if strings.Contains(env, workerOnly) {
		t.Errorf("plugin environment has the worker's %s:%s", workerOnly, env)
	}
	for _, s := range tb.rand.sessions() { // The key comes on stdin, never in the environment.
		if strings.Contains(env, s.key) {
			t.Errorf("plugin environment has its session key:%s", env)
		}
	}
}
