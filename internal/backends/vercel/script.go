package vercel

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
)

// DefaultPath is a job's PATH when its environment sets none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// wrapperScript runs the job, as `/bin/sh -c WRAPPER sandrun COMMAND
// NAMES...`: COMMAND with exactly the variables NAMES (which the API set
// from the request's env) and an empty standard input. The values are
// never on a command line.
const wrapperScript = `c=$1
shift
n=$#
while [ "$n" -gt 0 ]; do
	k=$1
	shift
	eval "v=\${$k}"
	set -- "$@" "$k=$v"
	n=$((n - 1))
done
exec env -i "$@" /bin/sh -c "$c" </dev/null`

// job is a spec turned into the command the sandbox runs.
type job struct {
	spec backends.Spec
	env  map[string]string // Spec.Env plus the documented extras
}

// newJob checks spec for what this backend can run; its errors wrap
// backends.ErrPermanent and never show an env value.
func newJob(spec backends.Spec) (job, error) {
	if spec.Session != "" {
		return job{}, fmt.Errorf("vercel: session %q: persistent sessions are not supported: %w", spec.Session, backends.ErrPermanent)
	}
	if spec.Container != nil {
		return job{}, fmt.Errorf("vercel: container options are not supported (the profile's runtime is the image): %w", backends.ErrPermanent)
	}
	if strings.ContainsRune(spec.Command, 0) || strings.ContainsRune(spec.Dir, 0) {
		return job{}, fmt.Errorf("vercel: command or cwd contains a NUL byte: %w", backends.ErrPermanent)
	}
	env := make(map[string]string, len(spec.Env)+1)
	for k, v := range spec.Env {
		if !envNameRE.MatchString(k) {
			return job{}, fmt.Errorf("vercel: env: %q is not a shell variable name: %w", k, backends.ErrPermanent)
		}
		if strings.ContainsRune(v, 0) {
			return job{}, fmt.Errorf("vercel: env: the value of %s contains a NUL byte: %w", k, backends.ErrPermanent)
		}
		env[k] = v
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = DefaultPath
	}
	return job{spec: spec, env: env}, nil
}

// request is the run-command request for j.
func (j job) request() runCommandRequest {
	args := []string{"-c", wrapperScript, "sandrun", j.spec.Command}
	args = append(args, slices.Sorted(maps.Keys(j.env))...)
	return runCommandRequest{Command: "/bin/sh", Args: args, Cwd: j.spec.Dir, Env: j.env}
}
