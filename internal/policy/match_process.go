package policy

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// matchKill judges kill: pid -1 (every process) or 1 (init) with a
// signal that stops or ends them. The first -WORD is the signal; after it,
// -1 is a pid. init receives only the signals it handles, so kill -HUP 1
// (reload) is routine; every other process gets a signal's default
// action, so kill -HUP -1 ends them.
func matchKill(c *command, h *hits) {
	args := c.args
	sig := arg{val: "TERM", lit: true}
	i := 0
loop:
	for i < len(args) {
		v := args[i].val
		switch {
		case !args[i].lit:
			if i == 0 {
				sig = args[i] // kill -$SIG ... or kill $PIDS: either way unknown
			}
			break loop
		case v == "--":
			i++
			break loop
		case v == "-s" || v == "-n" || v == "--signal":
			if i+1 < len(args) {
				sig = args[i+1]
			}
			i += 2
		case v == "-l" || v == "-L" || v == "--list" || v == "--table":
			return
		case strings.HasPrefix(v, "-") && len(v) > 1 && i == 0:
			sig = arg{val: v[1:], lit: true}
			if strings.HasPrefix(v, "-s") {
				sig.val = v[2:] // -sKILL
			}
			i++
		default:
			break loop
		}
	}
	for _, a := range args[min(i, len(args)):] {
		pid, ok := killPid(a)
		if !ok || pid != -1 && pid != 1 || harmlessSignal(sig, pid) {
			continue
		}
		detail := "kill " + strconv.Itoa(pid)
		if a.val != strconv.Itoa(pid) {
			detail += " (written " + quoteDetail(a.val) + ")"
		}
		h.add(ruleKillAll, detail)
		return
	}
	for _, a := range args {
		if !a.lit && userProcesses.MatchString(a.src) && !harmlessSignal(sig, -1) {
			h.add(ruleKillAll, "kill of "+quoteDetail(a.src)+": every process of the user")
			return
		}
	}
}

// userProcesses is a substitution that lists every process of a user:
// pgrep -u USER (or ps -u USER -o pid=) with no name to match.
var userProcesses = regexp.MustCompile(`^"?(\$\(|` + "`" + `)\s*(pgrep(\s+(-[lacnow]+|-[uUG]\s*\S+|--(euid|uid|group)(=|\s+)\S+))*\s+(-[uU]\s*\S+|--(euid|uid)(=|\s+)\S+)(\s+(-[lacnow]+|-[uUG]\s*\S+))*|ps\s+(-[uU]\s*\S+|-e|-A|ax|aux)\s+-o\s+pid=?)\s*(\)|` + "`" + `)"?$`)

// harmlessSignal reports whether sending sig to pid (1 or -1) leaves the
// processes running: a signal whose default action is to ignore or
// continue, or, for init, one it handles to reload or reopen its logs.
func harmlessSignal(sig arg, pid int) bool {
	if !sig.lit {
		return false
	}
	name := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(sig.val)), "SIG")
	if n, err := strconv.Atoi(name); err == nil {
		name = map[int]string{0: "0", 1: "HUP", 10: "USR1", 12: "USR2", 17: "CHLD", 18: "CONT", 23: "URG", 28: "WINCH"}[n]
	}
	switch name {
	case "0", "CONT", "WINCH", "CHLD", "CLD", "URG":
		return true
	case "HUP", "USR1", "USR2":
		return pid == 1
	}
	return false
}

// killPid reads a kill operand as kill reads a pid: a decimal number with
// an optional sign, leading zeros and surrounding blanks allowed (-01 is
// -1, every process; 001 is init).
func killPid(a arg) (int, bool) {
	if !a.lit {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(a.val))
	return n, err == nil
}

// matchAll are pkill/killall patterns that match every process.
var matchAll = []string{"", ".", ".*", ".+", "^", "$", "^.*", ".*$", "^.*$", "[^]", "^.", "[a-z]*", "*"}

