package vercel

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// DefaultPath is a job's PATH when its environment sets none.
const DefaultPath = httpsandbox.DefaultPath

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
	if err := httpsandbox.CheckSession(Kind, spec); err != nil {
		return job{}, err
	}
	if spec.Container != nil {
		return job{}, fmt.Errorf("vercel: container options are not supported (the profile's runtime is the image): %w", backends.ErrPermanent)
	}
	env, err := httpsandbox.JobEnv(Kind, spec)
	if err != nil {
		return job{}, err
	}
	return job{spec: spec, env: env}, nil
}

// request is the run-command request for j.
func (j job) request() runCommandRequest {
	args := []string{"-c", wrapperScript, "sandrun", j.spec.Command}
	args = append(args, slices.Sorted(maps.Keys(j.env))...)
	return runCommandRequest{Command: "/bin/sh", Args: args, Cwd: j.spec.Dir, Env: j.env}
}
