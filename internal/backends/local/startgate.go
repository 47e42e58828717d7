package local

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A start gate asked in this process can say yes and then be frozen
// (SIGSTOP, a long pause) before the fork: thawed, it would start a
// process for a lease that another worker has since taken over (TestChaos
// seed 9 did, 11.5 s late). No check made here can close that window,
// so the started process makes the last one itself: it is born running a
// POSIX shell that compares the clock since boot with the deadline the
// gate gave, and execs the real program only before it. The program keeps
// the process (its pid, start time, process group and cgroup).

// gateShell runs the check. It is not the job's shell, which may be any
// shell; the check is written for POSIX sh.
const gateShell = "/bin/sh"

// ReservedEnv is the variable the check reads the clock into, unset
// before the program runs; a job's environment may not set it.
const ReservedEnv = "SANDRUN_UPTIME"

// gateScript is the check: $1 is the deadline in hundredths of a second
// since boot (/proc/uptime's unit and clock), the rest the program and its
// arguments. /proc/uptime truncates, so a reading u means the clock is
// below u+1, and u < deadline proves the start is in time. Builtins are
// called through `command`, which no function imported from the
// environment can take over. A late start says so on file descriptor 3;
// the program never sees it.
const gateScript = `if IFS=' ' command read -r ` + ReservedEnv + ` _ </proc/uptime &&
	command [ "${` + ReservedEnv + `%.*}${` + ReservedEnv + `#*.}" -lt "$1" ] 2>/dev/null; then
	unset ` + ReservedEnv + `; shift; exec "$@" 3>&-
fi
command echo late >&3
exit 125`

// afterGate runs between the gate's answer and the start: tests freeze
// there.
var afterGate = func() {}

// startBy rewrites cmd to run gateScript first, with until as its
// deadline. It returns the read end of the pipe on which a late start is
// reported; cmd.ExtraFiles[0] is the write end, to be closed after Start.
func startBy(cmd *exec.Cmd, until time.Time) (*os.File, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return nil, fmt.Errorf("local: start gate: read the clock: %w", err)
	}
	// time.Until reads the monotonic clock, which runs with boot time
	// but for suspends: a suspend makes the deadline early, never late.
	deadline := (ts.Nano() + time.Until(until).Nanoseconds()) / int64(10*time.Millisecond)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("local: start gate: %w", err)
	}
	args := append([]string{gateShell, "-c", gateScript, "sandrun-start-gate", strconv.FormatInt(deadline, 10)}, cmd.Args...)
	args[len(args)-len(cmd.Args)] = cmd.Path // exec "$@" runs the path Start would have
	cmd.Path, cmd.Args = gateShell, args
	cmd.ExtraFiles = []*os.File{w}
	return r, nil
}

// startedLate reports whether the check found its deadline passed. The
// process has ended (or exec'd, which closed its copy): the read ends.
func startedLate(r *os.File) bool {
	b, _ := io.ReadAll(io.LimitReader(r, 16))
	return len(b) > 0
}
