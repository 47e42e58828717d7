package httpsandbox

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
)

// DefaultPath is a job's PATH when its environment sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ValidEnvName reports whether sh accepts s as a variable name
// ([A-Za-z_][A-Za-z0-9_]*).
func ValidEnvName(s string) bool {
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return s != ""
}

// CheckSession refuses a spec that asks for a persistent session, which
// a sandbox per job cannot keep; the error, prefixed with kind, wraps
// backends.ErrPermanent.
func CheckSession(kind string, spec backends.Spec) error {
	if spec.Session != "" {
		return fmt.Errorf("%s: session %q: persistent sessions are not supported: %w", kind, spec.Session, backends.ErrPermanent)
	}
	return nil
}

// JobEnv checks spec's command, cwd and environment for what sh can run
// and returns the environment with PATH defaulted to DefaultPath. Its
// errors, prefixed with kind, wrap backends.ErrPermanent and never show
// an env value.
func JobEnv(kind string, spec backends.Spec) (map[string]string, error) {
	if strings.ContainsRune(spec.Command, 0) || strings.ContainsRune(spec.Dir, 0) {
		return nil, fmt.Errorf("%s: command or cwd contains a NUL byte: %w", kind, backends.ErrPermanent)
	}
	env := make(map[string]string, len(spec.Env)+1)
	for k, v := range spec.Env {
		if !ValidEnvName(k) {
			return nil, fmt.Errorf("%s: env: %q is not a shell variable name: %w", kind, k, backends.ErrPermanent)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%s: env: the value of %s contains a NUL byte: %w", kind, k, backends.ErrPermanent)
		}
		env[k] = v
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = DefaultPath
	}
	return env, nil
}

// LabelKeys name the labels (or tags) that tie a sandbox to its job
// attempt, for orphan reaping.
type LabelKeys struct{ Managed, Deployment, Job, Attempt, Worker string }

// Of returns the labels of spec's sandbox.
func (k LabelKeys) Of(spec backends.Spec) map[string]string {
	return map[string]string{
		k.Managed:    "true",
		k.Deployment: spec.Deployment,
		k.Job:        spec.JobID,
		k.Attempt:    strconv.Itoa(spec.Attempt),
		k.Worker:     spec.Worker,
	}
}
