package policy

import (
	"cmp"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// lang is the language of code a command runs.
type lang int

const (
	langShell lang = iota
	langSQL
	langPython
	langPerl
	langRuby
	langNode
	langPHP
	langLua
	langAwk
)

// shells are the programs that run shell code (-c STRING, a script, stdin).
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "yash": true, "posh": true, "rbash": true, "fish": true, "csh": true, "tcsh": true,
}

// nestedPrograms are the programs nest walks by name (besides shells,
// interpreters, database clients and the packs' tools).
var nestedPrograms = map[string]bool{
	"eval": true, "su": true, "runuser": true, "flock": true, "script": true, "trap": true, "alias": true, "watch": true,
	"ssh": true, "autossh": true, "mosh": true, "source": true, ".": true, "at": true, "batch": true, "xargs": true, "find": true, "parallel": true,
	"tclsh": true, "wish": true, "expect": true, "jimsh": true, "sed": true, "gsed": true, "rg": true, "git": true,
	"fd": true, "fdfind": true,
}

// code is a script a command hands to a shell, an interpreter or a
// database client.
type code struct {
	text   string
	alt    string // a second reading of text, or ""
	known  bool
	taint  taint  // where unknown code comes from
	file   bool   // read from a file the detector does not read
	base   int    // offset where text appears verbatim in the source of f, or -1
	anchor int    // offset of the word that holds it
	f      *frame // the frame base and anchor refer to; nil for the current one
	// fromStdin says the code is what the command reads on stdin.
	fromStdin bool
	// home says text's $HOME is the home directory the shell expanded
	// (python3 -c "shutil.rmtree('$HOME')"), not one written in the code
	home bool
}

// argCode is a word used as code.
func argCode(a arg) code {
	c := code{text: codeText(a), known: a.lit, taint: a.taint, base: a.exact, anchor: a.pos, home: strings.Contains(a.val, homeMarker)}
	if c.text != a.val && strings.Contains(a.val, "./~") {
		c.base = -1 // the text differs from the source there
	}
	return c
}

// codeText is an argument's value as the text of a script: $HOME for the
// home, and a tilde the detector keeps as ./~ (a literal one, not the
// home where it was written: x='~') a tilde again when the source does
// not hold ./~ itself: sh -c "rm -rf $x" reads it as the home.
func codeText(a arg) string {
	t := strings.ReplaceAll(a.val, homeMarker, "$HOME")
	if strings.Contains(t, "./~") && !strings.Contains(a.src, "./~") {
		t = strings.ReplaceAll(t, "./~", "~")
	}
	return t
}

// nest walks what c runs besides itself: scripts (sh -c, eval, heredocs
// into shells), the commands of xargs, find -exec and parallel, inline
// interpreter code, and the body of a function the script defined.
// gitEnvConfig judges configuration git takes from its environment
// (GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n,
// GIT_CONFIG_PARAMETERS): an alias whose value starts with ! is a shell
// command, run when the alias is.
func (w *walker) gitEnvConfig(c *command) {
	for name, v := range c.vars {
		if v.unknown || !strings.HasPrefix(name, "GIT_CONFIG_VALUE_") && name != "GIT_CONFIG_PARAMETERS" {
			continue
		}
		for _, val := range v.vals {
			script := ""
			if name == "GIT_CONFIG_PARAMETERS" {
				if _, after, ok := strings.Cut(val, "=!"); ok {
					script = strings.TrimRight(after, "'\" ")
				}
			} else if s, ok := strings.CutPrefix(val, "!"); ok {
				script = s
			}
			if script != "" {
				w.runCode(c, langShell, code{text: script, known: true, base: -1, anchor: c.sp.start}, "git alias from "+name, c.sp, nil, false)
			}
		}
	}
}

// unknownLauncher judges the command an unknown program may launch: its
// first word after its leading options names a program the detector
// knows, and arguments follow (dumb-init rm -rf ~, a launcher no table
// lists). A launcher's own operands before the command (a lock file, a
// directory) stop the search: the guess stays narrow.
func (w *walker) unknownLauncher(c *command) {
	if !genericProgram(c.name) || projectProgram(c.prog) || textPrograms[c.name] ||
		slices.ContainsFunc(packAny, func(t *packTool) bool { return t.except[c.name] }) {
		return // true rm -rf /usr runs nothing; grep kubectl delete reads text
	}
	rest, _ := skipOptions(c.args, optSpec{})
	if len(rest) < 2 || !rest[0].lit {
		return
	}
	if name, ok := plainProgramName(rest[0]); ok && knownProgram(name) && !textPrograms[name] {
		w.run(rest, c.stdin, c.sp, joinVia(c.via, c.name), false)
	}
}

// textPrograms read their operands as text or names, never as a command
// line: an unknown program's "echo" or "cat" operand launches nothing of
// note.
var textPrograms = map[string]bool{"echo": true, "printf": true, "cat": true, "true": true, "false": true, ":": true, "test": true, "[": true,
	"man": true, "help": true, "which": true, "type": true, "command": true}

