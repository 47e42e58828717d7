// Package local runs job commands as child processes of the worker, each
// in a process group of its own and, where the worker can make one, in a
// cgroup v2 of its own (Config.Cgroup). It is Linux-only, and it is the only
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
// How it ends (see Local.Run). The job's processes are its process group
// and, with a cgroup, every process in that cgroup: a process that leaves
// the group (setsid, setpgid, a double fork) stays in the cgroup, which it
// was born in (CLONE_INTO_CGROUP) and cannot leave without write access to
// the cgroup tree.
//
//   - When the Run context is done, the job's processes get SIGTERM (and
//     SIGCONT, so that stopped members can act on it), and SIGKILL once
//     Spec.Grace() has passed (cgroup.kill, which also reaches processes
//     forked meanwhile).
//   - When the main process ends, for whatever reason, every process the
//     job left behind is killed with SIGKILL before Run returns: a job
//     never leaves background processes behind. Output they had not
//     written yet is lost. Run then removes the job's cgroup.
//   - Without a cgroup, a process that leaves the group is out of reach.
//     If it keeps the job's output open, Run reads on for outputDrain after
//     the main process ends, then stops reading and returns.
package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	// Cgroup says whether each attempt runs in a cgroup v2 of its own:
	// CgroupAuto (the default, when empty), CgroupOff or CgroupRequired.
	// Where the worker cannot make cgroups (cgroup v1 only, a read-only
	// or undelegated tree, a kernel before 5.14), auto falls back to the
	// process group alone and logs so once; required fails Validate.
	Cgroup string
	// CgroupParent is the cgroup v2 directory that attempts' cgroups are
	// made in (it is made if missing). Empty: "sandrun" under the
	// worker's own cgroup.
	CgroupParent string
	// WorkspaceRoot holds the profile's workspaces, a directory each
	// (made on first use, owned by User). Empty: sandrun/workspaces under
	// $XDG_DATA_HOME, else ~/.local/share.
	WorkspaceRoot string
	// Logger receives the backend's own warnings; nil discards them.
	Logger *slog.Logger
}

// Local is the local process backend. It is safe for concurrent use, and
// immutable after New but for what its first Validate (or Run) finds of
// the host's cgroups.
type Local struct {
	shell   string
	baseEnv map[string]string
	cred    *syscall.Credential // nil: the worker's own user
	cg      *cgroups
	wsRoot  string // workspaces, a directory each
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
	mode := cmp.Or(cfg.Cgroup, CgroupAuto)
	switch {
	case mode != CgroupAuto && mode != CgroupOff && mode != CgroupRequired:
		return nil, fmt.Errorf("local: cgroup %q: want %s, %s or %s", cfg.Cgroup, CgroupAuto, CgroupOff, CgroupRequired)
	case cfg.CgroupParent != "" && !filepath.IsAbs(cfg.CgroupParent):
		return nil, fmt.Errorf("local: cgroup_parent %q: must be an absolute path", cfg.CgroupParent)
	case cfg.CgroupParent != "" && mode == CgroupOff:
		return nil, fmt.Errorf("local: cgroup_parent %q: set while cgroup is %s", cfg.CgroupParent, CgroupOff)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	shell = filepath.Clean(shell)
	cg := &cgroups{mode: mode, shell: shell, log: log}
	if cfg.CgroupParent != "" {
		cg.parent = filepath.Clean(cfg.CgroupParent)
	}
	root := cfg.WorkspaceRoot
	if root == "" {
		root = defaultWorkspaceRoot(cred != nil)
	} else if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("local: workspace_root %q: must be an absolute path", root)
	}
	return &Local{shell: shell, baseEnv: maps.Clone(cfg.BaseEnv), cred: cred, cg: cg, wsRoot: filepath.Clean(root)}, nil
}

// DefaultSharedWorkspaceRoot holds the workspaces of a profile whose
// commands run as another user: a root worker's home is not theirs to
// traverse.
const DefaultSharedWorkspaceRoot = "/var/lib/sandrun/workspaces"

// defaultWorkspaceRoot is sandrun/workspaces under the worker's data
// directory ($XDG_DATA_HOME, else ~/.local/share), or
// DefaultSharedWorkspaceRoot for a profile with a user of its own.
func defaultWorkspaceRoot(otherUser bool) string {
	if otherUser {
		return DefaultSharedWorkspaceRoot
	}
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "sandrun", "workspaces")
}

// Kind returns "local".
func (l *Local) Kind() string { return "local" }

// Validate checks that the shell is an executable regular file and, the
// first time, what the host allows of cgroups (see Config.Cgroup): with
// cgroup required, it fails where jobs cannot run in cgroups of their own.
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
	if _, err := l.cg.ready(); err != nil && l.cg.mode == CgroupRequired {
		return fmt.Errorf("%w (cgroup is %s)", err, CgroupRequired)
	}
	return nil
}

// Capabilities reports ResourceUsage: Result carries the CPU time and peak
// RSS of the main process and of the descendants it waited for.
func (l *Local) Capabilities() backends.Capabilities {
	return backends.Capabilities{ResourceUsage: true, Shell: l.shell, Workspaces: true}
}

// Describe says how attempts are contained (for `sandrun doctor`, whose
// logs go nowhere): in cgroups, and where, or by process groups only, and
// why.
func (l *Local) Describe(context.Context) (string, error) {
	dir, err := l.cg.ready()
	switch {
	case dir != "":
		return fmt.Sprintf("shell %s; each attempt in a cgroup v2 of its own under %s", l.shell, dir), nil
	case l.cg.mode == CgroupOff:
		return fmt.Sprintf("shell %s; each attempt in a process group of its own (cgroup: %s)", l.shell, CgroupOff), nil
	}
	return fmt.Sprintf("shell %s; each attempt in a process group of its own only, so a process that calls setsid outlives its job: %v", l.shell, err), nil
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
	if k == ReservedEnv {
		return fmt.Errorf("%q: reserved: the start check reads the clock into it", k)
	}
	return nil
}

var _ backends.Backend = (*Local)(nil)
