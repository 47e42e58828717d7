package ssh

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The remote side is POSIX sh and setsid (util-linux or busybox), nothing
// else. Every script is sent on the standard input of `/bin/sh -s` and
// wrapped in a function called on its last line: a script cut short by a
// dropped connection is never run in part, and nothing it carries (the
// job's environment, secrets included) shows in the remote process list.
//
// A run directory holds:
//
//	cmd, env, meta        the job, written at launch (env removed once read)
//	run.sh                the supervisor, job and watchdog (below)
//	super.pid, pid        the supervisor's pid; the job's process group
//	stdout, stderr        the job's output, read by offset over SFTP
//	killed                the last signal sent to the job (TERM or KILL,
//	                      followed by "watchdog" when the watchdog sent it)
//	exit                  the job's exit status, written after the job
//	                      and its group are dead (a reader may find it
//	                      empty for an instant)
//
// The supervisor runs in a session of its own, so it survives the SSH
// connection and the worker; the job runs in another, whose process group
// is what a timeout, a cancel or an orphan kill signals.

// runScript is run.sh. `super W G CWD` starts the job in CWD and, when
// W > 0, a watchdog that ends it W seconds later (TERM, then KILL after G
// seconds) even if no worker is left to do so; then it waits for the
// job, kills what is left of its process group and records the exit
// status. Process start-ups are few: on slow hosts each costs milliseconds.
const runScript = `case $1 in
super)
	echo $$ >super.pid
	setsid env -i HOME="$HOME" USER="$USER" LOGNAME="$LOGNAME" PATH="$PATH" SHELL="$SHELL" sh ./run.sh job "$4" </dev/null >stdout 2>stderr &
	p=$!
	wd=
	if [ "$2" -gt 0 ]; then
		setsid sh ./run.sh watchdog "$2" "$3" "$p" </dev/null >/dev/null 2>&1 &
		wd=$!
	fi
	wait "$p"
	rc=$?
	kill -KILL -"$p" 2>/dev/null
	[ -n "$wd" ] && kill -KILL -"$wd" 2>/dev/null
	echo "$rc" >exit
	;;
job)
	echo $$ >pid
	exec 3<./env
	rm -f ./env &
	. /dev/fd/3
	exec 3<&-
	set -- "$PWD" "$2"
	case $2 in
	'') set -- "$1" "$HOME" ;;
	/*) ;;
	*) set -- "$1" "$HOME/$2" ;;
	esac
	cd "$2" || exit 127
	exec sh "$1/cmd"
	;;
watchdog)
	sleep "$2"
	echo TERM watchdog >killed
	kill -TERM -"$4" 2>/dev/null
	sleep "$3"
	echo KILL watchdog >killed
	kill -KILL -"$4" 2>/dev/null
	;;
esac
`

// shellLib holds the functions the scripts below share.
//
// running DIR: the run has no exit status yet, and its supervisor or its
// process group is alive (or it was launched under a minute ago and its
// supervisor has yet to write its pid).
//
// stop DIR TENTHS: TERM to the run's process group, KILL after TENTHS
// tenths of a second, each time until its exit status is recorded (or,
// its supervisor gone, the group is gone). It prints "sent SIG" for each
// signal sent, and fails if the run outlives KILL by 10 seconds.
const shellLib = `running() {
	[ -f "$1/exit" ] && return 1
	s= p=
	[ -f "$1/super.pid" ] && { read -r s <"$1/super.pid" || [ -n "$s" ] || return 0; }
	[ -f "$1/pid" ] && read -r p <"$1/pid"
	[ -n "$s" ] && kill -0 "$s" 2>/dev/null && return 0
	[ -n "$p" ] && kill -0 -"$p" 2>/dev/null && return 0
	[ -f "$1/super.pid" ] && return 1
	m=$(stat -c %Y "$1" 2>/dev/null || echo 0)
	[ $(($(date +%s) - m)) -lt 60 ]
}
stop() {
	i=0
	while [ ! -f "$1/pid" ] && [ ! -f "$1/exit" ] && [ $i -lt 50 ] && running "$1"; do sleep 0.1; i=$((i+1)); done
	[ -f "$1/pid" ] && [ ! -f "$1/exit" ] || return 0
	p=
	while [ -z "$p" ] && [ ! -f "$1/exit" ]; do read -r p <"$1/pid" || sleep 0.01; done
	[ -n "$p" ] || return 0
	n=$2
	for sig in TERM KILL; do
		echo $sig >"$1/killed"
		kill -$sig -"$p" 2>/dev/null && echo "sent $sig"
		i=0
		while [ $i -lt "$n" ]; do
			[ -f "$1/exit" ] && return 0
			running "$1" || return 0
			sleep 0.1
			i=$((i+1))
		done
		n=100
	done
	echo "$1 outlived SIGKILL by 10s" >&2
	return 1
}
`