// deno judges deno eval CODE as JavaScript, and deno run (or deno
// without a subcommand, or x) of a URL as code fetched from the network.
func (w *walker) deno(c *command) {
	rest, _ := skipOptions(c.args, optSpec{long: []string{"config", "import-map", "location", "seed", "v8-flags", "cert", "lock", "reload",
		"allow-read", "allow-write", "allow-net", "allow-env", "allow-run", "allow-ffi", "allow-sys", "deny-read", "deny-write", "deny-net",
		"deny-env", "deny-run", "deny-ffi", "deny-sys", "inspect", "inspect-brk", "inspect-wait", "env-file", "ext", "unsafely-ignore-certificate-errors"}})
	if len(rest) == 0 || !rest[0].lit {
		return
	}
	sub, ops := rest[0].val, rest[1:]
	switch sub {
	case "eval":
		code, _ := skipOptions(ops, optSpec{long: []string{"ext", "env-file", "config", "import-map", "location", "seed", "v8-flags", "cert", "lock"}})
		if len(code) > 0 {
			w.runCode(c, langNode, argCode(code[0]), "deno eval", c.sp, nil, false)
		}
		return
	case "run", "x", "install", "compile":
		ops, _ = skipOptions(ops, optSpec{long: []string{"config", "import-map", "location", "seed", "v8-flags", "cert", "lock", "env-file", "ext", "name", "root", "output", "target", "allow-read", "allow-write", "allow-net", "allow-env", "allow-run", "allow-ffi", "allow-sys"}})
	default:
		ops = rest
	}
	if len(ops) > 0 && ops[0].lit && (strings.HasPrefix(ops[0].val, "http://") || strings.HasPrefix(ops[0].val, "https://")) && sub != "compile" {
		w.d.add(w.f, rulePipeToShell, "deno "+sub+" runs code downloaded from the network", c.via, c.sp)
	}
}

func (w *walker) nest(c *command) {
	w.pathShadow(c)
	w.packNest(c)
	w.npmScripts(c)
	w.unknownLauncher(c)
	if u, ok := remotePackage(c); ok {
		w.d.add(w.f, rulePipeToShell, c.name+" runs a program fetched from "+quoteDetail(u), c.via, c.sp)
	}
	if f, ok := w.installsDownload(c); ok {
		w.d.add(w.f, rulePipeToShell, c.name+" installs "+quoteDetail(f)+", downloaded from the network", c.via, c.sp)
	}
	if words, ok := apiRequest(c); ok {
		w.run(words, c.stdin, c.sp, joinVia(c.via, c.name+" api"), false)
	}
	switch c.name {
	case "eval":
		w.eval(c)
	case "su", "runuser", "flock":
		w.optionScript(c, optSpec{short: "cCgGswEu", long: []string{"command", "session-command", "shell", "group",
			"supp-group", "whitelist-environment", "timeout", "conflict-exit-code", "user"}}, "c", "command", "session-command")
	case "script":
		w.optionScript(c, optSpec{short: "cEIOBT", long: []string{"command", "echo", "log-in", "log-out", "log-io", "log-timing"}}, "c", "command")
	case "trap":
		if rest, _ := skipOptions(c.args, optSpec{}); len(rest) >= 2 && rest[0].val != "-" {
			w.runCode(c, langShell, argCode(rest[0]), "trap", c.sp, nil, false)
		}
	case "alias":
		w.alias(c)
	case "watch":
		rest, opts := skipOptions(c.args, optSpec{short: "nq", long: []string{"interval", "equexit", "differences"}})
		if len(rest) > 0 && !hasOpt(opts, "x", "exec") {
			w.runCode(c, langShell, joinCode(rest), "watch", c.sp, nil, false)
		} else if len(rest) > 0 {
			w.run(rest, stream{}, c.sp, joinVia(c.via, "watch"), false)
		}
	case "deno":
		w.deno(c)
	case "nix-shell":
		w.optionScript(c, optSpec{short: "pIAE", long: []string{"run", "command", "packages", "attr", "arg", "argstr", "expr", "include", "option"}}, "run", "command")
	case "ssh", "autossh":
		w.ssh(c)
	case "mosh":
		for i, a := range c.args { // mosh [OPTIONS] HOST -- COMMAND...
			if a.lit && a.val == "--" && i+1 < len(c.args) {
				w.run(c.args[i+1:], stream{}, c.sp, joinVia(c.via, "mosh"), false)
				break
			}
		}
	case "source", ".":
		if len(c.args) > 0 {
			if _, ok := w.writtenScript(c.args[0]); !ok {
				w.d.sourcedUnread = true // it may call the script's functions
			}
			w.scriptOperand(c, langShell, c.args[0], positional(c.args[0].val, c.args[1:]))
		}
	case "powershell", "powershell.exe", "pwsh", "pwsh.exe", "cmd", "cmd.exe":
		// pwsh -Command - (or no script at all) reads its script on stdin
		if c.stdin.present && c.stdin.taint&taintDownload != 0 && !strings.HasPrefix(c.name, "cmd") && pwshReadsStdin(c.args) {
			w.d.add(w.f, rulePipeToShell, "runs code downloaded from the network", joinVia(c.via, "| "+c.name), c.sp)
		}
		// curl -o x.ps1 URL; pwsh -File x.ps1 (cmd /c x.bat): a downloaded script run
		for _, f := range winScriptFiles(c) {
			if file, ok := w.writtenScript(arg{val: f, lit: true}); ok && file.s.taint&taintDownload != 0 {
				w.d.add(w.f, rulePipeToShell, c.name+" "+quoteDetail(f)+": runs code downloaded from the network", c.via, c.sp)
				break
			}
		}
	case "sftp":
		w.sftpBatch(c)
	case "terraform", "tofu", "terragrunt":
		w.destroyPlan(c)
	case "shopt":
		if slices.ContainsFunc(c.args, func(a arg) bool { return a.val == "expand_aliases" || !a.lit }) && !slices.ContainsFunc(c.args, func(a arg) bool { return a.val == "-u" }) {
			w.env.bashAlias = true
		}
	case "at", "batch":
		if _, opts := skipOptions(c.args, optSpec{short: "qfmMt"}); !hasOpt(opts, "f", "l", "d", "r", "c") {
			w.stdinCode(c, langShell, nil)
		}
	case "xargs":
		w.xargs(c)
	case "find":
		w.findExec(c)
	case "parallel":
		w.parallel(c)
	case "fd", "fdfind":
		w.fdExec(c)
	case "tclsh", "wish", "expect", "jimsh":
		w.tcl(c)
	case "sed", "gsed":
		w.sedExec(c)
	case "rg":
		w.rgPre(c)
	case "java":
		w.javaJar(c)
	case "open":
		// open tool.app, unpacked from a download, runs it
		for _, a := range c.args {
			if a.lit && !strings.HasPrefix(a.val, "-") && w.unpackedProgram(a.val) {
				w.d.add(w.f, rulePipeToShell, "open runs "+quoteDetail(a.val)+", unpacked from a download", c.via, c.sp)
				break
			}
		}
	case "git":
		w.gitEnvConfig(c)
		w.git(c)
	default:
		switch {
		case shells[c.name]:
			w.shell(c)
		case interpreterLang(c.name) != langShell:
			w.interpreter(c, interpreterLang(c.name))
		case sqlClients[c.name] != nil:
			w.sqlClient(c)
		case strings.Contains(c.prog, "/") && w.unpackedProgram(c.prog):
			if _, ok := w.writtenScript(arg{val: c.prog, lit: true}); !ok {
				w.d.add(w.f, rulePipeToShell, "runs "+quoteDetail(c.prog)+", unpacked from a download", c.via, c.sp)
				return
			}
			fallthrough
		case strings.Contains(c.prog, "/"):
			if file, ok := w.writtenScript(arg{val: c.prog, lit: true}); ok {
				if !file.s.known && file.s.file && file.s.taint == 0 {
					// cat /bin/rm > x; ./x: a copy of files the detector does not read may be any program
					w.unresolved(arg{val: c.prog}, c.sp, c.via)
					return
				}
				w.runCode(c, langShell, file.s.code(), c.prog, c.sp, positional(c.prog, c.args), false)
			}
		default:
			w.callFunc(c)
		}
	}
}