// matchPkill judges pkill and killall with a match-everything pattern or
// an inverted match.
func matchPkill(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "ugGPstFUo", long: []string{"signal", "euid", "uid", "group", "pgroup", "parent", "session", "terminal", "pidfile", "ns", "nslist", "older-than", "younger-than", "user"}})
	if c.name == "pkill" && hasOpt(opts, "v", "inverse") {
		h.add(ruleKillAll, "pkill -v")
		return
	}
	for _, o := range ops {
		if o.lit && slices.Contains(matchAll, o.val) {
			h.add(ruleKillAll, c.name+" "+quoteDetail(o.val))
			return
		}
	}
	// killall postgres, pkill -9 mysqld: a system service's daemon, stopped
	// behind its manager's back
	for _, o := range ops {
		if o.lit && slices.Contains(serviceDaemons, strings.TrimSuffix(strings.TrimPrefix(o.val, "^"), "$")) {
			h.add(ruleServiceStop, c.name+" "+quoteDetail(o.val)+": a system service's daemon")
			return
		}
	}
	// pkill -u www-data, killall -u postgres: every process of a user
	// (its services with them).
	if len(ops) == 0 {
		for _, o := range opts {
			if o.name == "u" || o.name == "U" || o.name == "euid" || o.name == "uid" || o.name == "user" {
				h.add(ruleKillAll, c.name+" -"+o.name+" "+quoteDetail(o.value.val)+": every process of the user")
				return
			}
		}
	}
}

// serviceDaemons are the process names of system services: databases,
// web servers, the SSH server, container and cluster daemons, logging.
var serviceDaemons = []string{"postgres", "postmaster", "mysqld", "mariadbd", "mongod", "mongos", "redis-server", "valkey-server",
	"memcached", "nginx", "httpd", "apache2", "sshd", "dockerd", "containerd", "kubelet", "etcd", "kube-apiserver", "rsyslogd",
	"systemd-journald", "auditd", "crond", "cron", "haproxy", "rabbitmq-server", "beam.smp", "clickhouse-server", "elasticsearch",
	"consul", "vault", "nomad", "k3s", "slapd", "named", "unbound", "chronyd", "ntpd", "sssd", "firewalld",
	// macOS: the display server and the login session (killing either logs the user out), directory services
	"WindowServer", "loginwindow", "opendirectoryd", "launchd",
	// the init system and the daemons the host needs to run at all
	"systemd", "init", "systemd-logind", "systemd-udevd", "udevd", "dbus-daemon", "dbus-broker", "systemd-networkd", "NetworkManager", "systemd-resolved"}

func matchKillall5(_ *command, h *hits) { h.add(ruleKillAll, "killall5") }

// shutdownVerbs are the systemctl verbs that stop or restart the machine.
var shutdownVerbs = []string{"poweroff", "reboot", "halt", "kexec", "soft-reboot"}

// systemctlSpec lists systemctl's options that take a value.
var systemctlSpec = optSpec{short: "tpsnoHM", long: []string{
	"type", "property", "signal", "lines", "output", "host", "machine",
	"state", "kill-whom", "kill-value", "root", "image", "job-mode", "what", "when", "message", "timestamp",
	"preset-mode", "boot-loader-entry", "boot-loader-menu", "reboot-argument", "drop-in"}}

// pumactlSpec are pumactl's options with a value (-P PIDFILE, -S STATE).
var pumactlSpec = optSpec{short: "SPCFTu", long: []string{"state", "pidfile", "config-file", "control-url", "control-token"}}

