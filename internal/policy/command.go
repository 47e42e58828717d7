package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// command is a simple command as the matchers see it: words expanded and
// unquoted, wrappers such as sudo or nice stripped, and the program named
// by the basename of its path (/bin/rm is rm).
type command struct {
	name  string // basename of the program that actually runs
	prog  string // the program word as written, quotes removed
	args  []arg  // its arguments
	stdin stream // what it reads on standard input
	cwd   value  // the working directory, when known
	home  value  // what ~ expands to: homeMarker, and the values HOME may hold
	links links  // symbolic links the script created earlier (see links.go)
	tree  bool   // each operand stands for a whole tree (find -exec, xargs fed by find)
	// later: the scripts it holds run later, if ever (a file written to
	// a place that runs it): what they write is not taken as written now
	later bool
	via   string // command-level nesting: "xargs", "find -exec"
	// external: a wrapper ran it (command, env, sudo, nohup, xargs...),
	// which finds a program, never a function the script defined
	external bool
	priv     string // the privilege wrapper it runs under (sudo, doas), if any
	// privEnv: the privileged command gets an environment the script
	// chose (sudo -E, sudo VAR=x, env VAR=x after sudo): APT_CONFIG,
	// SYSTEMD_EDITOR and the like run code as root.
	privEnv bool
	// account: the wrapper runs it as a named account that is not root
	// (sudo -u www-data; runsAsAccount), and no wrapper after it escalates
	account bool
	// assigns are what the wrappers before it do to its environment, in
	// order: the NAME=VALUE words they set (env GOOSE_MODE=auto goose, env
	// -S 'RAILS_ENV=test rake', sudo NAME=VALUE), and marks for what they
	// clear, unset or leave unknown (see wrapperAssigns).
	assigns []arg
	// remote says it runs on another machine: the command of ssh HOST CMD,
	// kubectl exec|debug ... -- CMD, salt TARGET cmd.run CMD.
	remote bool
	sp     span // the statement it comes from
	// stmt is the statement's text as written (a PowerShell line that sh
	// split at its pipes is judged whole)
	stmt string
	// frame is the text of the whole script the command is part of
	frame string
	// files are the files the script wrote earlier, by fileKey.
	files map[string]written
	// captured says its output does not reach the job's output: $(...)
	// in another command's words or an assignment, or a pipe into a
	// command that reads a credential on stdin.
	captured bool
	// scratch are the resources made on the left of the && chains this
	// command is on the right of (see scratch.go).
	scratch []created
	// earlier are the resources statements before it made, succeeded or
	// not (see scratch.go).
	earlier []created
	// xtrace says set -x is on: the shell prints the command expanded.
	xtrace bool
	// vars are the script's variables when it runs (see printedID).
	vars map[string]value
}

// namedPaths returns the paths operand a names as written: itself when it
// is absolute or home-relative, else joined to each known working
// directory (and itself). An operand that is not a literal names no known
// path. paths adds what they alias.
func (c *command) namedPaths(a arg) []string {
	if !a.lit && c.cwd.unknown && c.cwd.env && len(c.cwd.vals) == 0 {
		if rel, ok := workdirRelative(a.src); ok {
			return []string{rel} // "$PWD/../x": ../x, from the job's working directory
		}
	}
	if !a.lit || a.val == "" {
		return nil
	}
	if isAbsolute(a.val) {
		return []string{a.val}
	}
	out := make([]string, 0, len(c.cwd.vals)+1)
	for _, dir := range c.cwd.vals {
		out = append(out, joinPath(dir, a.val))
	}
	return append(out, a.val)
}

// target is a path an operand names, with how a detail shows it.
type target struct {
	path string
	show string // quoted for a Reason: the word as written when it was expanded
	// guess is the operand read from the job's working directory although
	// the script's is known (cd DIR made it another): a fallback reading
	// for the rules about what a path is, not where the script stands.
	guess bool
}

// targets is paths with the way each is shown in a detail: the path, or
// the word as written when a variable or substitution produced it.
func (c *command) targets(a arg) []target {
	ps := c.paths(a)
	out := make([]target, len(ps))
	known := !c.cwd.unknown && len(c.cwd.vals) > 0 && !isAbsolute(a.val)
	for i, p := range ps {
		out[i] = target{path: p, show: quoteDetail(p), guess: known && p == a.val}
		if a.expanded {
			out[i].show = quoteDetail(a.src)
		}
	}
	return out
}

// isAbsolute reports whether p does not depend on the working directory.
func isAbsolute(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, homeMarker)
}

func joinPath(dir, p string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + p
	}
	return dir + "/" + p
}

// unwrapStatus says what a command line runs.
type unwrapStatus int

const (
	runsProgram    unwrapStatus = iota
	runsNothing                 // only names a program (command -v), or no words
	runsUnresolved              // the program name is not known
)