// pathShadow judges a program the job wrote into a directory it put on
// PATH: PATH=/tmp/shim:$PATH git status runs /tmp/shim/git when the job
// wrote it (printf '#!/bin/sh\nrm -rf ~' > /tmp/shim/git).
func (w *walker) pathShadow(c *command) {
	if strings.Contains(c.prog, "/") || c.name == "" {
		return
	}
	v, ok := c.vars["PATH"]
	if !ok {
		v = w.env.get("PATH")
	}
	if v.unknown && !v.env {
		// PATH=/tmp/shim:$PATH: the script set it, to a value it cannot
		// spell out; a program it wrote under this name may be the one run
		for _, k := range slices.Sorted(maps.Keys(w.env.files)) {
			if path.Base(k) == c.name {
				w.runCode(c, langShell, w.env.files[k].s.code(), k, c.sp, positional(k, c.args), false)
			}
		}
		return
	}
	seen := map[string]bool{}
	for _, p := range v.vals {
		for dir := range strings.SplitSeq(p, ":") {
			if dir == "" || seen[dir] || strings.ContainsAny(dir, "$`") {
				continue
			}
			seen[dir] = true
			prog := strings.TrimSuffix(dir, "/") + "/" + c.name
			if file, ok := w.writtenScript(arg{val: prog, lit: true}); ok {
				w.runCode(c, langShell, file.s.code(), prog, c.sp, positional(prog, c.args), false)
				return
			}
		}
	}
}

// pwshReadsStdin reports a PowerShell command line whose script is its
// standard input: -Command - or -File -, or no script or command at all.
func pwshReadsStdin(args []arg) bool {
	for i, a := range args {
		o := strings.ToLower(strings.TrimLeft(a.val, "-/"))
		switch {
		case !strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "/"):
			return false // a script file or a command
		case o == "c" || o == "command" || o == "f" || o == "file" || o == "e" || o == "ec" || o == "enc" || o == "encodedcommand":
			return i+1 < len(args) && args[i+1].val == "-"
		case o == "executionpolicy" || o == "ep" || o == "windowstyle" || o == "w" || o == "workingdirectory" || o == "wd" || o == "configurationname" || o == "inputformat" || o == "outputformat":
			return pwshReadsStdin(args[min(i+2, len(args)):])
		}
	}
	return true
}

func joinVia(a, b string) string {
	if a == "" {
		return b
	}
	return a + " > " + b
}

// joinCode joins words into one script, as watch and ssh do.
func joinCode(words []arg) code {
	if len(words) == 1 {
		return argCode(words[0])
	}
	out := code{known: true, base: -1, anchor: words[0].pos}
	parts := make([]string, len(words))
	for i, a := range words {
		parts[i] = codeText(a)
		out.taint |= a.taint
		if !a.lit {
			out.known, out.taint = false, out.taint|taintUnknown
		}
	}
	out.text = strings.Join(parts, " ")
	return out
}