// launch is what starting one attempt needs on the remote side.
type launch struct {
	dir      string // run directory
	command  string
	cwd      string
	ws       string // a workspace directory to make before the job starts (cwd is in it), or ""
	env      map[string]string
	meta     runMeta
	onOrphan string
	watchdog int // seconds; 0 means none
	grace    time.Duration
}

// runMeta identifies a run directory's attempt, for orphan handling.
type runMeta struct {
	job        string
	attempt    int
	worker     string
	deployment string
}

func (m runMeta) String() string {
	return fmt.Sprintf("job=%s\nattempt=%d\nworker=%s\ndeployment=%s\n", m.job, m.attempt, m.worker, m.deployment)
}

// envKeyRE is what sh accepts as a variable name.
var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// tenths returns d in tenths of a second, rounded up.
func tenths(d time.Duration) int { return int((d + 99*time.Millisecond) / (100 * time.Millisecond)) }

// script returns the launch script and its arguments. First it deals with
// the job's earlier attempts still on the host: a running one is adopted
// under on_orphan adopt ("adopt NAME" is printed and nothing launched),
// else stopped — dead before this attempt starts; then they are removed.
// The launch itself is idempotent: run again after a connection dropped
// mid-launch, it reports the job started rather than starting it twice.
func (l launch) script() (string, []string, error) {
	var env strings.Builder
	for _, k := range slices.Sorted(maps.Keys(l.env)) {
		if !envKeyRE.MatchString(k) {
			return "", nil, fmt.Errorf("env: %q is not a shell variable name", k)
		}
		fmt.Fprintf(&env, "export %s=%s\n", k, shQuote(l.env[k]))
	}
	files := []struct{ name, body string }{
		{"cmd", l.command + "\n"},
		{"env", env.String()},
		{"meta", l.meta.String()},
		{"run.sh", runScript},
	}
	var b strings.Builder
	b.WriteString(shellLib)
	b.WriteString(`main() {
	d=$1 mode=$2 tenths=$3 grace=$4 watchdog=$5 ws=$6
	root=${d%/*}
	job=${d##*/}
	job=${job%-*}
	umask 077
	[ -d "$root" ] || mkdir -p "$root" || exit 1
	adopted=
	for o in "$root/$job"-*; do
		[ -d "$o" ] && [ "$o" != "$d" ] || continue
		case ${o#"$root/$job"-} in ''|*[!0-9]*) continue ;; esac
		if running "$o"; then
			if [ "$mode" = adopt ] && [ -z "$adopted" ]; then adopted=$o; continue; fi
			stop "$o" "$tenths" || exit 1
		fi
		rm -rf "$o"
	done
	if [ -n "$adopted" ]; then echo "adopt ${adopted##*/}"; exit 0; fi
	if ! mkdir "$d" 2>/dev/null; then
		i=0
		while [ ! -f "$d/super.pid" ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
		if [ -f "$d/super.pid" ]; then echo launched; exit 0; fi
		rm -rf "$d" && mkdir "$d" || exit 1
	fi
`)
	// printf is a shell built-in: no process per file.
	for _, f := range files {
		fmt.Fprintf(&b, "\tprintf '%%s' %s >\"$d/%s\"\n", shQuote(f.body), f.name)
	}
	fmt.Fprintf(&b, `	[ "$ws" = - ] || mkdir -p "$ws" || exit 1
	cd "$d" || exit 1
	setsid sh ./run.sh super "$watchdog" "$grace" %s </dev/null >/dev/null 2>&1 &
	echo launched
}
main "$@"
`, shQuote(l.cwd))
	args := []string{l.dir, l.onOrphan, strconv.Itoa(tenths(l.grace)),
		strconv.FormatFloat(float64(tenths(l.grace))/10, 'f', 1, 64), strconv.Itoa(l.watchdog), cmp.Or(l.ws, "-")} // "-": no workspace (an empty argument is refused)
	return b.String(), args, nil
}

// shQuote quotes s for sh: single quotes, with ' as '\”.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stopScript stops one run (see stop in shellLib).
const stopScript = shellLib + `main() {
	stop "$1" "$2"
}
main "$@"
`

// listScript describes the run directories under a root whose names
// start with a prefix ("" for all): a header line per directory, then its
// meta file. state is ended (exit recorded), running, or dead (neither:
// the host rebooted, say).
const listScript = shellLib + `main() {
	now=$(date +%s)
	for d in "$1"/"$2"*; do
		[ -d "$d" ] || continue
		if [ -f "$d/exit" ]; then
			st=ended
			m=$(stat -c %Y "$d/exit" 2>/dev/null || echo "$now")
		elif running "$d"; then
			st=running
			m=$now
		else
			st=dead
			m=$now
		fi
		echo "@run ${d##*/} $st $((now - m))"
		cat "$d/meta" 2>/dev/null
	done
}
main "$@"
`

// removeScript removes run directories.
const removeScript = `main() {
	for d in "$@"; do rm -rf -- "$d"; done
}
main "$@"
`
