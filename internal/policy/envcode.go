package policy

import (
	"fmt"
	"slices"
	"strings"
)

// envCode is an environment variable, or a family of them (prefix), that
// makes a shell, an interpreter or the dynamic loader run code, or read
// the command differently, without the command text showing it. A job
// that sets one is refused with env-code whatever its value: the detector
// judges the command, not what such a variable makes run.
type envCode struct {
	name   string
	prefix bool   // name is a prefix: LD_ stands for LD_PRELOAD, LD_AUDIT, ...
	reason string // one line, for the Decision reason
	// safe, when set, admits the values that run nothing the command
	// does not show (PAGER=cat, GIT_EDITOR=true).
	safe func(v string) bool
}

// envCodes is the table behind the env-code rule, grouped by who reads the
// variable. PATH is checked separately (see pathEnvOK).
var envCodes = []envCode{
	// Shells.
	{name: "BASH_ENV", reason: "bash sources the file it names before running the command"},
	{name: "ENV", reason: "sh, dash, ksh and bash --posix source the file it names"},
	{name: "BASH_FUNC_", prefix: true, reason: "bash imports it as a function, which replaces the command of that name"},
	{name: "SHELLOPTS", reason: "bash turns on the listed options at start (xtrace with PS4, ...)"},
	{name: "BASHOPTS", reason: "bash turns on the listed shopt options at start (extdebug, ...)"},
	{name: "PS4", reason: "expanded, command substitutions included, before every traced command (set -x)"},
	{name: "PS0", reason: "expanded with command substitutions by an interactive bash"},
	{name: "PS1", reason: "expanded with command substitutions by an interactive shell"},
	{name: "PS2", reason: "expanded with command substitutions by an interactive shell"},
	{name: "PROMPT_COMMAND", reason: "run by an interactive bash before each prompt"},
	{name: "IFS", reason: "changes how the shell splits words, so the command runs differently from how it reads"},
	{name: "CDPATH", reason: "cd DIR may enter a directory under it, so relative paths name other files than they read"},
	{name: "ZDOTDIR", reason: "zsh sources its start-up files from it"},
	// The dynamic loader and the C library.
	{name: "LD_", prefix: true, reason: "the dynamic loader reads it: LD_PRELOAD, LD_AUDIT and LD_LIBRARY_PATH load code into every program"},
	{name: "DYLD_", prefix: true, reason: "the macOS dynamic loader reads it: DYLD_INSERT_LIBRARIES loads code into every program"},
	{name: "GCONV_PATH", reason: "glibc's iconv loads conversion modules (code) from it"},
	{name: "GLIBC_TUNABLES", reason: "glibc tunables, parsed by the loader of every program (CVE-2023-4911)"},
	{name: "MALLOC_", prefix: true, reason: "glibc's allocator reads it in every program; a classic way into setuid programs"},
	{name: "LOCPATH", reason: "glibc loads locale data from it"},
	{name: "NLSPATH", reason: "catopen loads message catalogs (format strings) from it"},
	{name: "HOSTALIASES", reason: "the resolver reads host aliases from the file it names"},
	// Interpreters.
	{name: "PYTHONSTARTUP", reason: "python runs the file it names at start"},
	{name: "PYTHONPATH", reason: "python imports modules from it before the standard ones"},
	{name: "PYTHONHOME", reason: "python loads its standard library (site.py) from it"},
	{name: "PYTHONUSERBASE", reason: "python runs the .pth files of the site-packages under it"},
	{name: "PYTHONBREAKPOINT", reason: "python imports and calls the callable it names at breakpoint()"},
	{name: "PYTHONWARNINGS", reason: "python imports the module named by a warning category in it", safe: noModule},
	{name: "PERL5OPT", reason: "perl adds its switches to every run (-M loads a module, -e is code)"},
	{name: "PERL5LIB", reason: "perl loads modules from it first"},
	{name: "PERLLIB", reason: "perl loads modules from it first"},
	{name: "PERL5DB", reason: "perl -d runs it as the debugger's code"},
	{name: "RUBYOPT", reason: "ruby adds its switches to every run (-r loads code)"},
	{name: "RUBYLIB", reason: "ruby loads libraries from it first"},
	{name: "NODE_OPTIONS", reason: "node adds its options to every run (--require, --import load code)"},
	{name: "NODE_PATH", reason: "node resolves modules from it"},
	{name: "JAVA_TOOL_OPTIONS", reason: "the JVM adds its options to every run (-javaagent loads code)"},
	{name: "_JAVA_OPTIONS", reason: "the JVM adds its options to every run (-javaagent loads code)"},
	{name: "JDK_JAVA_OPTIONS", reason: "the java launcher adds its options (-javaagent loads code)"},
	{name: "OPENSSL_CONF", reason: "OpenSSL loads the configuration it names, which may load engines (code)"},
	// Git and the programs it and other tools start.
	{name: "GIT_SSH_COMMAND", reason: "git runs it as a shell command to reach a remote"},
	{name: "GIT_SSH", reason: "git runs the program it names to reach a remote"},
	{name: "GIT_EXEC_PATH", reason: "git runs its subcommands from it"},
	{name: "GIT_PROXY_COMMAND", reason: "git runs it to connect to git:// remotes"},
	{name: "GIT_ASKPASS", reason: "git runs it to ask for credentials"},
	{name: "GIT_EXTERNAL_DIFF", reason: "git diff runs it"},
	{name: "GIT_EDITOR", reason: "git runs it as a shell command for commit messages and rebases", safe: plainEditor},
	{name: "GIT_SEQUENCE_EDITOR", reason: "git rebase -i runs it as a shell command for the todo list", safe: plainEditor},
	{name: "GIT_PAGER", reason: "git runs it as a shell command for its output", safe: plainPager},
	{name: "GIT_TEMPLATE_DIR", reason: "git init and clone copy hooks (code) from it"},
	{name: "GIT_CONFIG", prefix: true, reason: "git configuration from the environment (core.sshCommand, core.fsmonitor, aliases run code)"},
	{name: "SSH_ASKPASS", reason: "ssh runs it to ask for a passphrase"},
	{name: "SUDO_ASKPASS", reason: "sudo -A runs it"},
	{name: "EDITOR", reason: "git, crontab -e, less v and others run it", safe: plainEditor},
	{name: "VISUAL", reason: "git, crontab -e and others run it", safe: plainEditor},
	{name: "KUBE_EDITOR", reason: "kubectl edit runs it as a shell command", safe: plainEditor},
	{name: "SVN_EDITOR", reason: "svn runs it as a shell command for log messages", safe: plainEditor},
	{name: "HGEDITOR", reason: "hg runs it as a shell command for commit messages", safe: plainEditor},
	{name: "FCEDIT", reason: "the shell's fc runs it on the history it edits", safe: plainEditor},
	{name: "PAGER", reason: "man, git and others run it as a shell command", safe: plainPager},
	{name: "MANPAGER", reason: "man runs it as a shell command", safe: plainPager},
	{name: "LESSOPEN", reason: "less runs it as an input preprocessor"},
	{name: "LESSCLOSE", reason: "less runs it as an input postprocessor"},
}