// runCode judges code that c hands to a shell, an interpreter or a database
// client. Code the detector cannot see is judged by where it comes from: a
// download or a decoder (their own rules), a file (not judged, like running
// a script file), anything else built at run time (unresolved-command).
func (w *walker) runCode(c *command, l lang, src code, via string, sp span, params []arg, shared bool) {
	via = joinVia(c.via, via)
	if !src.known {
		switch {
		case src.taint&taintDownload != 0:
			w.d.add(w.f, rulePipeToShell, "runs code downloaded from the network", via, sp)
		case src.taint&taintDecoded != 0:
			w.d.add(w.f, ruleDecodedExec, "runs a decoded payload", via, sp)
		case l == langSQL && src.taint&taintSQLGen != 0:
			w.d.add(w.f, ruleSQLDestructive, "runs SQL generated with DROP, TRUNCATE or DELETE", via, sp)
		case l == langSQL && templateSQL(src.text) != "":
			w.d.add(w.f, ruleSQLDestructive, templateSQL(src.text)+" on names built at run time", via, sp)
		case src.file || l == langSQL:
		default:
			w.d.add(w.f, ruleUnresolved, "runs a script built at run time", via, sp)
		}
		return
	}
	// A decoded payload the detector could decode whole is judged as
	// what it is, like any literal script: what runs decides.
	texts := []string{src.text}
	if src.alt != "" {
		texts = append(texts, src.alt)
	}
	if l != langShell && l != langSQL {
		// the home directory the shell expanded into an interpreter's code
		// is a path there, written ~ for the detector's path rules
		for i, t := range texts {
			if t = homeInCode(t, src.home); t != texts[i] {
				texts[i], src.base = t, -1
			}
		}
	}
	for i, text := range texts {
		base := src.base
		if i > 0 {
			base = -1
		}
		parent := w.f
		if src.f != nil {
			parent = src.f
		}
		f := parent.child(text, via, base, src.anchor)
		switch l {
		case langShell:
			f.shell = w.scriptShell(c)
			e, cond := w.env, w.cond
			if !shared {
				// A shell of its own: its assignments hold for the rest
				// of its script, whatever context started it (echo 'x=ls;
				// $x' | sh runs ls), and none reaches this one.
				e, cond = e.clone(), 0
				e.forgetArrays()
				if c.name != "eval" && c.name != "source" && c.name != "." && c.name != "trap" && c.name != "alias" {
					e.dropUnexported() // another process: only what was exported
				}
				if params != nil {
					e.setArgs(params)
				}
			}
			w.d.script(f, e, cond, w.inherited(c, src))
			if !shared && !c.later {
				w.filesFrom(e) // sh -c "printf 'rm -rf ~' > s.sh"; sh s.sh: the disk is shared
			}
		case langSQL:
			w.sql(f, c.name)
		default:
			w.inline(l, f)
		}
	}
}

// filesFrom takes in the files another shell process wrote (e, its
// environment once its script ran): what it wrote is on the disk this
// script reads. Where this script may not have run it (a condition), a
// file is either its old or its new content.
func (w *walker) filesFrom(e *env) {
	for k, v := range e.files {
		old, ok := w.env.files[k]
		if ok && old.s.known == v.s.known && old.s.text == v.s.text && old.s.taint == v.s.taint && old.s.alt == v.s.alt {
			continue // unchanged
		}
		if w.env.files == nil {
			w.env.files = make(map[string]written)
		}
		if ok && w.cond > 0 {
			v.s = old.s.merge(v.s)
		}
		w.env.files[k] = v
	}
}

// scriptShell is the dialect of the shell that runs the script c hands
// over: the current one for eval, trap, alias and source; the program's
// own for a shell (sh -c, bash -c, curl … | bash); sh for anything else (a
// login or $SHELL shell, a script file), the strict reading.
func (w *walker) scriptShell(c *command) Shell {
	switch c.name {
	case "eval", "trap", "alias", "source", ".":
		return w.f.shell
	}
	return shellOf(c.name)
}

// eval runs its arguments, joined, as a script in the same shell.
func (w *walker) eval(c *command) {
	if len(c.args) == 0 || w.envInitEval(c) {
		return
	}
	w.runCode(c, langShell, joinCode(c.args), "eval", c.sp, nil, true)
}

// envInitEval reports eval "$(TOOL ...)" of envInit where TOOL is the
// system's: the script defined no function or alias, copied or wrote no
// file of that name, and set no PATH that could make it something else.
func (w *walker) envInitEval(c *command) bool {
	if len(c.args) != 1 || w.env.aliased {
		return false
	}
	m := envInit.FindStringSubmatch(c.args[0].src)
	if m == nil {
		return false
	}
	tool := path.Base(strings.Fields(m[1])[0])
	_, fn := w.env.funcs[tool]
	_, copied := w.env.progs[bareKey(tool)]
	_, pathSet := w.env.vars["PATH"]
	if fn || copied || pathSet {
		return false
	}
	for k := range w.env.files {
		if path.Base(k) == tool {
			return false
		}
	}
	return true
}