// unwrap strips wrapper programs from the front of words until it reaches
// the program that does the work. Every step consumes at least the
// wrapper's name (env -S adds the words of a strictly shorter string), so
// it terminates. For runsUnresolved it returns the word that names the
// program.
func unwrap(words []arg) (command, arg, unwrapStatus) {
	var priv string
	account := false
	var afterPriv []arg // the words after the privilege wrapper's name
	var assigns []arg   // what wrappers set in the program's environment
	external := false
	for len(words) > 0 {
		w := words[0]
		name, ok := programName(w)
		switch {
		case !ok:
			return command{}, w, runsUnresolved
		case name == "":
			return command{}, w, runsNothing
		}
		name = exeName(name)
		if mod, rest, ok := moduleProgram(name, words[1:]); ok {
			words, external = append([]arg{mod}, rest...), true // python -m pip install ...: pip install ...
			continue
		}
		strip, ok := wrappers[name]
		if ok && slices.Contains(envInjectors, name) {
			assigns = append(assigns, arg{val: envInjectedMark, lit: true})
		}
		if name == "env" { // not in the table: env -S parses, which would make an initialization cycle
			strip, ok = func(args []arg) ([]arg, bool) { return unwrapEnvInto(args, &assigns) }, true
		}
		if !ok {
			return command{name: name, prog: w.val, args: words[1:], priv: priv, privEnv: chosenEnv(afterPriv[:max(0, len(afterPriv)-len(words))]), account: account, external: external, assigns: assigns}, w, runsProgram
		}
		if name != "time" && name != "builtin" {
			external = true
		}
		if privileged[name] && infoOnly(words[1:]) {
			return command{}, w, runsNothing // sudo -V, pkexec --version: prints, runs nothing
		}
		if privileged[name] {
			as := runsAsAccount(name, words[1:])
			if priv == "" {
				priv, afterPriv, account = name, words[1:], as
			} else if !as {
				account = false // sudo -u www-data sudo CMD: root after all
			}
		}
		var more bool
		orig := words[1:]
		if words, more = strip(words[1:]); more && name == "sudo" && len(words) <= len(orig) {
			// sudo RAILS_ENV=production rake: the words the wrapper consumed
			for _, a := range orig[:len(orig)-len(words)] {
				if n, _, ok := strings.Cut(a.src, "="); ok && isName(n) {
					assigns = append(assigns, a)
				}
			}
		}
		if !more || len(words) == 0 {
			if privileged[name] { // sudo -s, sudo -l, doas with no command: judged by matchPrivilege
				return command{name: name, prog: w.val, args: orig}, w, runsProgram
			}
			if !more && len(orig) > 0 {
				// runs a script string (runuser -c, flock -c) or only looks a
				// name up (command -v): the program itself, for nest to judge
				return command{name: name, prog: w.val, args: orig, priv: priv, account: account}, w, runsProgram
			}
			return command{}, w, runsNothing
		}
	}
	return command{}, arg{}, runsNothing
}

// programName returns the name of the program a word runs: the base name
// of its path. A word with unknown parts names a known program only when
// its known end is a whole path component ($GOPATH/bin/tool is tool);
// globs and $HOME as the whole name are not known.
func programName(w arg) (string, bool) {
	p := w.val
	if !w.lit {
		i := strings.LastIndexByte(w.tail, '/')
		if i < 0 || i == len(w.tail)-1 {
			return "", false
		}
		p = w.tail[i:]
	}
	if p == "" {
		return "", true
	}
	name := path.Base(p)
	if windowsPath(p) {
		name = p[strings.LastIndexAny(p, `\/`)+1:]
	}
	if name != "[" && name != "[[" && strings.ContainsAny(name, "*?[") || strings.Contains(name, homeMarker) {
		return "", false
	}
	return name, true
}

// exeName returns the name a Windows program named with its extension
// (bash.exe, fsutil.EXE) is judged by: the name without it, when only that
// one is known to the detector.
func exeName(name string) string {
	if len(name) < 5 || !strings.EqualFold(name[len(name)-4:], ".exe") {
		return name
	}
	if knownProgram(name) {
		return name
	}
	if base := name[:len(name)-4]; knownProgram(base) {
		return base
	}
	return name
}

// knownProgram reports whether the detector judges the program by name.
func knownProgram(name string) bool {
	_, wrapper := wrappers[name]
	wrapper = wrapper && !sometimesLaunchers[name]
	return wrapper || name == "env" || matcherTable[canonical(name)] != nil || packTools[canonical(name)] != nil || shells[name] ||
		interpreterLang(name) != langShell || sqlClients[name] != nil || nestedPrograms[name]
}