// matchShutdown judges programs that power off or restart the machine.
func matchShutdown(c *command, h *hits) {
	switch c.name {
	case "shutdown":
		if _, opts := operands(c.args, optSpec{}); hasOpt(opts, "c", "k", "help", "show") { // -k only warns the users
			return
		}
		if slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && (a.val == "/a" || a.val == "/A" || a.val == "/?") }) {
			return // Windows: shutdown /a aborts a pending shutdown
		}
		h.add(ruleShutdown, c.name)
	case "reboot", "halt", "poweroff":
		if _, opts := operands(c.args, optSpec{}); hasOpt(opts, "help") {
			return
		}
		h.add(ruleShutdown, c.name)
	case "init", "telinit":
		rest, _ := skipOptions(c.args, optSpec{})
		if len(rest) > 0 && rest[0].lit && (rest[0].val == "0" || rest[0].val == "6") {
			h.add(ruleShutdown, c.name+" "+rest[0].val)
		}
	case "kexec":
		if _, opts := operands(c.args, optSpec{}); hasOpt(opts, "e", "exec") {
			h.add(ruleShutdown, "kexec -e")
		}
	case "systemctl":
		ops, opts := operands(c.args, systemctlSpec)
		if hasOpt(opts, "dry-run") {
			return // the power verbs only say what they would do
		}
		if len(ops) > 0 && ops[0].lit && slices.Contains(shutdownVerbs, ops[0].val) {
			h.add(ruleShutdown, "systemctl "+ops[0].val)
		}
		// the next boot goes to a target with no services (or none at all)
		if len(ops) == 2 && ops[0].lit && ops[0].val == "set-default" && ops[1].lit &&
			slices.Contains([]string{"rescue", "emergency", "poweroff", "halt", "reboot", "runlevel0", "runlevel1", "runlevel6"}, strings.TrimSuffix(ops[1].val, ".target")) {
			h.add(ruleShutdown, "systemctl set-default "+ops[1].val)
		}
	}
}

// stopVerbs are the service-manager verbs that stop or disable a service:
// systemd, SysV, OpenRC, launchd, runit, supervisord, upstart, OpenBSD's
// rcctl, illumos's svcadm, dinit, Homebrew's services, and the control
// programs of services that run their own (GitLab's omnibus, monit,
// Postfix, Dovecot, Puma, Ghost, RabbitMQ, Tomcat, Varnish; PostgreSQL's
// pg_ctl is the data pack's, which knows a project's own data directory).
var stopVerbs = map[string][]string{
	"systemctl":     {"stop", "disable", "mask", "kill", "isolate"},
	"service":       {"stop", "force-stop"},
	"rc-service":    {"stop", "zap"},
	"launchctl":     {"unload", "bootout", "disable", "remove", "stop"},
	"sv":            {"stop", "down", "d", "exit", "x", "kill", "k", "force-stop", "shutdown", "force-shutdown"},
	"supervisorctl": {"stop", "remove", "shutdown"},
	"initctl":       {"stop"},
	"rcctl":         {"stop", "disable"},
	"svcadm":        {"disable"},
	"dinitctl":      {"stop", "disable"},
	"update-rc.d":   {"disable", "remove"},
	"chkconfig":     {"off"},
	"rc-update":     {"del", "delete"},
	"brew":          {"stop", "kill"},
	"apachectl":     {"stop", "graceful-stop"},
	"apache2ctl":    {"stop", "graceful-stop"},
	"caddy":         {"stop"},
	"forever":       {"stopall"},
	"gitlab-ctl":    {"stop", "kill", "graceful-kill"},
	"monit":         {"stop", "unmonitor"},
	"postfix":       {"stop", "abort"},
	"dovecot":       {"stop"},
	"pumactl":       {"stop", "halt"},
	"ghost":         {"stop"},
	"rabbitmqctl":   {"stop", "shutdown"},
	"catalina.sh":   {"stop"},
	"varnishadm":    {"stop"},
}

// stopVerbAt is where the verb stands among a service manager's operands
// when it is not first: service NAME stop, chkconfig NAME off, brew
// services stop.
var stopVerbAt = map[string]int{"service": 1, "rc-service": 1, "update-rc.d": 1, "chkconfig": 1, "brew": 1}