// envInit is eval's one argument when it is the output of a tool that
// prints only the shell assignments of its environment: eval
// "$(ssh-agent -s)", eval "$(brew shellenv)", eval "$(pyenv init -)".
var envInit = regexp.MustCompile(`^"?\$\((ssh-agent( -[sc])?|keychain --eval( --quiet| -q)?( [\w.-]+)*|gpg-agent --daemon|opam env( --switch=[\w.-]+)?|` +
	`(/opt/homebrew/bin/|/usr/local/bin/|/home/linuxbrew/\.linuxbrew/bin/)?brew shellenv|(pyenv|rbenv|nodenv|goenv|jenv|plenv|phpenv|pyenv virtualenv-init) init -( -)?|` +
	`pyenv virtualenv-init -|direnv hook (ba|z|fi)?sh|(starship|zoxide|mcfly|atuin) init (ba|z|fi)?sh|fnm env( --use-on-cd)?|` +
	`conda shell\.(ba|z)sh hook|(/opt/|~/)?(mini|ana)conda3?/bin/conda shell\.(ba|z)sh hook|luarocks path( --bin)?|dircolors( -b)?|` +
	`mise activate (ba|z)sh|rtx activate (ba|z)sh|asdf exec direnv hook (ba|z)sh|minikube docker-env|minikube -p [\w-]+ docker-env|` +
	`docker-machine env [\w-]+|aws-vault exec [\w-]+ -- env|ssh-agent -s -t [0-9]+[smh]?)\)"?$`)

// optionScript runs the value of a -c style option as a script.
func (w *walker) optionScript(c *command, spec optSpec, names ...string) {
	_, opts := operands(c.args, spec)
	for _, o := range opts {
		if hasOpt([]option{o}, names...) {
			w.runCode(c, langShell, argCode(o.value), c.name+" -c", c.sp, nil, false)
		}
	}
}

// shellAlias is an alias the script defined: its value, and where it
// takes effect (text the shell reads after the end of the alias
// command's line in frame f, or any other script read later: eval, a
// function defined later).
type shellAlias struct {
	val   string
	f     *frame
	after int
}

// aliasFor returns the alias a command word at offset pos of the current
// script expands to: dash expands aliases in every shell, bash only with
// shopt -s expand_aliases.
func (w *walker) aliasFor(name arg, pos int) (string, bool) {
	a, ok := w.env.aliases[name.val]
	if !ok || !name.lit || w.env.expanding[name.val] || w.f.shell == ShellBash && !w.env.bashAlias || a.f == w.f && pos <= a.after {
		return "", false
	}
	return a.val, true
}

// alias NAME=VALUE: the value is code the shell may run.
func (w *walker) alias(c *command) {
	if len(c.args) > 0 {
		w.env.aliased = true
	}
	for _, a := range c.args {
		name, val, ok := strings.Cut(a.val, "=")
		if !ok || !a.lit && !strings.HasPrefix(a.val, name+"=") {
			continue
		}
		src := argCode(a)
		src.text = strings.ReplaceAll(val, homeMarker, "$HOME")
		if a.lit {
			if w.env.aliases == nil {
				w.env.aliases = map[string]shellAlias{}
			}
			// the shell has read the rest of the line already
			after := len(w.f.src)
			if c.sp.end >= 0 && c.sp.end <= len(w.f.src) {
				if i := strings.IndexByte(w.f.src[c.sp.end:], '\n'); i >= 0 {
					after = c.sp.end + i
				}
			}
			w.env.aliases[name] = shellAlias{val: src.text, f: w.f, after: after}
		}
		if src.base >= 0 {
			src.base += len(name) + 1
		}
		w.runCode(c, langShell, src, "alias", c.sp, nil, false)
	}
}

// shell judges what a shell runs: its -c string, a script from stdin, or
// a script operand that is generated content (<(...)).
func (w *walker) shell(c *command) {
	hasC, stdin := false, false
	noexec, interactive := false, false
	i := 0
loop:
	for ; i < len(c.args); i++ {
		a := c.args[i]
		switch v := a.val; {
		case !a.lit:
			break loop
		case v == "--" || v == "-":
			stdin = stdin || v == "-"
			i++
			break loop
		case v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file":
			if v == "-o" && i+1 < len(c.args) && c.args[i+1].lit && c.args[i+1].val == "noexec" {
				noexec = true
			}
			i++
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && v[0] == '-':
			hasC = hasC || strings.Contains(v[1:], "c")
			stdin = stdin || strings.Contains(v[1:], "s")
			noexec = noexec || strings.Contains(v[1:], "n")
			interactive = interactive || strings.Contains(v[1:], "i")
		case len(v) > 1 && v[0] == '+':
		default:
			break loop
		}
	}
	if noexec && !interactive {
		// sh -n reads the script and checks its syntax, running nothing
		// (an interactive shell ignores -n, so sh -ni is judged as usual).
		return
	}
	ops := c.args[min(i, len(c.args)):]
	switch {
	case hasC:
		if len(ops) > 0 {
			params := ops[1:] // sh -c SCRIPT ARG0 ARG1...: $0 is ARG0
			if len(params) == 0 {
				params = positional(c.name, nil)
			}
			w.runCode(c, langShell, argCode(ops[0]), c.name+" -c", c.sp, params, false)
		}
	case len(ops) > 0 && !stdin:
		w.scriptOperand(c, langShell, ops[0], positional(ops[0].val, ops[1:]))
	default:
		w.stdinCode(c, langShell, positional(c.name, ops))
	}
}