// windowsPath reports a program named by a Windows path (C:\Tools\x.exe,
// "C:\Program Files\...\MpCmdRun.exe", .\x.exe): its name follows the
// last backslash.
func windowsPath(p string) bool {
	if !strings.Contains(p, `\`) {
		return false
	}
	return len(p) > 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z') ||
		strings.HasPrefix(p, `.\`) || strings.HasPrefix(p, `\\`) || strings.HasSuffix(strings.ToLower(p), ".exe")
}

// chosenEnv reports wrapper words that set the environment of the command
// they run: VAR=value, sudo -E or --preserve-env.
func chosenEnv(words []arg) bool {
	return slices.ContainsFunc(words, func(a arg) bool {
		name, _, ok := strings.Cut(a.val, "=")
		return !a.lit || a.val == "-E" || strings.HasPrefix(a.val, "--preserve-env") || ok && isName(name) ||
			strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.Contains(a.val, "E")
	})
}

// sudoSpec are sudo's options that take a value.
var sudoSpec = optSpec{short: "ugpCDrthTUR", long: []string{"user", "group", "prompt", "close-from", "chdir", "role", "type",
	"command-timeout", "other-user", "chroot", "host"}}

// runsAsAccount reports a privilege wrapper told to run its command as a
// named account that is not root, with the environment it keeps by
// default (sudo -u www-data php occ status, sudo -u postgres psql,
// doas -u git gitea admin user list): no escalation to root, the command
// is judged as what it does. Root by name or number, a group given
// (-g), a chosen environment, or an account only known at run time stay
// privilege.
func runsAsAccount(name string, args []arg) bool {
	var spec optSpec
	switch name {
	case "sudo":
		spec = sudoSpec
	case "doas":
		spec = optSpec{short: "uC"}
	default:
		return false
	}
	if chosenEnv(args) {
		return false
	}
	_, opts := skipOptions(args, spec)
	user := ""
	for _, o := range opts {
		if o.long && !strings.HasPrefix("user", o.name) {
			// sudo takes any unambiguous prefix of a long option (--sh
			// is --shell, --preserve-e is --preserve-env): only --user is read
			return false
		}
		switch o.name {
		case "u", "user", "us", "use":
			if !o.value.lit {
				return false
			}
			user = o.value.val
		case "g", "group", "R", "chroot", "r", "role", "t", "type", "s", "shell", "i", "login", "C", "D", "chdir":
			// another group, a root directory or SELinux role, or a login
			// shell (whose start-up files run as the account): not read here
			return false
		}
	}
	return accountName.MatchString(user) && !rootAccounts[user] && !dataStoreAccounts[user]
}

// accountFileTools are the programs that, run as a service's account,
// act on that service's files with its rights (sudo -u www-data rm
// /var/www/html/wp-config.php), where the job's own user could not, or
// run code the detector does not see (make, npm run): they stay
// privilege, as shells and programs the detector does not know do.
var accountFileTools = map[string]bool{"rm": true, "rmdir": true, "unlink": true, "mv": true, "cp": true, "truncate": true, "shred": true, "dd": true,
	"tee": true, "chmod": true, "chown": true, "chgrp": true, "ln": true, "install": true, "rsync": true, "find": true, "sed": true, "perl": true,
	"tar": true, "unzip": true, "touch": true, "mkdir": true, "python": true, "python3": true, "node": true, "ruby": true, "env": true, "xargs": true,
	"make": true, "gmake": true, "npm": true, "npx": true, "yarn": true, "pnpm": true, "composer": true, "bundle": true, "rake": true, "just": true, "task": true}

// accountRelaxed reports a command sudo -u ACCOUNT runs that is judged as
// what it does: a program the detector knows, not a file tool, runner or
// shell (an unknown ./x.sh as www-data is code run with the site's rights).
func accountRelaxed(c *command) bool {
	return c.account && !accountFileTools[c.name] && !shells[c.name] && knownProgram(c.name)
}

// dataStoreAccounts own a data store's files and are its superuser (psql
// as postgres reaches every database and the server's own files): running
// as them stays privilege.
var dataStoreAccounts = map[string]bool{"postgres": true, "postgresql": true, "pgsql": true, "mysql": true, "mariadb": true, "mongodb": true, "mongod": true,
	"redis": true, "cassandra": true, "clickhouse": true, "elasticsearch": true, "opensearch": true, "oracle": true, "mssql": true, "influxdb": true,
	"neo4j": true, "couchdb": true, "rabbitmq": true, "etcd": true, "zookeeper": true, "kafka": true, "minio": true, "vault": true, "consul": true,
	"gitlab-psql": true, "gitlab-redis": true}

// accountName is a user name given by name, not by number (#0, 0).
var accountName = regexp.MustCompile(`^[a-z_][a-z0-9_.-]*$`)

// rootAccounts are the names root goes by (toor: BSD's second root).
var rootAccounts = map[string]bool{"root": true, "toor": true}

// privileged are the wrappers that run their command as another user.
var privileged = map[string]bool{"sudo": true, "doas": true, "pkexec": true, "run0": true}

// A wrapper returns the words of the command it runs, or false if it runs
// none (or runs a script string, which the nesting code handles).
type wrapper func(args []arg) ([]arg, bool)

// wrappers are the programs whose operands are themselves a command line.
var wrappers = map[string]wrapper{
	"sudo":   sudo,
	"doas":   optionsThen(optSpec{short: "uC"}),
	"pkexec": optionsThen(optSpec{long: []string{"user"}}),
	"run0": optionsThen(optSpec{short: "uglDM", long: []string{"user", "group", "unit", "property",
		"description", "slice", "chdir", "setenv", "machine", "nice", "background"}}),
	"nice":         optionsThen(optSpec{short: "n", long: []string{"adjustment"}}),
	"nohup":        optionsThen(optSpec{}),
	"exec":         optionsThen(optSpec{short: "a"}),
	"time":         optionsThen(optSpec{short: "fo", long: []string{"format", "output"}}),
	"builtin":      func(args []arg) ([]arg, bool) { return args, true },
	"busybox":      func(args []arg) ([]arg, bool) { return args, true },
	"toybox":       func(args []arg) ([]arg, bool) { return args, true },
	"setsid":       optionsThen(optSpec{}),
	"stdbuf":       optionsThen(optSpec{short: "ioe", long: []string{"input", "output", "error"}}),
	"ionice":       optionsThen(optSpec{short: "cnpPu", long: []string{"class", "classdata", "pid", "pgid", "uid"}}),
	"unbuffer":     optionsThen(optSpec{}),
	"nsenter":      optionsThen(optSpec{short: "tSG", long: []string{"target", "setuid", "setgid"}}),
	"unshare":      optionsThen(optSpec{short: "SGRw", long: []string{"setuid", "setgid", "root", "wd", "propagation", "setgroups"}}),
	"strace":       optionsThen(optSpec{short: "abeEIoOpPsSuUX"}),
	"ltrace":       optionsThen(optSpec{short: "aenopsuwxADFl"}),
	"torsocks":     optionsThen(optSpec{short: "uapP"}),
	"proxychains":  optionsThen(optSpec{short: "f"}),
	"proxychains4": optionsThen(optSpec{short: "f"}),
	"systemd-run": optionsThen(optSpec{short: "upEHM", long: []string{"unit", "property", "description", "slice",
		"setenv", "host", "machine", "uid", "gid", "nice", "working-directory", "on-active", "on-boot", "on-startup",
		"on-unit-active", "on-unit-inactive", "on-calendar", "on-timer-property", "path-property", "socket-property",
		"service-type", "timer-property", "expand-environment", "slice-inherit", "json"}}),
	"logsave":          operandThen(optSpec{}),
	"setarch":          setarch,
	"linux32":          optionsThen(optSpec{}),
	"linux64":          optionsThen(optSpec{}),
	"sshpass":          optionsThen(optSpec{short: "pfdP"}),
	"cpulimit":         optionsThen(optSpec{short: "lpec", long: []string{"limit", "pid", "exe", "cpu"}}),
	"aa-exec":          optionsThen(optSpec{short: "pn", long: []string{"profile", "namespace"}}),
	"choom":            optionsThen(optSpec{short: "np", long: []string{"adjust", "pid"}}),
	"setpriv":          optionsThen(optSpec{long: []string{"reuid", "regid", "ruid", "rgid", "euid", "egid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits", "pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "ptracer"}}),
	"fakeroot":         optionsThen(optSpec{short: "lsib", long: []string{"lib", "faked"}}),
	"faketime":         operandThen(optSpec{}),
	"xvfb-run":         optionsThen(optSpec{short: "nespfw", long: []string{"server-num", "error-file", "server-args", "xauth-protocol", "auth-file", "wait"}}),
	"eatmydata":        optionsThen(optSpec{}),
	"sem":              gnuSem,
	"lckdo":            operandThen(optSpec{short: "w"}),
	"with-contenv":     optionsThen(optSpec{}),
	"run-one":          optionsThen(optSpec{}),
	"run-this-one":     optionsThen(optSpec{}),
	"keep-one-running": optionsThen(optSpec{}),
	"proot":            optionsThen(optSpec{short: "rbmwqk", long: []string{"rootfs", "bind", "mount", "cwd", "qemu", "kernel-release"}}),
	"dumb-init":        optionsThen(optSpec{short: "r", long: []string{"rewrite"}}),
	"tini":             optionsThen(optSpec{short: "pe"}),
	"catatonit":        optionsThen(optSpec{}),
	"chpst":            optionsThen(optSpec{short: "uUbeo/nlLmdocfrpCt"}),
	"dbus-launch":      optionsThen(optSpec{long: []string{"config-file", "autolaunch"}}),
	"trickle":          optionsThen(optSpec{short: "uDdwtlnL"}),
	"tsocks":           optionsThen(optSpec{}),
	"gdb":              gdbArgs,
	"nix":              nixCommand,
	"direnv":           wordThen(optSpec{}, "exec", "*"),
	"mise":             afterDashes("exec", "x"),
	"rtx":              afterDashes("exec", "x"),
	"asdf":             wordThen(optSpec{}, "exec"),
	"zammad":           wordThen(optSpec{}, "run"), // zammad run rails r CODE: the package's environment
	"pyenv":            wordThen(optSpec{}, "exec"),
	"rbenv":            wordThen(optSpec{}, "exec"),
	"nodenv":           wordThen(optSpec{}, "exec"),
	"goenv":            wordThen(optSpec{}, "exec"),
	"dotenv":           afterDashes("run"),
	// platform CLIs that run a command here with the project's variables
	"railway":               wordThen(optSpec{short: "se", long: []string{"service", "environment"}}, "run"),
	"netlify":               wordThen(optSpec{long: []string{"context", "filter"}}, "dev:exec"),
	"ntl":                   wordThen(optSpec{long: []string{"context", "filter"}}, "dev:exec"),
	"heroku":                wordThen(optSpec{short: "ep", long: []string{"env", "port"}}, "local:run"),
	"vercel":                wordThen(optSpec{short: "et", long: []string{"environment", "token", "scope", "cwd"}}, "env", "run"),
	"envchain":              operandThen(optSpec{long: []string{"set"}}),
	"nocache":               optionsThen(optSpec{short: "n"}),
	"catchsegv":             optionsThen(optSpec{}),
	"chronic":               optionsThen(optSpec{}),
	"dbus-run-session":      optionsThen(optSpec{long: []string{"config-file", "dbus-daemon"}}),
	"numactl":               optionsThen(optSpec{short: "imNCpP", long: []string{"interleave", "membind", "cpunodebind", "physcpubind", "preferred", "preferred-many"}}),
	"prlimit":               optionsThen(optSpec{short: "p", long: []string{"pid", "output"}}),
	"start-stop-daemon":     startStopDaemon,
	"multitime":             optionsThen(optSpec{short: "nsi"}),
	"rlwrap":                optionsThen(optSpec{short: "CDfFgHlOPsStz", long: []string{"break-chars", "command-name", "history-no-dupes", "file", "history-format", "forget-matching", "history-filename", "logfile", "only-cook", "prompt-colour", "pre-given", "histsize", "substitute-prompt", "set-term-name", "polling", "filter"}}),
	"setlock":               operandThen(optSpec{}),
	"systemd-inhibit":       optionsThen(optSpec{long: []string{"what", "who", "why", "mode"}}),
	"ip":                    ipNetnsExec,
	"coreutils":             coreutilsProg,
	"k3s":                   kubeDistro,
	"k0s":                   kubeDistro,
	"minikube":              kubeDistro,
	"microk8s":              kubeDistro,
	"wsl":                   wsl,
	"wsl.exe":               wsl,
	"conhost":               optionsThen(optSpec{long: []string{"width", "height", "signal", "feature"}}),
	"conhost.exe":           optionsThen(optSpec{long: []string{"width", "height", "signal", "feature"}}),
	"cmake":                 cmakeE,
	"ssh-agent":             optionsThen(optSpec{short: "aEPtO"}),
	"grc":                   optionsThen(optSpec{short: "c", long: []string{"config", "colour"}}),
	"xdotool":               xdotool,
	"ld.so":                 optionsThen(ldso),
	"ld-linux.so.2":         optionsThen(ldso),
	"ld-linux-x86-64.so.2":  optionsThen(ldso),
	"ld-linux-aarch64.so.1": optionsThen(ldso),
	"ld-musl-x86_64.so.1":   optionsThen(ldso),
	"capsh":                 capsh,
	"chroot":                operandThen(optSpec{long: []string{"userspec", "groups"}}),
	"taskset":               operandThen(optSpec{}),
	"run-as":                operandThen(optSpec{long: []string{"user"}}), // Android: run-as PACKAGE CMD, as the app's account
	"chrt":                  operandThen(optSpec{}),
	"timeout":               operandThen(optSpec{short: "sk", long: []string{"signal", "kill-after"}}),
	"flock":                 flock,
	"runuser":               runuser,
	"command": func(args []arg) ([]arg, bool) {
		rest, opts := skipOptions(args, optSpec{})
		for _, o := range opts {
			if o.name == "v" || o.name == "V" {
				return nil, false // command -v only looks the name up
			}
		}
		return rest, true
	},
}

// infoOnly reports arguments that only ask a privilege wrapper for its
// version or usage (sudo -V, sudo --help, pkexec --version, run0 -h).
func infoOnly(args []arg) bool {
	for _, a := range args {
		if !a.lit || a.val != "--version" && a.val != "--help" && a.val != "-V" && a.val != "-h" {
			return false
		}
	}
	return len(args) > 0
}

// sudo strips sudo's options; -e (sudoedit), -l, -v and -k run no command.
func sudo(args []arg) ([]arg, bool) {
	rest, opts := skipOptions(args, sudoSpec)
	for _, o := range opts {
		switch o.name {
		case "e", "edit", "l", "list", "v", "validate", "k", "K", "reset-timestamp", "remove-timestamp":
			return nil, false
		}
	}
	return rest, true
}

// kubeDistro: k3s kubectl ..., microk8s kubectl|helm|ctr ..., k0s ctr ...
// run the bundled tool; other subcommands are the distribution's own.
func kubeDistro(args []arg) ([]arg, bool) {
	if len(args) > 0 && args[0].lit {
		switch args[0].val {
		case "kubectl", "crictl", "ctr", "helm", "helm3":
			if len(args) > 1 && args[1].lit && args[1].val == "--" { // minikube kubectl -- delete ns x
				return append([]arg{args[0]}, args[2:]...), true
			}
			return args, true
		}
	}
	return nil, false
}

// setarch ARCH [OPTIONS] COMMAND...: its options may follow the architecture.
func setarch(args []arg) ([]arg, bool) {
	rest, _ := skipOptions(args, optSpec{})
	if len(rest) == 0 {
		return nil, false
	}
	if !rest[0].lit || archNames[rest[0].val] {
		rest, _ = skipOptions(rest[1:], optSpec{}) // setarch ARCH [-R] PROGRAM; newer ones take no ARCH
	}
	return rest, true
}

// archNames are setarch's architecture names.
var archNames = map[string]bool{"x86_64": true, "i386": true, "i486": true, "i586": true, "i686": true, "linux32": true, "linux64": true,
	"uname26": true, "aarch64": true, "arm64": true, "arm": true, "armv7l": true, "armv8l": true, "ppc": true, "ppc64": true, "ppc64le": true,
	"s390": true, "s390x": true, "sparc": true, "sparc64": true, "mips": true, "mips64": true, "riscv64": true, "parisc": true, "ia64": true, "alpha": true}

// wordThen returns a wrapper for LAUNCHER WORD... COMMAND: the launcher's
// options, then the words that are its own (a subcommand, a directory),
// then the command.
func wordThen(spec optSpec, words ...string) wrapper {
	return func(args []arg) ([]arg, bool) {
		rest, _ := skipOptions(args, spec)
		for _, w := range words {
			if len(rest) == 0 || !rest[0].lit || w != "*" && rest[0].val != w {
				return nil, false
			}
			rest, _ = skipOptions(rest[1:], spec)
		}
		return rest, len(rest) > 0
	}
}

// afterDashes returns a wrapper for LAUNCHER ... -- COMMAND (mise exec
// node@20 -- CMD), or LAUNCHER SUBCOMMAND COMMAND when it has no --.
func afterDashes(sub ...string) wrapper {
	return func(args []arg) ([]arg, bool) {
		for i, a := range args {
			if a.lit && a.val == "--" {
				return args[i+1:], i+1 < len(args)
			}
		}
		rest, _ := skipOptions(args, optSpec{})
		if len(rest) > 1 && rest[0].lit && slices.Contains(sub, rest[0].val) {
			rest, _ = skipOptions(rest[1:], optSpec{})
			return rest, len(rest) > 0
		}
		return nil, false
	}
}

// nixCommand: nix shell|develop ... --command (-c) COMMAND..., nix run
// INSTALLABLE -- ARGS (the installable's program).
func nixCommand(args []arg) ([]arg, bool) {
	for i, a := range args {
		if a.lit && (a.val == "--command" || a.val == "-c") {
			return args[i+1:], i+1 < len(args)
		}
	}
	return nil, false
}

// sometimesLaunchers run a command only in some forms (sem COMMAND, mise
// exec -- COMMAND); their other forms (Semaphore's sem delete project X,
// mise use node@20) are judged like any program's.
var sometimesLaunchers = map[string]bool{"sem": true, "mise": true, "rtx": true, "asdf": true, "pyenv": true, "rbenv": true,
	"nodenv": true, "goenv": true, "direnv": true, "dotenv": true, "nix": true, "gdb": true, "zammad": true,
	"railway": true, "netlify": true, "ntl": true, "heroku": true, "vercel": true}

// gnuSem is GNU parallel's sem [OPTIONS] COMMAND; Semaphore CI's sem
// CLI (sem delete project X) is a pack's tool, not a launcher.
func gnuSem(args []arg) ([]arg, bool) {
	rest, _ := skipOptions(args, optSpec{short: "jP", long: []string{"id", "jobs", "semaphore-name", "semaphore-timeout", "semaphoretimeout", "timeout"}})
	if len(rest) == 0 || rest[0].lit && semaphoreVerbs[rest[0].val] {
		return nil, false
	}
	return rest, true
}

// semaphoreVerbs are the subcommands of Semaphore CI's sem.
var semaphoreVerbs = map[string]bool{"create": true, "delete": true, "get": true, "edit": true, "apply": true, "attach": true, "debug": true,
	"init": true, "connect": true, "context": true, "logs": true, "rebuild": true, "stop": true, "troubleshoot": true, "port-forward": true, "version": true}

// gdbArgs: gdb -batch -ex run --args PROGRAM ARGS... runs PROGRAM.
func gdbArgs(args []arg) ([]arg, bool) {
	for i, a := range args {
		if a.lit && (a.val == "--args" || a.val == "-args") {
			return args[i+1:], i+1 < len(args)
		}
	}
	return nil, false
}

// start-stop-daemon --start --exec PROGRAM -- ARGS...: the program is the
// value of --exec (or --startas), its arguments follow --.
func startStopDaemon(args []arg) ([]arg, bool) {
	rest, opts := skipOptions(args, optSpec{short: "xapnuNPrcgdkRsOI", long: []string{"exec", "startas", "pidfile", "name",
		"user", "chuid", "group", "chroot", "chdir", "nicelevel", "procsched", "iosched", "umask", "retry", "signal",
		"output", "notify-timeout", "ppid"}})
	prog := arg{}
	for _, o := range opts {
		if o.name == "a" || o.name == "startas" || prog.val == "" && (o.name == "x" || o.name == "exec") {
			prog = o.value
		}
	}
	if prog.val == "" {
		return nil, false
	}
	return append([]arg{prog}, rest...), true
}

// ldso are the dynamic loader's options (ld.so PROGRAM ARGS... runs PROGRAM).
var ldso = optSpec{long: []string{"library-path", "preload", "argv0", "audit", "inhibit-rpath", "glibc-hwcaps-prepend", "glibc-hwcaps-mask"}}

// xdotool exec [--sync] [--args N] [--terminator T] COMMAND...
func xdotool(args []arg) ([]arg, bool) {
	if len(args) == 0 || !args[0].lit || args[0].val != "exec" {
		return nil, false
	}
	rest, _ := skipOptions(args[1:], optSpec{long: []string{"args", "terminator"}})
	return rest, true
}

// capsh [OPTIONS] -- ARGS...: the words after -- are arguments of a shell
// (bash, or --shell=PROGRAM).
func capsh(args []arg) ([]arg, bool) {
	shell := arg{val: "bash", lit: true, exact: -1}
	for i, a := range args {
		if !a.lit {
			continue
		}
		if v, ok := strings.CutPrefix(a.val, "--shell="); ok {
			shell = arg{val: v, lit: true, pos: a.pos, end: a.end, exact: -1}
		}
		if a.val == "--" {
			return append([]arg{shell}, args[i+1:]...), true
		}
	}
	return nil, false
}

// ipNetnsExec: ip [-n NS] netns exec NAME COMMAND... runs COMMAND.
func ipNetnsExec(args []arg) ([]arg, bool) {
	rest, _ := skipOptions(args, optSpec{short: "nbf", long: []string{"netns", "batch", "family"}})
	if len(rest) >= 3 && rest[0].lit && rest[1].lit && strings.HasPrefix("netns", rest[0].val) && rest[1].val == "exec" {
		return rest[3:], true
	}
	return nil, false
}

// coreutilsProg: the multi-call coreutils --coreutils-prog=NAME ARGS runs
// NAME with ARGS.
func coreutilsProg(args []arg) ([]arg, bool) {
	if len(args) > 0 && args[0].lit {
		if v, ok := strings.CutPrefix(args[0].val, "--coreutils-prog="); ok && v != "" {
			name := args[0]
			name.val, name.exact = v, -1
			return append([]arg{name}, args[1:]...), true
		}
	}
	return nil, false
}

// wsl [-d DISTRO] [-u USER] [--cd DIR] [-e|--exec|--] COMMAND... runs
// COMMAND in the Linux distribution; management options (--list,
// --unregister, ...) run none.
func wsl(args []arg) ([]arg, bool) {
	rest, opts := skipOptions(args, optSpec{short: "du", long: []string{"distribution", "user", "cd", "shell-type", "distribution-id"}})
	for _, o := range opts {
		switch o.name {
		case "d", "distribution", "u", "user", "cd", "shell-type", "distribution-id", "e", "exec":
		default:
			return nil, false
		}
	}
	return rest, len(rest) > 0
}

// cmakeE: cmake -E rm|remove|remove_directory ARGS deletes like rm -r.
func cmakeE(args []arg) ([]arg, bool) {
	if len(args) < 2 || !args[0].lit || args[0].val != "-E" || !args[1].lit {
		return nil, false
	}
	rm := args[1]
	rm.val, rm.exact = "rm", -1
	switch args[1].val {
	case "time":
		return args[2:], true // cmake -E time COMMAND...
	case "chdir":
		if len(args) > 3 {
			return args[3:], true // cmake -E chdir DIR COMMAND...
		}
		return nil, false
	case "env":
		// cmake -E env [--unset=NAME | --modify ... | NAME=VALUE]... COMMAND...
		rest := args[2:]
		for len(rest) > 0 && rest[0].lit && (strings.HasPrefix(rest[0].val, "-") || strings.Contains(rest[0].val, "=")) {
			if rest[0].val == "--" {
				rest = rest[1:]
				break
			}
			rest = rest[1:]
		}
		return rest, len(rest) > 0
	case "rm", "remove":
		return append([]arg{rm}, args[2:]...), true
	case "remove_directory", "rm_rf":
		flag := rm
		flag.val = "-rf"
		return append([]arg{rm, flag}, args[2:]...), true
	}
	return nil, false
}

// flock LOCK COMMAND...; flock -c STRING is a script (see nested.go).
func flock(args []arg) ([]arg, bool) {
	rest, opts := skipOptions(args, optSpec{short: "wEc", long: []string{"timeout", "conflict-exit-code", "command"}})
	for _, o := range opts {
		if o.name == "c" || o.name == "command" {
			return nil, false
		}
	}
	if len(rest) < 2 {
		return nil, false
	}
	if rest[1].lit && (rest[1].val == "-c" || rest[1].val == "--command") {
		return nil, false // flock LOCK -c STRING: a script, as before the lock
	}
	return rest[1:], true
}

// runuser -u USER COMMAND...; runuser -c STRING is a script.
func runuser(args []arg) ([]arg, bool) {
	rest, opts := skipOptions(args, optSpec{short: "ugGcsw", long: []string{"user", "group", "supp-group", "command", "shell", "whitelist-environment"}})
	user := false
	for _, o := range opts {
		if o.name == "c" || o.name == "command" || o.name == "l" || o.name == "login" {
			return nil, false
		}
		user = user || o.name == "u" || o.name == "user"
	}
	if !user {
		return nil, false // runuser USER [-c CMD]: su's form, judged as su (nest)
	}
	return rest, true
}

// envAssign is a NAME=VALUE word as written, its value not a literal.
var envAssign = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)

// envAssignKeepsPath reports a NAME=VALUE word whose value is only known
// at run time and cannot split into more words (its expansions are all
// in double quotes), for a NAME that does not make programs run code
// (see envCodes) and is not PATH, or is PATH set to itself
// (env -i PATH="$PATH" HOME="$HOME" npm test): an assignment, which does
// not change which program runs.
func envAssignKeepsPath(src string) bool {
	m := envAssign.FindStringSubmatch(src)
	if m == nil || !quotedExpansions(m[2]) {
		return false
	}
	if _, ok := lookupEnvCode(m[1]); ok {
		return false
	}
	if m[1] != "PATH" {
		return true
	}
	switch m[2] {
	case `"$PATH"`, `"${PATH}"`:
		return true
	}
	return false
}

// quotedExpansions reports a word, as written, whose $ and ` expansions
// are all inside double quotes: it is one field whatever they give.
func quotedExpansions(w string) bool {
	open, bare := shellQuotes(w)
	return open == 0 && !bare
}

// shellQuotes scans shell text and returns the quote left open at its end
// (0, ' or "), and whether a $ or ` expansion stands outside double
// quotes.
func shellQuotes(s string) (open byte, bareExpansion bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case open == '\'':
			if c == '\'' {
				open = 0
			}
		case c == '\\':
			i++
		case c == '"':
			open ^= '"' // opens or closes: nothing else is open here
		case c == '\'' && open == 0:
			open = '\''
		case (c == '$' || c == '`') && open == 0:
			bareExpansion = true
		}
	}
	return open, bareExpansion
}

