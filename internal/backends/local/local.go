// Package local runs job commands as child processes of the worker, each
// in a process group of its own. It is Linux-only, and it is the only
// package that starts job commands with os/exec: backends that wrap a
// runtime's CLI (apptainer) run it through RunProcess.
//
// A job's command runs as `Shell -c Command`. What it sees:
//
//   - Environment: exactly Spec.Env on top of Config.BaseEnv, plus PATH
//     (DefaultPath) when neither sets one. Nothing is inherited from the
//     worker's own environment.
//   - Working directory: Spec.Dir, or the worker's own when Dir is empty.
//     A Dir that does not exist fails the run with ErrPermanent.
//   - Standard input: empty (/dev/null).
//
// How it ends (see Local.Run):
//
//   - When the Run context is done, the whole process group gets SIGTERM
//     (and SIGCONT, so that stopped members can act on it), and SIGKILL
//     once Spec.Grace() has passed.
//   - When the main process ends, for whatever reason, every process left
//     in its group is killed with SIGKILL before Run returns: a job never
//     leaves background processes behind. Output they had not written yet
//     is lost.
//   - A process that leaves the group (setsid, setpgid) is out of reach.
//     If it keeps the job's output open, Run reads on for outputDrain after
//     the main process ends, then stops reading and returns.
package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandrun/sandrun/internal/backends"
)

const (
	// DefaultShell runs job commands when Config.Shell is empty.
	DefaultShell = "/bin/sh"
	// DefaultPath is a job's PATH when neither the job nor Config.BaseEnv
	// sets one.
	DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// Config configures a Local backend. The zero value is usable.
type Config struct {
	// Shell is the absolute path of the shell that runs `Shell -c Command`.
	// Empty means DefaultShell.
	Shell string
	// BaseEnv is added to every job's environment, under the job's own Env:
	// on a conflict the job wins.
	BaseEnv map[string]string
	// User runs job commands as another user: a name, or UID:GID. It
	// needs a worker running as root, and keeps commands away from what
	// only the worker's user may read (its credentials, the secrets key).
	// Empty: the worker's own user.
	User string
}

// Local is the local process backend. It is immutable after New and safe
// for concurrent use.
type Local struct {
	shell   string
	baseEnv map[string]string
	cred    *syscall.Credential // nil: the worker's own user
}

// New fills cfg's defaults into a copy and checks what can be checked
// without touching the system; Validate checks the rest.
func New(cfg Config) (*Local, error) {
	shell := cfg.Shell
	if shell == "" {
		shell = DefaultShell
	}
	if !filepath.IsAbs(shell) {
		return nil, fmt.Errorf("local: shell %q: must be an absolute path", shell)
	}
	cred, err := credential(cfg.User)
	if err != nil {
		return nil, err
	}
	for k, v := range cfg.BaseEnv {
		if err := checkEnv(k, v); err != nil {
			return nil, fmt.Errorf("local: base_env: %w", err)
		}
	}
	return &Local{shell: filepath.Clean(shell), baseEnv: maps.Clone(cfg.BaseEnv), cred: cred}, nil
}

// Kind returns "local".
func (l *Local) Kind() string { return "local" }

// Validate checks that the shell is an executable regular file.
func (l *Local) Validate(context.Context) error {
	fi, err := os.Stat(l.shell)
	if err != nil {
		return fmt.Errorf("local: shell %q: %w", l.shell, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("local: shell %q: not a regular file", l.shell)
	}
	if err := unix.Access(l.shell, unix.X_OK); err != nil {
		return fmt.Errorf("local: shell %q: not executable: %w", l.shell, err)
	}
	return nil
}

// Capabilities reports ResourceUsage: Result carries the CPU time and peak
// RSS of the main process and of the descendants it waited for.
func (l *Local) Capabilities() backends.Capabilities {
	return backends.Capabilities{ResourceUsage: true, Shell: l.shell}
}

// environ returns a job's environment as KEY=value lines, sorted by key.
func (l *Local) environ(jobEnv map[string]string) ([]string, error) {
	env := maps.Clone(l.baseEnv)
	if env == nil {
		env = make(map[string]string, len(jobEnv)+1)
	}
	for k, v := range jobEnv {
		if err := checkEnv(k, v); err != nil {
			return nil, fmt.Errorf("local: env: %w: %w", err, backends.ErrPermanent)
		}
		env[k] = v
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = DefaultPath
	}
	lines := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		lines = append(lines, k+"="+env[k])
	}
	return lines, nil
}

var errBadEnv = errors.New("a key must be non-empty without '=' or NUL, a value without NUL")

// checkEnv rejects what execve cannot carry or would misread.
func checkEnv(k, v string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
		return fmt.Errorf("%q: %w", k, errBadEnv)
	}
	return nil
}

var _ backends.Backend = (*Local)(nil)