// positional returns the parameters $0, $1, ... of a script: zero is $0
// unless args supplies it (sh -c SCRIPT ARG0 ARG1...).
// javaJar judges java -jar FILE ARGS as the command-line tool the jar is,
// named by the file (jenkins-cli.jar delete-job x is jenkins-cli
// delete-job x, bfg-1.14.0.jar --delete-files is bfg --delete-files): the
// generic tool, or the pack that knows the name, reads its words.
func (w *walker) javaJar(c *command) {
	for i := 0; i+1 < len(c.args); i++ {
		a := c.args[i]
		if !a.lit || !strings.HasPrefix(a.val, "-") {
			return // the main class: java [options] CLASS ARGS
		}
		if a.val != "-jar" && a.val != "--jar" {
			if a.val == "-cp" || a.val == "-classpath" || a.val == "--class-path" || a.val == "-p" || a.val == "--module-path" {
				i++
			}
			continue
		}
		jar := c.args[i+1]
		if !jar.lit {
			return
		}
		name := strings.TrimSuffix(path.Base(jar.val), ".jar")
		if j := strings.IndexFunc(name, func(r rune) bool { return '0' <= r && r <= '9' }); j > 1 && name[j-1] == '-' {
			name = name[:j-1] // bfg-1.14.0: the tool's name without its version
		}
		if name == "" || strings.ContainsAny(name, "$`") {
			return
		}
		prog := jar
		prog.val, prog.exact = name, -1
		w.run(append([]arg{prog}, c.args[i+2:]...), c.stdin, c.sp, joinVia(c.via, "java -jar"), false)
		return
	}
}

func positional(zero string, args []arg) []arg {
	return append([]arg{{val: zero, lit: true, exact: -1}}, args...)
}

// scriptOperand judges the script file operand of a shell or interpreter:
// stdin when it is - or /dev/stdin, generated content when it is <(...).
func (w *walker) scriptOperand(c *command, l lang, op arg, params []arg) {
	if file, ok := w.writtenScript(op); ok {
		w.runCode(c, l, file.s.code(), c.name+" "+op.val, c.sp, params, false)
		return
	}
	if op.lit && w.unpackedProgram(op.val) {
		w.d.add(w.f, rulePipeToShell, c.name+" runs "+quoteDetail(op.val)+", unpacked from a download", c.via, c.sp)
		return
	}
	switch {
	case op.lit && (op.val == "-" || op.val == "/dev/stdin" || op.val == "/dev/fd/0"):
		w.stdinCode(c, l, params)
	case op.taint&taintProc != 0:
		w.runCode(c, l, code{taint: op.taint &^ taintProc, base: -1, anchor: op.pos}, c.name+" <(...)", c.sp, params, false)
	}
}

// stdinCode judges the script a shell or interpreter reads on stdin.
func (w *walker) stdinCode(c *command, l lang, params []arg) {
	in := c.stdin
	if !in.present {
		return
	}
	sp := c.sp
	if in.start >= 0 && in.start < sp.start {
		sp.start = in.start
	}
	via := "| " + c.name
	switch in.via {
	case "heredoc":
		via = c.name + " <<"
	case "here-string":
		via = c.name + " <<<"
	case "<(...)":
		via = c.name + " < <(...)"
	}
	src := in.code()
	src.fromStdin = true
	w.runCode(c, l, src, via, sp, params, false)
}

// ssh HOST COMMAND... runs the joined command on the remote host; without
// one, the remote shell reads stdin.
func (w *walker) ssh(c *command) {
	spec := optSpec{short: "BbcDEeFIiJLlmOoPpQRSWw"}
	if c.name == "autossh" {
		spec.short += "M" // autossh -M PORT
	}
	rest, _ := skipOptions(c.args, spec)
	if len(rest) == 0 {
		return
	}
	if len(rest) == 1 {
		w.stdinCode(c, langShell, nil)
		return
	}
	src := joinCode(rest[1:])
	if user, _, ok := strings.Cut(rest[0].val, "@"); ok && user == "dokku" {
		// A dokku host's ssh account runs its commands as dokku's own
		// (ssh dokku@host apps:destroy web).
		src.text, src.base = "dokku "+src.text, -1
	}
	w.runCode(c, langShell, src, c.name, c.sp, nil, false)
}

// inherited is the standard input a nested script shares with c: c's own,
// unless the script is itself what c reads on stdin.
func (w *walker) inherited(c *command, src code) stream {
	in := c.stdin
	if !in.present || src.fromStdin {
		return stream{}
	}
	in.start = -1
	if in.f == nil {
		in.f = w.f
	}
	return in
}

// sftpBatch judges the uploads of an sftp batch (-b FILE, or its standard
// input when -b - or no -b is given) as the scp commands they are: echo
// "put ~/.kube/config" | sftp -b - HOST sends the file away.
func (w *walker) sftpBatch(c *command) {
	ops, opts := skipOptions(c.args, optSpec{short: "BbcDFiJlNoPRSsX"})
	if len(ops) == 0 || !ops[0].lit {
		return
	}
	text, batch := "", ""
	for _, o := range opts {
		if o.name == "b" && o.value.lit {
			batch = o.value.val
		}
	}
	switch batch {
	case "", "-":
		if !c.stdin.known {
			return
		}
		text = c.stdin.text
	default:
		f, ok := w.writtenScript(arg{val: batch, lit: true})
		if !ok || !f.s.known {
			return
		}
		text = f.s.text
	}
	host, _, _ := strings.Cut(ops[0].val, ":")
	for line := range strings.SplitSeq(strings.ReplaceAll(text, homeMarker, "$HOME"), "\n") {
		f := strings.Fields(strings.TrimLeft(line, "-@"))
		if len(f) < 2 || f[0] != "put" && f[0] != "mput" && f[0] != "reput" {
			continue
		}
		for _, local := range f[1:] {
			if !strings.HasPrefix(local, "-") {
				w.runCode(c, langShell, code{text: "scp -r " + local + " '" + host + ":'", known: true, base: -1, anchor: c.sp.start}, "sftp "+f[0], c.sp, nil, false)
				break
			}
		}
	}
}

