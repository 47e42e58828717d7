package sandboxtest

import (
	"os/exec"
	"slices"
	"strconv"
)

// LimitMemory makes cmd, which must not have started, run with its data
// segment limited to bytes: a /bin/sh wrapper sets RLIMIT_DATA (ulimit -d)
// and execs cmd, so the pid and process group are cmd's own. It is how a
// fake applies the memory a create-sandbox request asked for to the
// processes it runs, as the real service's memory cgroup would: a process
// that allocates past the limit fails ("memory exhausted") where a
// sandbox's would be killed; either way the job does not succeed. The
// limit holds per process, not for the sandbox's processes together:
// enough to tell a limit that reached the API from one that did not.
// bytes <= 0 leaves cmd unlimited.
func LimitMemory(cmd *exec.Cmd, bytes int64) {
	if bytes <= 0 || cmd.Err != nil {
		return
	}
	kib := strconv.FormatInt(max(bytes>>10, 1), 10)
	cmd.Args = slices.Concat([]string{"/bin/sh", "-c", `ulimit -d "$1" && shift && exec "$@"`, "sandbox-memory", kib, cmd.Path},
		cmd.Args[1:])
	cmd.Path = "/bin/sh"
}
