package daytona

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// DefaultPath is a job's PATH when its environment sets none.
const DefaultPath = httpsandbox.DefaultPath

// pidFile is where the wrapper records the job's pid, in the sandbox's
// home (one job per sandbox).
const pidFile = `"${HOME:-/tmp}/.sandrun-job.pid"`

// wrapperScript is the job's wrapper, run as
//
//	/bin/sh -c WRAPPER sandrun DIR COMMAND ENV...
//
// It records its pid (which the job keeps: it execs into it), changes to
// DIR unless empty, and runs COMMAND with exactly ENV and an empty
// standard input. ENV is NAME=VALUE words, or, with "-n" first, names of
// variables set in its own environment (an execute's envs).
const wrapperScript = `d=$1 c=$2
shift 2
if [ "$1" = -n ]; then
	shift
	n=$#
	while [ "$n" -gt 0 ]; do
		k=$1
		shift
		eval "v=\${$k}"
		set -- "$@" "$k=$v"
		n=$((n - 1))
	done
fi
echo $$ >` + pidFile + ` 2>/dev/null
if [ -n "$d" ]; then cd "$d" || exit 127; fi
exec env -i "$@" /bin/sh -c "$c" </dev/null`

// job is a spec turned into what the sandbox runs.
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
	if c := spec.Container; c != nil && (len(c.Mounts) > 0 || c.Network != "" || c.Privileged || c.PidMode != "" ||
		c.IpcMode != "" || c.UTSMode != "" || len(c.Devices) > 0 || len(c.CapAdd) > 0) {
		return job{}, fmt.Errorf("daytona: container options other than image are not supported: %w", backends.ErrPermanent)
	}
	if c := spec.Container; c != nil && strings.ContainsAny(c.Image, "\n\r") {
		return job{}, fmt.Errorf("daytona: container image: must be one line: %w", backends.ErrPermanent)
	}
	env, err := httpsandbox.JobEnv(Kind, spec)
	if err != nil {
		return job{}, err
	}
	return job{spec: spec, env: env}, nil
}

// workdir is the job's working directory: Spec.Dir, or, with a
// workspace, WorkspaceDir unless Dir is absolute (a relative Dir is taken
// inside it). Empty means the sandbox's default directory.
func (j job) workdir() string {
	if j.spec.Workspace != "" && !path.IsAbs(j.spec.Dir) {
		return path.Join(WorkspaceDir, j.spec.Dir)
	}
	return j.spec.Dir
}

// dir is the cwd argument of the wrapper: a relative path that starts
// with "-" would read as an option of cd.
func (j job) dir() string {
	d := j.workdir()
	if strings.HasPrefix(d, "-") {
		return "./" + d
	}
	return d
}

// sessionCommand is the session command's text: the wrapper with the
// environment's values, shell-quoted.
func (j job) sessionCommand() string {
	words := []string{"/bin/sh", "-c", shQuote(wrapperScript), "sandrun", shQuote(j.dir()), shQuote(j.spec.Command)}
	for _, k := range slices.Sorted(maps.Keys(j.env)) {
		words = append(words, shQuote(k+"="+j.env[k]))
	}
	return strings.Join(words, " ")
}

// executeCommand is the execute's command text, for an execute whose envs
// carry the environment and whose cwd the directory: only names here.
func (j job) executeCommand() string {
	words := []string{"/bin/sh", "-c", shQuote(wrapperScript), "sandrun", "''", shQuote(j.spec.Command), "-n"}
	words = append(words, slices.Sorted(maps.Keys(j.env))...)
	return strings.Join(words, " ")
}

// signalScript sends sig (TERM, KILL, or 0 to probe) to the job: to its
// process group when it leads one, else to its process. It exits 3 when
// the job is not running (or never recorded its pid).
func signalScript(sig string) string {
	s := `p=$(cat ` + pidFile + ` 2>/dev/null) || exit 3
case $p in ''|*[!0-9]*) exit 3 ;; esac
kill -0 "$p" 2>/dev/null || exit 3
`
	if sig == "0" {
		return s + "exit 0"
	}
	s += `kill -s ` + sig + ` -- "-$p" 2>/dev/null || kill -s ` + sig + ` "$p" 2>/dev/null
`
	if sig == "TERM" {
		s += `kill -s CONT -- "-$p" 2>/dev/null || kill -s CONT "$p" 2>/dev/null
`
	}
	return s + "exit 0"
}

// shQuote quotes s for sh: in single quotes, each quote of s closed,
// escaped and reopened.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