// matchServiceStop judges stopping or disabling system services.
func matchServiceStop(c *command, h *hits) {
	ops, opts := operands(c.args, systemctlSpec)
	i := stopVerbAt[c.name]
	switch c.name {
	case "systemctl":
		// systemctl kill -s HUP|USR1: a reload or a log reopen, not a stop
		if len(ops) > 0 && ops[0].val == "kill" {
			for _, o := range opts {
				if o.name == "s" || o.name == "signal" {
					switch strings.TrimPrefix(strings.ToUpper(o.value.val), "SIG") {
					case "HUP", "USR1", "USR2", "WINCH", "1", "10", "12", "28":
						return
					}
				}
			}
		}
	case "brew":
		if len(ops) == 0 || ops[0].val != "services" {
			return
		}
	case "chkconfig":
		if hasOpt(opts, "del") {
			h.add(ruleServiceStop, "chkconfig --del")
			return
		}
	case "s6-svc":
		if hasOpt(opts, "d", "D", "x", "X") {
			h.add(ruleServiceStop, "s6-svc -d")
		}
		return
	case "nginx", "openresty", "angie":
		// nginx -s stop|quit: the running server exits
		for i, a := range c.args {
			if a.lit && a.val == "-s" && i+1 < len(c.args) && c.args[i+1].lit && (c.args[i+1].val == "stop" || c.args[i+1].val == "quit") {
				h.add(ruleServiceStop, c.name+" -s "+c.args[i+1].val)
				return
			}
		}
		return
	case "pumactl":
		ops, _ = operands(c.args, pumactlSpec)
	case "uwsgi":
		// uwsgi --stop PIDFILE: the running server exits
		if slices.ContainsFunc(c.args, func(a arg) bool {
			return a.lit && (a.val == "--stop" || a.val == "--halt" || strings.HasPrefix(a.val, "--stop="))
		}) {
			h.add(ruleServiceStop, "uwsgi --stop")
		}
		return
	case "gitlab-ctl", "monit", "postfix", "dovecot", "ghost", "rabbitmqctl", "catalina.sh", "varnishadm":
		// their own options take values (postfix -c DIR stop, monit -c FILE
		// stop): the verb is any operand
		for _, o := range ops {
			if o.lit && slices.Contains(stopVerbs[c.name], o.val) {
				h.add(ruleServiceStop, c.name+" "+o.val)
				return
			}
		}
		return
	case "pm2":
		// pm2 kill, pm2 stop|delete all: every application the daemon runs;
		// pm2 unstartup: nothing starts them at boot any more
		if len(ops) > 0 && ops[0].lit && (ops[0].val == "kill" || ops[0].val == "unstartup" ||
			(ops[0].val == "stop" || ops[0].val == "delete" || ops[0].val == "del") && len(ops) > 1 && ops[1].lit && ops[1].val == "all") {
			h.add(ruleServiceStop, "pm2 "+ops[0].val)
		}
		return
	case "sysrc":
		for _, o := range ops {
			if k, v, ok := strings.Cut(o.val, "="); ok && o.lit && strings.HasSuffix(k, "_enable") && strings.EqualFold(v, "no") {
				h.add(ruleServiceStop, "sysrc "+o.val)
				return
			}
		}
		return
	}
	if len(ops) > i && ops[i].lit && slices.Contains(stopVerbs[c.name], ops[i].val) {
		if c.name == "brew" {
			h.add(ruleServiceStop, "brew services "+ops[i].val)
			return
		}
		h.add(ruleServiceStop, c.name+" "+ops[i].val)
	}
}

// matchInitScript judges /etc/init.d/NAME stop.
func matchInitScript(c *command, h *hits) {
	if len(c.args) > 0 && c.args[0].lit && (c.args[0].val == "stop" || c.args[0].val == "force-stop") {
		h.add(ruleServiceStop, c.prog+" stop")
	}
}