// envCleared, envUnset and envInjectedMark mark, among a command's
// assigns, env -i (the environment emptied), env -u NAME (one variable
// removed) and a runner that sets variables of its own.
const (
	envCleared      = "\x00clear"
	envUnset        = "\x00unset="
	envInjectedMark = "\x00injected" // railway run, sudo: the runner sets variables of its own
)

// unwrapEnvInto strips env's options and NAME=VALUE words, adding to
// assigns, when not nil, the assignments it strips and the variables it
// clears or removes. With -S (split string) the string is split into
// words the way a shell would and those words lead the command.
func unwrapEnvInto(args []arg, assigns *[]arg) ([]arg, bool) {
	rest, opts := skipOptions(args, optSpec{short: "uCSP", long: []string{"unset", "chdir", "split-string"}})
	if assigns != nil {
		for _, o := range opts {
			switch {
			case o.name == "i" || o.name == "" || len(o.name) >= 2 && strings.HasPrefix("ignore-environment", o.name):
				*assigns = append(*assigns, arg{val: envCleared, lit: true}) // env -i, env -, --ignore-e: an empty environment
			case o.name == "u" || len(o.name) >= 2 && strings.HasPrefix("unset", o.name):
				*assigns = append(*assigns, arg{val: envUnset + o.value.val, src: envUnset + o.value.src, lit: o.value.lit})
			}
		}
	}
	stripAssigns := func() {
		for len(rest) > 0 && (rest[0].lit && strings.Contains(rest[0].val, "=") || envAssignKeepsPath(rest[0].src)) {
			if assigns != nil {
				*assigns = append(*assigns, rest[0])
			}
			rest = rest[1:]
		}
	}
	if !slices.ContainsFunc(opts, func(o option) bool { return o.name == "S" || o.name == "split-string" }) {
		stripAssigns()
	}
	for _, o := range opts {
		if o.name == "C" || o.name == "chdir" {
			// env -C DIR COMMAND runs COMMAND in DIR: a directory this
			// reading does not follow
			return []arg{{taint: taintUnknown, pos: o.value.pos, end: o.value.end, src: o.value.src, exact: -1}}, true
		}
		if o.name != "S" && o.name != "split-string" {
			continue
		}
		if !o.value.lit {
			return []arg{o.value}, true // an unknown program
		}
		split, ok := splitWords(o.value)
		if !ok {
			return []arg{{val: "", lit: false, taint: taintUnknown, pos: o.value.pos, end: o.value.end, exact: -1}}, true
		}
		rest = append(split, rest...)
		stripAssigns() // env -S 'NODE_ENV=test node --test'
	}
	return rest, true
}