// destroyPlanText stands for a plan file terraform plan -destroy -out=FILE
// saved: applying the file destroys what the configuration manages.
const destroyPlanText = "terraform plan -destroy\n"

// destroyPlan records the plan file a destroy plan saves, so that
// terraform apply FILE is judged as the destroy it is.
func (w *walker) destroyPlan(c *command) {
	plan, destroy, out := false, false, arg{}
	for i, a := range c.args {
		switch {
		case !a.lit:
		case a.val == "plan":
			plan = true
		case a.val == "-destroy" || a.val == "--destroy":
			destroy = true
		case strings.HasPrefix(a.val, "-out=") || strings.HasPrefix(a.val, "--out="):
			_, v, _ := strings.Cut(a.val, "=")
			out = arg{val: v, lit: true, pos: a.pos, end: a.end, exact: -1}
		case (a.val == "-out" || a.val == "--out") && i+1 < len(c.args):
			out = c.args[i+1]
		}
	}
	if plan && !destroy && out.lit {
		// a plan that is not a destroy saved over the destroy plan
		if f, ok := w.writtenScript(out); ok && f.s.known && f.s.text == destroyPlanText {
			delete(w.env.files, w.inCwd(out.val))
			delete(w.env.files, fileKey(out.val))
		}
	}
	if plan && destroy && out.lit && out.val != "" {
		// added to what the job knew of the file, not in its place: a plan
		// that fails leaves the file as it was
		w.recordWrite(out, stream{present: true, known: true, text: destroyPlanText, start: -1, base: -1, anchor: c.sp.start}, true)
	}
}

// homeInCode writes the home directory the shell expanded into an
// interpreter's code as ~, the path the detector's rules read: the
// marker, and $HOME and ${HOME} too when the text's $HOME is the
// expansion's (a heredoc, or codeText's spelling of the marker).
func homeInCode(text string, dollar bool) string {
	if dollar {
		return dollarHome.Replace(text)
	}
	return strings.ReplaceAll(text, homeMarker, "~")
}

// dollarHome writes the marker, $HOME and ${HOME} as ~.
var dollarHome = strings.NewReplacer(homeMarker, "~", "${HOME}", "~", "$HOME", "~")

// localURL is a URL of this machine: what it serves is the job's own.
var localURL = regexp.MustCompile(`(?i)^https?://(localhost|127\.0\.0\.1|\[::1\])([:/]|$)`)

// packageURL is a package named by where it is fetched from, not by a
// registry's name: a URL, a git remote or an archive on a host.
var packageURL = regexp.MustCompile(`^(https?://|git\+[a-z]+://|git://|git@[\w.-]+:)`)

// remotePackage returns the URL of a program a runner fetches and runs at
// once (npx URL, pnpm dlx URL, npm exec --package=URL, uvx --from URL,
// pipx run URL, uv run URL): code downloaded and run, as curl URL | sh.
// Only the package is read: npx wait-on http://localhost:3000 runs a
// registry package with a URL as its argument.
func remotePackage(c *command) (string, bool) {
	var words []string
	for _, a := range c.args {
		if !a.lit {
			return "", false
		}
		words = append(words, a.val)
	}
	switch c.name {
	case "npx", "pnpx", "bunx", "uvx", "pipx", "uv", "pnpm", "yarn", "npm", "bun":
	default:
		return "", false
	}
	runs := c.name == "npx" || c.name == "pnpx" || c.name == "bunx" || c.name == "uvx"
	for i := 0; i < len(words); i++ {
		w := words[i]
		if name, val, ok := strings.Cut(w, "="); ok && (name == "--package" || name == "--from" || name == "--spec") {
			if packageURL.MatchString(val) {
				return val, true
			}
			continue
		}
		switch {
		case w == "--":
			return "", false
		case w == "--package" || w == "--from" || w == "-p" || w == "--spec":
			if i+1 < len(words) && packageURL.MatchString(words[i+1]) {
				return words[i+1], true
			}
			i++
		case strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && runnerValueOption(w):
			i++ // --index URL, --python 3.12, --registry URL: an option's value
		case strings.HasPrefix(w, "-"):
		case !runs:
			if w != "run" && w != "dlx" && w != "exec" && w != "x" {
				return "", false // pnpm install, uv pip, npm test: not a runner's call
			}
			runs = true
		default:
			if packageURL.MatchString(w) {
				return w, true
			}
			return "", false // the package: a registry's name
		}
	}
	return "", false
}

// packageInstallers are the programs that install a package file given as
// an argument, and run what it holds: its install scripts, or the program.
// Each has the words or options that make a call an install.
var packageInstallers = map[string][]string{
	"dpkg": {"-i", "--install"}, "rpm": {"-i", "-U", "-F", "-ivh", "-Uvh", "--install", "--upgrade", "--freshen"},
	"apk": {"add"}, "apt": {"install"}, "apt-get": {"install"}, "dnf": {"install"}, "yum": {"install", "localinstall"},
	"zypper": {"install", "in"}, "snap": {"install"}, "flatpak": {"install"}, "gem": {"install"}, "pip": {"install"}, "pip3": {"install"},
	"npm": {"install", "i", "add"}, "pnpm": {"add", "install", "i"}, "yarn": {"add"}, "bun": {"add", "install", "i"}, "helm": {"install", "upgrade"},
	"uv": {"add", "pip"}, "pipx": {"install", "inject"}, "poetry": {"add"}, "pipenv": {"install"}, "pdm": {"add"},
	"code": {"--install-extension"}, "codium": {"--install-extension"}, "cursor": {"--install-extension"}, "code-insiders": {"--install-extension"},
	"installer": {"-pkg"}, "msiexec": {"/i", "/package"}, "msiexec.exe": {"/i", "/package"},
}

