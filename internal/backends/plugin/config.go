package plugin

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Config is a plugin backend profile.
type Config struct {
	// Path is the plugin executable: an absolute path, or a name looked
	// up on the worker's PATH. Empty: NamePrefix+Profile on PATH.
	Path string `yaml:"path"`
	// Args are extra arguments for the plugin, after its path.
	Args []string `yaml:"args"`
	// Env is extra environment for the plugin process itself, on top of
	// the few variables it inherits from the worker's (PATH, HOME, USER,
	// LOGNAME, LANG, LC_ALL, TZ and TMPDIR, when set). It is not the job's: a job's
	// environment is its spec's, which the run request carries.
	Env map[string]string `yaml:"env"`
	// Timeout bounds a plugin's start (until its hello) and its answer to
	// a validate request. Zero means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`

	// Profile is the profile's name, for discovery and logs.
	Profile string `yaml:"-"`
	// Logger receives the plugins' logs (their stderr) and the host's
	// notes about them. Nil drops them.
	Logger *slog.Logger `yaml:"-"`
}

const (
	// NamePrefix is what the name of the plugin to look up on PATH, when
	// a profile sets no path, has before the profile's name.
	NamePrefix = "sandrun-backend-"
	// DefaultTimeout is used when Config.Timeout is zero.
	DefaultTimeout = 10 * time.Second
)

// inheritedEnv lists the variables of the worker's environment that a
// plugin process inherits, when they are set. Nothing else of it is
// passed on: the worker's environment may hold its own secrets.
var inheritedEnv = [...]string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// settings is Config checked, resolved and with its defaults filled in.
type settings struct {
	path    string
	args    []string
	env     []string // The plugin process's whole environment.
	timeout time.Duration
	log     *slog.Logger
}

// settle checks cfg; its errors name the field at fault, never an env
// value.
func settle(cfg Config) (settings, error) {
	s := settings{args: slices.Clone(cfg.Args), timeout: cfg.Timeout, log: cfg.Logger}
	if s.timeout < 0 {
		return s, fmt.Errorf("timeout: %s: must not be negative", s.timeout)
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	for i, a := range s.args {
		if strings.ContainsRune(a, 0) {
			return s, fmt.Errorf("args[%d]: contains a NUL byte", i)
		}
	}
	env, err := environ(cfg.Env)
	if err != nil {
		return s, err
	}
	s.env = env
	if s.path, err = resolve(cfg.Path, cfg.Profile); err != nil {
		return s, err
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("backend", "plugin", "profile", cfg.Profile, "plugin", s.path)
	return s, nil
}

// resolve finds the plugin executable.
func resolve(path, profile string) (string, error) {
	if path == "" {
		if profile == "" {
			return "", errors.New("path: required when the profile has no name")
		}
		if strings.ContainsAny(profile, "/\x00") {
			return "", fmt.Errorf("path: required: the profile name %q cannot be part of an executable's name", profile)
		}
		found, err := exec.LookPath(NamePrefix + profile)
		if err != nil {
			return "", fmt.Errorf("path: not set, and %s%s is not an executable on PATH: install the plugin there, or set path", NamePrefix, profile)
		}
		return found, nil
	}
	if !strings.Contains(path, "/") {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("path: %s is not an executable on PATH", path)
		}
		return found, nil
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("path: %s: want an absolute path, or a name to look up on PATH", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("path: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("path: %s: not an executable file", path)
	}
	return filepath.Clean(path), nil
}

var errBadEnv = errors.New("a key must be non-empty without '=' or NUL, a value without NUL")

// environ returns the plugin process's environment: inheritedEnv from
// the worker's, extra on top, and ProtocolEnv, as sorted KEY=value lines.
func environ(extra map[string]string) ([]string, error) {
	env := make(map[string]string, len(inheritedEnv)+len(extra)+1)
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range extra {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env: %q: %w", k, errBadEnv)
		}
		if k == ProtocolEnv {
			return nil, fmt.Errorf("env: %s: set by the host", k)
		}
		env[k] = v
	}
	env[ProtocolEnv] = fmt.Sprint(Protocol)
	lines := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		lines = append(lines, k+"="+env[k])
	}
	return lines, nil
}