// plainPager admits a pager that only shows its input.
func plainPager(v string) bool { return slices.Contains([]string{"", "cat", "less", "more"}, v) }

// plainEditor admits an editor that runs nothing else (GIT_EDITOR=true
// accepts the message as it is).
func plainEditor(v string) bool {
	return slices.Contains([]string{"", "true", ":", "cat", "vi", "vim", "nano"}, v)
}

// noModule admits warning filters whose categories are built-in names: a
// dotted category (mod.Warning) is imported.
func noModule(v string) bool { return !strings.Contains(v, ".") }

// standardPath are the directories a job's PATH may list: the ones every
// distribution puts there and only root can write.
var standardPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// pathEnvOK reports whether a job's PATH only lists standard directories.
// Anything else (another directory, a relative one, an empty entry, which
// means the working directory) decides which program a name runs, and the
// detector judges programs by name.
func pathEnvOK(v string) bool {
	for _, dir := range strings.Split(v, ":") {
		if !strings.HasPrefix(dir, "/") || !slices.Contains(standardPath, canonicalPath(dir)) {
			return false
		}
	}
	return true
}

// lookupEnvCode returns the table entry for the variable name, if any.
func lookupEnvCode(name string) (envCode, bool) {
	for _, c := range envCodes {
		if name == c.name || c.prefix && strings.HasPrefix(name, c.name) {
			return c, true
		}
	}
	return envCode{}, false
}

// envFindings returns an env-code finding for every variable of the job's
// environment that makes something run code; secret names the variables
// whose values are sealed (unknown). Details name the variable, never its
// value. They are sorted by name, so decisions are stable.
func envFindings(vars map[string]string, secret []string) []finding {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []finding
	for _, k := range names {
		v, known := vars[k], !slices.Contains(secret, k)
		var why string
		switch c, ok := lookupEnvCode(k); {
		case ok && (!known || c.safe == nil || !c.safe(v)):
			why = c.reason
		case ok:
			continue
		case k == "PATH" && !known:
			why = "a secret PATH decides which programs run"
		case k == "PATH" && !pathEnvOK(v):
			why = "it lists directories other than " + strings.Join(standardPath, ":") + ", which decide which programs run"
		case known && strings.HasPrefix(strings.TrimLeft(v, " \t\n"), "()"):
			why = "its value is a function definition, which older bash imports and runs"
		default:
			continue
		}
		out = append(out, finding{rule: ruleEnvCode, text: k, detail: fmt.Sprintf("job env %s: %s", quoteDetail(k), why)})
	}
	return out
}