// splitWords splits a literal into words as the shell would for a single
// simple command, without expanding anything.
func splitWords(a arg) ([]arg, bool) {
	// behind a word of its own, so that NAME=VALUE words stay words (env
	// -S 'NODE_ENV=test node --test' sets NODE_ENV, as env NAME=VALUE does)
	val := strings.ReplaceAll(a.val, `\_`, " ") // env -S 'rm\_-rf\_~': \_ separates words
	if strings.Contains(val, `\`) {
		return nil, false // env's other escapes (\c, \t, \$): not read here
	}
	src := "_ " + strings.ReplaceAll(val, homeMarker, "$HOME") // expanded again to the home directory
	f, err := parse(src)
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	w := &walker{env: newEnv(), d: &detector{}, f: &frame{src: src}}
	stmt := f.Stmts[0]
	if len(stmt.Redirs) > 0 {
		return nil, false
	}
	lists := w.argListsOf(stmt)
	if len(lists) != 1 || len(lists[0]) == 0 {
		return nil, false
	}
	lists[0] = lists[0][1:]
	for i := range lists[0] {
		lists[0][i].pos, lists[0][i].end, lists[0][i].exact = a.pos, a.end, -1
	}
	return lists[0], true
}

// optionsThen returns a wrapper that skips options and runs the rest.
func optionsThen(spec optSpec) wrapper {
	return func(args []arg) ([]arg, bool) {
		rest, _ := skipOptions(args, spec)
		return rest, true
	}
}

// operandThen returns a wrapper that skips options and one operand (a
// duration, a CPU mask, a new root) and runs the rest.
func operandThen(spec optSpec) wrapper {
	return func(args []arg) ([]arg, bool) {
		rest, _ := skipOptions(args, spec)
		if len(rest) == 0 {
			return nil, false
		}
		return rest[1:], true
	}
}

// workdirParent matches a word that names a path above the job's working
// directory through the shell's own name for it: "$PWD/../x",
// "$(pwd)/..", "$(git rev-parse --show-toplevel)/../x", "$(dirname "$PWD")".
var workdirParent = regexp.MustCompile(`^"?(?:\$PWD|\$\{PWD\}|\$\(\s*pwd\s*\)|` + "`pwd`" + `|\$\(\s*git\s+rev-parse\s+--show-toplevel\s*\))((?:/\.\.)+(?:/[^"$` + "`" + `\\*?\[]*)?)/?"?$|^"?\$\(\s*dirname\s+"?(?:\$PWD|\$\{PWD\}|\$\(\s*pwd\s*\))"?\s*\)((?:/[^"$` + "`" + `\\*?\[]*)?)/?"?$`)

// workdirRelative returns the path, relative to the job's working
// directory, that a word built from the working directory's own name and
// "/.." names (../x), when the word's source text is of that form.
func workdirRelative(src string) (string, bool) {
	m := workdirParent.FindStringSubmatch(src)
	switch {
	case m == nil:
		return "", false
	case m[1] != "":
		return strings.TrimPrefix(m[1], "/"), true
	}
	return ".." + m[2], true
}

// modulePrograms are Python modules run by python -m that are the
// program of the same command line under another name.
var modulePrograms = map[string]string{
	"pip": "pip", "pip3": "pip", "pipx": "pipx", "twine": "twine", "awscli": "aws", "poetry": "poetry",
	"pdm": "pdm", "hatch": "hatch", "conda": "conda", "uv": "uv", "mlflow": "mlflow", "wandb": "wandb",
	"airflow": "airflow", "celery": "celery", "django": "django-admin", "sqlite3": "sqlite3", "dbt": "dbt",
	"pre_commit": "pre-commit", "build": "pyproject-build", "ansible": "ansible", "huggingface_hub": "huggingface-cli",
}

// moduleProgram returns, for python -m MODULE ARGS where the module is
// one of modulePrograms, the program's name as a word and ARGS.
func moduleProgram(name string, args []arg) (arg, []arg, bool) {
	if interpreterLang(name) != langPython && name != "py" {
		return arg{}, nil, false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		if !a.lit || len(v) < 2 || v[0] != '-' || strings.HasPrefix(v, "--") {
			return arg{}, nil, false
		}
		flags := strings.TrimLeft(v[1:], "bBdEhiIOPqsSuvx") // python -I -u -m: options without a value
		switch {
		case flags == "":
			continue
		case flags == "W" || flags == "X":
			i++ // -W ignore, -X utf8: a value
			continue
		case flags[0] != 'm':
			return arg{}, nil, false
		}
		mod, rest := flags[1:], args[i+1:]
		if mod == "" && len(rest) > 0 && rest[0].lit {
			mod, rest = rest[0].val, rest[1:]
		}
		prog, ok := modulePrograms[mod]
		if !ok {
			return arg{}, nil, false
		}
		if mod == "django" && len(rest) > 0 && rest[0].val == "shell" {
			return arg{}, nil, false // python -m django shell -c CODE: Python code, judged as python's
		}
		return arg{val: prog, src: a.src, lit: true, pos: a.pos, end: a.end, exact: -1}, rest, true
	}
	return arg{}, nil, false
}