// archiveURL is a package archive's URL (https://host/x-1.0.tar.gz, a
// forge's /archive/ or /tarball/ download), alone or as a requirement's
// direct reference (name @ URL). A wheel too: its .pth files run at every
// start of Python.
var archiveURL = regexp.MustCompile(`(?i)^(?:[\w.\[\],-]+\s*@\s*)?(https?://[^\s"']+?(?:\.tar\.gz|\.tgz|\.zip|\.whl|\.tar\.bz2|\.tar\.xz|\.rpm|\.gem)|https?://[^\s"']+/(?:archive|tarball|zipball)/[^\s"']+)(?:#\S*)?$`)

// installsDownload returns the file a package installer installs that the
// job downloaded earlier (curl -LO URL/x.deb && dpkg -i x.deb), or the
// archive URL it downloads itself (pip install https://host/x.tar.gz):
// code from the network run as the package's scripts, as curl URL | sh.
func (w *walker) installsDownload(c *command) (string, bool) {
	modes := packageInstallers[c.name]
	if modes == nil || !slices.ContainsFunc(c.args, func(a arg) bool {
		name, _, _ := strings.Cut(a.val, "=")
		return a.lit && slices.Contains(modes, name)
	}) {
		return "", false // dpkg -I, rpm -qpl, code README.md: not an install
	}
	for _, a := range c.args {
		if !a.lit {
			continue
		}
		if m := archiveURL.FindStringSubmatch(a.val); m != nil && !localURL.MatchString(m[1]) {
			return m[1], true
		}
		v := a.val
		if _, after, ok := strings.Cut(v, "="); ok && strings.HasPrefix(v, "--") {
			v = after // --install-extension=x.vsix
		}
		if f, ok := w.writtenScript(arg{val: v, lit: true}); ok && f.s.taint&taintDownload != 0 {
			return v, true
		}
	}
	return "", false
}

// runnerValueOption reports an option of npx, uv, pipx and the package
// managers' runners that takes the next word as its value.
func runnerValueOption(o string) bool {
	switch o {
	case "--index", "--index-url", "--extra-index-url", "--default-index", "--find-links", "-f", "--python", "--with", "--with-requirements",
		"--directory", "--project", "--env-file", "--registry", "--cache", "--userconfig", "--prefix", "-C", "--dir", "--filter", "-F",
		"--cwd", "--workspace", "-w", "--spec", "--pip-args", "--index-strategy", "--group", "--extra":
		return true
	}
	return false
}

// apiRequests are the CLIs whose "api" subcommand sends a request to
// their service's REST API, by the host it is judged at: databricks api
// METHOD PATH --json BODY, caprover api --path PATH --method METHOD
// --data BODY.
var apiRequests = map[string]string{"databricks": "https://workspace.cloud.databricks.com", "caprover": "https://captain.caprover.invalid/api/v2"}

// apiRequest returns, for a CLI's raw API call (databricks api post
// /api/2.1/jobs/delete --json '{...}'), the curl command that sends the
// same request: the HTTP rules judge it.
func apiRequest(c *command) ([]arg, bool) {
	host, ok := apiRequests[c.name]
	if !ok {
		return nil, false
	}
	args := c.args
	for len(args) > 0 && args[0].lit && strings.HasPrefix(args[0].val, "-") {
		// databricks --debug -p prod api ...: the CLI's own options first
		if !strings.Contains(args[0].val, "=") && len(args) > 1 && args[1].lit && args[1].val != "api" && !strings.HasPrefix(args[1].val, "-") {
			args = args[1:]
		}
		args = args[1:]
	}
	if len(args) < 2 || !args[0].lit || args[0].val != "api" {
		return nil, false
	}
	word := func(v string) arg {
		return arg{val: v, src: v, lit: true, pos: args[0].pos, end: args[0].end, exact: -1}
	}
	method, urlPath, body := "", "", []arg(nil)
	rest := args[1:]
	var positional []string // databricks api post [--json BODY] PATH: the method and path, wherever the options are
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		name, val, eq := strings.Cut(a.val, "=")
		if !a.lit || !strings.HasPrefix(name, "-") {
			if a.lit {
				positional = append(positional, a.val)
			}
			continue
		}
		v := word(val)
		if !eq {
			if i+1 >= len(rest) {
				break
			}
			i++
			v = rest[i]
		}
		switch name {
		case "--json", "--body", "--data", "-d":
			body = append(body, word("-d"), v)
		case "--path", "-t":
			urlPath = v.val
		case "--method", "-m":
			method = v.val
		}
	}
	if len(positional) >= 2 && method == "" && urlPath == "" {
		method, urlPath = positional[0], positional[1]
	}
	method = strings.ToUpper(cmp.Or(method, "GET"))
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE":
	default:
		return nil, false
	}
	if urlPath == "" {
		return nil, false
	}
	words := []arg{word("curl"), word("-X"), word(method), word(host + "/" + strings.TrimPrefix(urlPath, "/"))}
	return append(words, body...), true
}
