package policy

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// callKind is what an interpreter call does with its string arguments.
type callKind int

const (
	callShell  callKind = iota // runs them as a shell command (os.system, system, execSync)
	callArgv                   // runs them as a program and arguments, without a shell (execvp); judged the same
	callDelete                 // deletes the path (shutil.rmtree, fs.rmSync, FileUtils.rm_rf)
	callWrite                  // writes the path (open(p, 'w'), fs.writeFileSync)
	callCode                   // runs them as code of the same language (exec, eval)
)

// inlineCall is a function or method whose arguments the detector judges.
// strict calls are unambiguous: one with no string literal runs a command
// built at run time, which fails closed.
type inlineCall struct {
	name   string
	kind   callKind
	strict bool
}

var inlineCalls = map[lang][]inlineCall{
	langPython: {
		{"os.system", callShell, true}, {"os.popen", callShell, true}, {"subprocess.run", callShell, true},
		{"subprocess.call", callShell, true}, {"subprocess.check_call", callShell, true},
		{"subprocess.check_output", callShell, true}, {"subprocess.Popen", callShell, true},
		{"subprocess.getoutput", callShell, true}, {"subprocess.getstatusoutput", callShell, true},
		{"commands.getoutput", callShell, true}, {"pty.spawn", callArgv, false},
		{"check_output", callShell, false}, {"check_call", callShell, false}, {"Popen", callShell, false},
		{"getoutput", callShell, false}, {"system", callShell, false}, {"popen", callShell, false},
		{"run", callShell, false}, {"call", callShell, false},
		{"execl", callArgv, false}, {"execlp", callArgv, false}, {"execv", callArgv, false}, {"execvp", callArgv, false},
		{"execve", callArgv, false}, {"execvpe", callArgv, false}, {"spawnl", callArgv, false}, {"spawnlp", callArgv, false},
		{"spawnv", callArgv, false}, {"spawnvp", callArgv, false},
		{"rmtree", callDelete, false}, {"remove", callDelete, false}, {"unlink", callDelete, false},
		{"rmdir", callDelete, false}, {"removedirs", callDelete, false},
		{"open", callWrite, false}, {"write_text", callWrite, false}, {"write_bytes", callWrite, false},
		{"exec", callCode, true}, {"eval", callCode, true}, {"compile", callCode, false},
	},
	langPerl: {
		{"system", callShell, true}, {"exec", callShell, true}, {"readpipe", callShell, true}, {"open", callWrite, false},
		{"unlink", callDelete, false}, {"rmtree", callDelete, false}, {"remove_tree", callDelete, false}, {"rmdir", callDelete, false},
		{"eval", callCode, false},
	},
	langRuby: {
		{"system", callShell, true}, {"exec", callShell, true}, {"spawn", callShell, true}, {"IO.popen", callShell, true},
		{"sh", callShell, true}, // Rake's (a Rakefile, rake -e)
		{"Open3.capture2", callShell, true}, {"Open3.capture2e", callShell, true}, {"Open3.capture3", callShell, true},
		{"Open3.popen2", callShell, true}, {"Open3.popen3", callShell, true},
		{"rm_rf", callDelete, false}, {"rm_r", callDelete, false}, {"rm_f", callDelete, false}, {"rm", callDelete, false},
		{"remove_dir", callDelete, false}, {"remove_entry", callDelete, false}, {"remove_entry_secure", callDelete, false},
		{"File.delete", callDelete, false}, {"Dir.rmdir", callDelete, false},
		{"File.write", callWrite, false}, {"File.open", callWrite, false}, {"IO.write", callWrite, false},
		{"eval", callCode, true}, {"instance_eval", callCode, false}, {"class_eval", callCode, false},
	},
	langNode: {
		{"execSync", callShell, true}, {"spawnSync", callArgv, true}, {"execFileSync", callArgv, true},
		{"exec", callShell, false}, {"spawn", callArgv, false}, {"execFile", callArgv, false},
		{"rmSync", callDelete, false}, {"rmdirSync", callDelete, false}, {"unlinkSync", callDelete, false},
		{"rm", callDelete, false}, {"rmdir", callDelete, false}, {"unlink", callDelete, false},
		{"removeSync", callDelete, false}, {"emptyDirSync", callDelete, false},
		{"writeFileSync", callWrite, false}, {"appendFileSync", callWrite, false}, {"writeFile", callWrite, false},
		{"appendFile", callWrite, false}, {"createWriteStream", callWrite, false},
		{"eval", callCode, true}, {"Function", callCode, false}, {"runInNewContext", callCode, false}, {"runInThisContext", callCode, false},
		{"Deno.Command", callArgv, true}, {"Deno.run", callArgv, true}, {"Bun.spawn", callArgv, true}, {"Bun.spawnSync", callArgv, true},
		{"Deno.remove", callDelete, false}, {"Deno.removeSync", callDelete, false},
		{"Deno.writeTextFile", callWrite, false}, {"Deno.writeTextFileSync", callWrite, false}, {"Deno.writeFile", callWrite, false},
		{"Deno.writeFileSync", callWrite, false}, {"Bun.write", callWrite, false},
	},
	langPHP: {
		{"system", callShell, true}, {"exec", callShell, true}, {"shell_exec", callShell, true}, {"passthru", callShell, true},
		{"popen", callShell, true}, {"proc_open", callShell, true}, {"pcntl_exec", callArgv, true},
		{"unlink", callDelete, false}, {"rmdir", callDelete, false},
		{"file_put_contents", callWrite, false}, {"fopen", callWrite, false},
		{"eval", callCode, true}, {"assert", callCode, false},
	},
	langAwk: {
		{"system", callShell, true},
	},
	langLua: {
		{"os.execute", callShell, true}, {"io.popen", callShell, true}, {"os.remove", callDelete, false}, {"io.open", callWrite, false},
		{"load", callCode, true}, {"loadstring", callCode, true},
	},
}

// inline judges interpreter code in frame f: the shell commands its calls
// run (with the whole detector), the paths it deletes or writes, and fork
// loops. A call whose command matches a rule adds inline-code next to that
// rule's own finding; inline-code is host-only exactly when every finding
// under it is.
func (w *walker) inline(l lang, f *frame) {
	w.d.charge(1, parseBytes*len(f.src))
	if decoded, ok := decodeHexLiterals(l, f.src); ok {
		// pack("H*", "726d...") is the text it decodes to
		f = &frame{src: decoded, shell: f.shell, via: f.via, parent: f, base: -1, depth: f.depth + 1}
	}
	if decoded, ok := base64Calls(f.src); ok {
		// os.system(base64.b64decode('cm0gLXJmIH4=').decode()) runs the
		// literal it decodes to
		f = &frame{src: decoded, shell: f.shell, via: f.via, parent: f, base: -1, depth: f.depth + 1}
	}
	if joined, ok := homeJoined(f.src); ok {
		// os.homedir() + '/.bashrc' is the literal '~/.bashrc'
		f = &frame{src: joined, shell: f.shell, via: f.via, parent: f, base: -1, depth: f.depth + 1}
	}
	masked, lits := lexCode(l, f.src)
	if folded, ok := foldConcat(l, f.src, lits); ok {
		// judged as the literals make it, in a frame of its own whose
		// findings point at the code
		f = &frame{src: folded, shell: f.shell, via: f.via, parent: f, base: -1, depth: f.depth + 1}
		masked, lits = lexCode(l, f.src)
	}
	lits = interpolate(l, f.src, lits)
	for _, lit := range lits {
		if lit.shell {
			w.inlineShell(f, []codeLit{lit}, span{lit.start, lit.end}, "backticks")
		}
	}
	seen := make(map[int]bool) // argument regions already judged (os.system and system)
	for _, call := range inlineCalls[l] {
		for from := 0; ; {
			at, region, ok := findCall(masked, call.name, from, l)
			if !ok {
				break
			}
			from = region.end
			if seen[region.start] {
				continue
			}
			seen[region.start] = true
			if l == langRuby && (call.name == "exec" || call.name == "system" || call.name == "spawn") && objectMethod(masked, at) {
				continue // conn.exec("SELECT ..."): a database connection's, not Kernel's
			}
			in := litsIn(lits, region)
			sp := span{at, region.end}
			switch call.kind {
			case callShell, callArgv, callCode:
				if call.strict && (len(in) == 0 || dynamicArgs(masked, region, call.kind == callArgv)) {
					w.d.add(f, ruleUnresolved, call.name+" runs a command built at run time", "", sp)
				}
				if len(in) == 0 {
					continue
				}
				if call.kind == callCode {
					w.inlineCode(l, f, in, sp, call.name)
					continue
				}
				if argv, ok := pyArgvList(l, masked, region, in); ok {
					w.inlineArgv(f, argv, sp, call.name)
					continue
				}
				w.inlineShell(f, in, sp, call.name)
			case callDelete, callWrite:
				if pipe := perlPipe(l, call, in); pipe != nil {
					w.inlineShell(f, pipe, sp, "open")
					continue
				}
				if len(in) == 0 {
					in = litBefore(lits, masked, at)
				}
				if inlinePreview.MatchString(masked[region.start:region.end]) {
					continue // FileUtils.rm_rf(x, noop: true): prints what it would do
				}
				w.inlinePath(f, call, in, sp)
			}
		}
	}
	w.indirect(l, f, masked, lits)
	w.sdkCalls(l, f, masked, lits)
	w.envPrint(l, f, masked)
	if l == langAwk {
		w.awkPipes(f, masked, lits)
	}
	if forkLoop(masked) {
		w.d.add(f, ruleForkBomb, "fork in a loop", "", span{0, len(f.src)})
	}
	if killsAll.MatchString(masked) {
		w.d.add(f, ruleKillAll, "signals every process, or init", "", span{0, len(f.src)})
	}
}

// perlPipe returns the command of a perl pipe open: open(F, "cmd |"),
// open(F, "-|", "cmd").
func perlPipe(l lang, call inlineCall, in []codeLit) []codeLit {
	if l != langPerl || call.name != "open" {
		return nil
	}
	for i, lit := range in {
		v := strings.TrimSpace(lit.val)
		switch {
		case v == "-|" || v == "|-":
			return in[i+1:]
		case strings.HasSuffix(v, "|") || strings.HasPrefix(v, "|"):
			lit.val, lit.exact = strings.Trim(v, "| "), false
			return []codeLit{lit}
		}
	}
	return nil
}

// hexLiteral is a string written as hex digits and decoded at run time:
// perl's and PHP's pack("H*", "..."), PHP's hex2bin("..."), Python's
// bytes.fromhex("...").decode().
var hexLiteral = regexp.MustCompile(`\bpack\s*\(?\s*["']H\*["']\s*,\s*["']([0-9a-fA-F]+)["']\s*\)?|\bhex2bin\s*\(\s*["']([0-9a-fA-F]+)["']\s*\)|\bbytes\.fromhex\s*\(\s*["']([0-9a-fA-F ]+)["']\s*\)\.decode\(\s*\)`)

// decodeHexLiterals writes each hexLiteral of perl, PHP or Python code as
// the single-quoted string it decodes to.
func decodeHexLiterals(l lang, src string) (string, bool) {
	if l != langPerl && l != langPHP && l != langPython || !strings.Contains(src, "pack") && !strings.Contains(src, "hex") {
		return src, false
	}
	changed := false
	out := hexLiteral.ReplaceAllStringFunc(src, func(m string) string {
		sub := hexLiteral.FindStringSubmatch(m)
		digits := strings.ReplaceAll(sub[1]+sub[2]+sub[3], " ", "")
		b, err := hex.DecodeString(digits)
		if err != nil || !utf8.Valid(b) || strings.ContainsFunc(string(b), func(r rune) bool { return r < ' ' || r == '\'' || r == '\\' || r == 0x7f }) {
			return m // a quote, a backslash or a line break would end or change the literal written in its place
		}
		changed = true
		return "'" + string(b) + "'"
	})
	return out, changed
}

// pyArgvList returns the literals of a Python call's argument list when
// its command is a list of string literals only and no shell=True is
// given: subprocess.run(["echo", "rm -rf ~"]) runs echo with one argument,
// without a shell.
func pyArgvList(l lang, masked string, region span, in []codeLit) ([]codeLit, bool) {
	if l != langPython || len(in) == 0 || region.end > len(masked) {
		return nil, false
	}
	text := masked[region.start:region.end]
	if strings.Contains(strings.ReplaceAll(text, " ", ""), "shell=") {
		return nil, false
	}
	open := region.start + 1
	for open < region.end && (masked[open] == ' ' || masked[open] == '\n') {
		open++
	}
	if open >= region.end || masked[open] != '[' {
		return nil, false
	}
	end := matchParen(masked, open) // just past the ]
	var argv []codeLit
	at := open + 1
	for _, lit := range in {
		if lit.start >= end-1 {
			break
		}
		if lit.shell || strings.Trim(masked[at:lit.start], ", \t\n") != "" {
			return nil, false
		}
		argv = append(argv, lit)
		at = lit.end
	}
	if len(argv) == 0 || strings.Trim(masked[at:end-1], ", \t\n") != "" {
		return nil, false
	}
	return argv, true
}

// inlineArgv judges an argument list a call runs without a shell: the
// first literal is the program, the others its arguments.
func (w *walker) inlineArgv(f *frame, argv []codeLit, sp span, name string) {
	before := len(w.d.findings)
	words := make([]string, len(argv))
	for i, lit := range argv {
		words[i] = shellQuote(lit.val)
		if rest, ok := strings.CutPrefix(lit.val, "~"); ok {
			// no shell expands it, but "~/.ssh" is written meaning the
			// home directory's: judged as that (failing closed)
			words[i] = "~" + shellQuote(rest)
		}
	}
	w.d.script(f.childIn(ShellSh, strings.Join(words, " "), name, -1, argv[0].body), newEnv(), w.cond, stream{})
	w.inlineHit(f, before, sp, name+" runs a dangerous command")
}

// inlineShell judges the literals a call runs: each alone, and all joined
// (an argv list, or a string built by concatenation).
func (w *walker) inlineShell(f *frame, in []codeLit, sp span, name string) {
	before := len(w.d.findings)
	cands := make([]string, 0, len(in)+2)
	for _, lit := range in {
		cands = append(cands, lit.val)
	}
	if len(in) > 1 {
		vals := make([]string, len(in))
		for i, lit := range in {
			vals[i] = lit.val
		}
		cands = append(cands, strings.Join(vals, " "), strings.Join(vals, ""))
	}
	for i, cand := range cands {
		base, anchor := -1, in[0].body
		if i < len(in) {
			anchor = in[i].body
			if in[i].exact {
				base = in[i].body
			}
		}
		w.d.script(f.childIn(ShellSh, cand, name, base, anchor), newEnv(), w.cond, stream{}) // system() runs /bin/sh -c
	}
	w.inlineHit(f, before, sp, name+" runs a dangerous command")
}

// inlineCode judges the literals an exec or eval call runs as code of the
// same language.
func (w *walker) inlineCode(l lang, f *frame, in []codeLit, sp span, name string) {
	before := len(w.d.findings)
	for _, lit := range in {
		base := -1
		if lit.exact {
			base = lit.body
		}
		child := f.child(lit.val, name, base, lit.body)
		if child.depth > maxNesting {
			w.d.limit(f, fmt.Sprintf("code nested more than %d levels", maxNesting), sp)
			return
		}
		w.inline(l, child)
	}
	w.inlineHit(f, before, sp, name+" runs dangerous code")
}

// inlineHit adds inline-code for the findings made since before.
func (w *walker) inlineHit(f *frame, before int, sp span, detail string) {
	added := w.d.findings[before:]
	if len(added) == 0 {
		return
	}
	hostOnly := true
	for _, x := range added {
		hostOnly = hostOnly && x.hostOnly
	}
	w.d.addHost(f, ruleInlineCode, detail, "", sp, hostOnly)
}

// base64Call is a call that decodes a base64 literal: Python's
// base64.b64decode (and .decode()), node's Buffer.from(..., 'base64') and
// atob, PHP's base64_decode, Ruby's Base64.decode64, Perl's decode_base64.
var base64Call = regexp.MustCompile(`(?:(?:\bbase64|\b__import__\(\s*['"]base64['"]\s*\))\.(?:b64decode|standard_b64decode|decodebytes)|\bb64decode|\bbase64_decode|\bBase64\.(?:decode64|strict_decode64)|\bdecode_base64|\batob)\(\s*b?(?:'([A-Za-z0-9+/=\s]+)'|"([A-Za-z0-9+/=\s]+)")\s*\)(?:\.decode\([^)]*\))?|\bBuffer\.from\(\s*(?:'([A-Za-z0-9+/=]+)'|"([A-Za-z0-9+/=]+)")\s*,\s*['"]base64['"]\s*\)(?:\.toString\([^)]*\))?`)

// base64Calls writes each call that decodes a base64 literal as the
// literal it decodes to, when that is plain text a quote can hold.
func base64Calls(src string) (string, bool) {
	if !strings.Contains(src, "64") && !strings.Contains(src, "atob") {
		return "", false
	}
	out := base64Call.ReplaceAllStringFunc(src, func(m string) string {
		g := base64Call.FindStringSubmatch(m)
		text, ok := decodeBase64(strings.Join(strings.Fields(g[1]+g[2]+g[3]+g[4]), ""))
		if !ok || !utf8.ValidString(text) || strings.ContainsAny(text, "\\\x00") {
			return m
		}
		switch {
		case !strings.Contains(text, "'"):
			return "'" + text + "'"
		case !strings.Contains(text, `"`) && !strings.Contains(text, "$"):
			return `"` + text + `"`
		}
		return m
	})
	return out, out != src
}

// homeExpr is an interpreter's expression for the home directory.
const homeExpr = `(?:require\(\s*['"](?:node:)?os['"]\s*\)\.homedir\(\)|\bos\.homedir\(\)|process\.env\.HOME\b|process\.env\[\s*['"]HOME['"]\s*\]|` +
	`os\.environ\[\s*['"]HOME['"]\s*\]|os\.environ\.get\(\s*['"]HOME['"]\s*\)|os\.getenv\(\s*['"]HOME['"]\s*\)|os\.path\.expanduser\(\s*['"]~['"]\s*\)|` +
	`Path\.home\(\)|Dir\.home\b|ENV\[\s*['"]HOME['"]\s*\]|\$ENV\{\s*['"]?HOME['"]?\s*\}|getenv\(\s*['"]HOME['"]\s*\))`

// homeJoins are a home expression joined with a literal: by +, ., or a
// join call, and pathlib's /.
var homeJoins = []*regexp.Regexp{
	regexp.MustCompile(homeExpr + `\s*(?:\+|\.)\s*(['"])(/[^'"\n]*)['"]`),
	regexp.MustCompile(`(?:path\.join|os\.path\.join|File\.join|path\.resolve|Join-Path)\(\s*` + homeExpr + `\s*,\s*(['"])([^'"\n]+)['"]\s*((?:,\s*['"][^'"\n]+['"]\s*)*)\)`),
	regexp.MustCompile(homeExpr + `\s*/\s*(['"])([^'"\n]+)['"]`),
}

// inlinePreview is an option of a delete call that only reports what it
// would delete (Ruby's FileUtils noop:, dry_run).
var inlinePreview = regexp.MustCompile(`\b(noop|dry_run|dryRun)\s*(:|=>|=)\s*true\b`)

// joinedLit is one more literal part of a join call.
var joinedLit = regexp.MustCompile(`,\s*['"]([^'"\n]+)['"]`)

// homeInJoin is a home expression first in a join call whose other parts
// the rewrite did not spell out.
var homeInJoin = regexp.MustCompile(`(?:path\.join|os\.path\.join|File\.join|path\.resolve|Join-Path)\(\s*` + homeExpr + `\s*,\s*[^'"\s]`)

// homeAlone is a home expression by itself.
var homeAlone = regexp.MustCompile(homeExpr)

// homeJoined writes a home expression joined with a literal path as the
// literal ~/PATH, for the path judges to read.
func homeJoined(src string) (string, bool) {
	if !strings.Contains(src, "home") && !strings.Contains(src, "HOME") && !strings.Contains(src, "expanduser") {
		return "", false
	}
	out := src
	for _, re := range homeJoins {
		out = re.ReplaceAllStringFunc(out, func(m string) string {
			g := re.FindStringSubmatch(m)
			p := "~/" + strings.TrimPrefix(g[2], "/")
			if len(g) > 3 {
				for _, part := range joinedLit.FindAllStringSubmatch(g[3], -1) {
					p += "/" + strings.Trim(part[1], "/") // path.join(os.homedir(), '.config', 'app')
				}
			}
			return g[1] + p + g[1]
		})
	}
	if !homeInJoin.MatchString(out) {
		// fs.rmSync(os.homedir(), ...): the home itself; not where a join
		// with parts that are not literals follows (path.join(os.homedir(), name))
		var b strings.Builder
		last := 0
		for _, m := range homeAlone.FindAllStringIndex(out, -1) {
			b.WriteString(out[last:m[0]])
			if inInterpolatingQuote(out, m[0]) && shellWordStart(out[:m[0]]) {
				b.WriteString("~") // "cat $ENV{HOME}/.netrc": the shell the string goes to reads ~ as the home
			} else {
				b.WriteString("'~'")
			}
			last = m[1]
		}
		b.WriteString(out[last:])
		// ruby's "#{ENV['HOME']}" and node's `${os.homedir()}`: the
		// interpolation is the home
		out = strings.NewReplacer("#{~}", "~", "${~}", "~", "{~}", "~").Replace(b.String())
	}
	return out, out != src
}

// shellWordStart reports whether text that follows pre inside a string
// starts a word of a command line ("cat ", "rm -rf #{", "`ls "): not
// code (rmSync(...)) that the string holds.
func shellWordStart(pre string) bool {
	for _, open := range []string{"#{", "${", "{"} {
		if p, ok := strings.CutSuffix(pre, open); ok {
			pre = p
			break
		}
	}
	return pre != "" && strings.IndexByte(" \t=\"`", pre[len(pre)-1]) >= 0
}

// inInterpolatingQuote reports whether offset at of code src falls inside
// a double-quoted or backquoted string (a scan of quotes and backslashes,
// enough for one-liners).
func inInterpolatingQuote(src string, at int) bool {
	var q byte
	for i := 0; i < at && i < len(src); i++ {
		switch c := src[i]; {
		case c == '\\' && q != '\'':
			i++
		case q == 0 && (c == '"' || c == '`' || c == '\''):
			q = c
		case c == q:
			q = 0
		}
	}
	return q == '"' || q == '`'
}

// moduleNameLit reports a literal that names a module to load:
// __import__('os'), require('fs'), importlib.import_module('shutil').
func moduleNameLit(src string, l codeLit) bool {
	if l.start > len(src) {
		return false
	}
	before := strings.TrimRight(src[:l.start], " \t")
	return strings.HasSuffix(before, "__import__(") || strings.HasSuffix(before, "require(") || strings.HasSuffix(before, "import_module(")
}

// inlinePath judges a delete or write of the first path literal.
func (w *walker) inlinePath(f *frame, call inlineCall, in []codeLit, sp span) {
	// open(__import__('os').path.expanduser('~/.x'), 'w'): a module's name
	// is not the path
	in = slices.DeleteFunc(slices.Clone(in), func(l codeLit) bool { return moduleNameLit(f.src, l) })
	if len(in) == 0 {
		return
	}
	p := in[0].val
	if call.kind == callWrite {
		if call.name == "open" || call.name == "File.open" || call.name == "fopen" || call.name == "io.open" {
			p = writeModePath(in)
			if p == "" {
				return
			}
		}
		if isSystemFile(p) || isBlockDevice(p) || isHistoryFile(p) {
			w.d.addHost(f, ruleInlineCode, call.name+" writes "+quoteDetail(p), "", sp, true)
		}
		return
	}
	if protectedRoot(p, true) || isSystemFile(p) || isHistoryFile(p) {
		w.d.addHost(f, ruleInlineCode, call.name+" deletes "+quoteDetail(p), "", sp, true)
		return
	}
	if treeDeletes[call.name] && outsideWorkdir(p) {
		// shutil.rmtree("../api-service"), as rm -r ../api-service
		w.d.addHost(f, ruleRmOutside, call.name+" deletes "+quoteDetail(p)+", outside the working directory", "", sp, true)
		return
	}
	if winAbs(p) {
		// a Windows host's path (shutil.rmtree(r'D:\Backups\SQL')): the
		// same model as rd /s and Remove-Item -Recurse
		if why := winProtected(p, true); why != "" && !strings.Contains(why, "computed at run time") {
			w.d.addHost(f, ruleInlineCode, call.name+" deletes "+why, "", sp, true)
		}
	}
}

// objectMethod reports a call at offset at of a method of a variable the
// code assigned a database connection to, once (conn = PG.connect(...);
// conn.exec), not of Kernel or Process.
func objectMethod(masked string, at int) bool {
	if at == 0 || masked[at-1] != '.' {
		return false
	}
	i := at - 1
	for i > 0 && isIdentByte(masked[i-1]) && masked[i-1] != '.' {
		i--
	}
	recv := masked[i : at-1]
	if recv == "" || !isName(recv) {
		return false // (...).exec may be anything's: Object.const_get("Kernel").system is Kernel's
	}
	// conn.exec: the method of a variable the code assigned a database
	// connection to once, and used otherwise only for its methods
	assigned := false
	for j := 0; j < len(masked); {
		k := strings.Index(masked[j:], recv)
		if k < 0 {
			break
		}
		k += j
		j = k + len(recv)
		if k > 0 && (isIdentByte(masked[k-1]) || strings.IndexByte(".@$:", masked[k-1]) >= 0) || j < len(masked) && isIdentByte(masked[j]) {
			continue // another name (xconn, @conn, obj.conn)
		}
		rest := strings.TrimLeft(masked[j:], " \t")
		switch {
		case strings.HasPrefix(rest, ".") && !strings.HasPrefix(rest, ".."):
		case strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==") && !strings.HasPrefix(rest, "=~") && !assigned &&
			connectAlone(rest[1:]):
			assigned = true
		default:
			return false // conn &&= Kernel, |conn|, a, conn = ...: it may hold anything
		}
	}
	return assigned
}

// connectAlone reports an assigned value that is a database connection
// and nothing else: the call, then the end of the statement (not
// PG.connect(...) rescue Kernel, || Kernel, .then { Kernel }).
func connectAlone(v string) bool {
	loc := databaseConnect.FindStringIndex(v)
	if loc == nil {
		return false
	}
	end := loc[1]
	if j := end + len(v[end:]) - len(strings.TrimLeft(v[end:], " \t")); j < len(v) && v[j] == '(' {
		end = matchParen(v, j)
	}
	rest := strings.TrimLeft(v[end:], " \t")
	return rest == "" || rest[0] == ';' || rest[0] == '\n'
}

// databaseConnect is a Ruby database driver's connection, opened: what a
// variable assigned it holds.
var databaseConnect = regexp.MustCompile(`^\s*(PG\.connect|PG::Connection\.(new|open|connect)|Mysql2::Client\.new|SQLite3::Database\.new|Trilogy\.new|TinyTds::Client\.new|Sequel\.connect|ActiveRecord::Base\.connection)\b`)

// treeDeletes are the interpreters' calls that delete a whole tree.
var treeDeletes = map[string]bool{"rmtree": true, "remove_tree": true, "rm_rf": true, "rm_r": true, "RemoveAll": true}

// writeModePath returns the path an open call opens for writing, or "":
// open(p, "w"), File.open(p, "a"), fopen(p, "w+"), perl open(F, ">", p)
// and open(F, ">p").
func writeModePath(in []codeLit) string {
	for i, lit := range in {
		v := lit.val
		switch {
		case v == ">" || v == ">>" || v == "+<" || v == "+>":
			if i+1 < len(in) {
				return in[i+1].val
			}
		case strings.HasPrefix(v, ">") || strings.HasPrefix(v, "+<"):
			return strings.TrimSpace(strings.TrimLeft(v, "+<>"))
		}
	}
	if len(in) >= 2 && strings.ContainsAny(in[1].val, "wax+") {
		return in[0].val
	}
	return ""
}

// forkLoop reports code that forks in an endless loop: perl's
// `fork while fork`, python's `while True: os.fork()`.
func forkLoop(masked string) bool {
	return strings.Contains(masked, "fork") &&
		(strings.Contains(masked, "while fork") || strings.Contains(masked, "while True") ||
			strings.Contains(masked, "while 1") || strings.Contains(masked, "while(1)") ||
			strings.Contains(masked, "while (1)") || strings.Contains(masked, "while true") ||
			endlessIter.MatchString(masked) || strings.Contains(masked, "loop {") || strings.Contains(masked, "loop do"))
}

// endlessIter is python's endless iterators: iter(int, 1), itertools.count().
var endlessIter = regexp.MustCompile(`\biter\(\s*int\s*,\s*1\s*\)|\bcount\(\s*\)`)

// killsAll is code that signals every process (pid -1) or init (pid 1):
// os.kill(-1, 9), process.kill(-1), Process.kill(:KILL, -1), posix_kill(1, 9).
var killsAll = regexp.MustCompile(`\bos\.kill(pg)?\(\s*-?1\s*,|\bprocess\.kill\(\s*-?1\s*[,)]|\bProcess\.kill\([^,()]+,\s*-?1\s*\)|\bposix_kill\(\s*-?1\s*,|\bkill\s*\(?\s*[^,;()]+,\s*-1\b`)

// awkPipes judges awk's pipes: "cmd" | getline runs cmd, and print ... | "cmd"
// runs cmd with the printed literals on its input (a shell runs them).
//
// A printed literal is judged once, at the first shell pipe it may reach,
// and the search for print is done on prefix counts, so the cost stays
// linear in the program whatever the number of pipes.
func (w *walker) awkPipes(f *frame, masked string, lits []codeLit) {
	prints := occurrences(masked, "print")
	var pending []codeLit // literals before the last shell pipe not judged yet, in order
	seen := 0             // lits[:seen] are judged or pending
	stmt, scanned := 0, 0 // the statement masked[:scanned] ends in begins at stmt
	for i, lit := range lits {
		w.d.charge(1, 0)
		before := strings.TrimRight(masked[:lit.start], " \t")
		after := strings.TrimLeft(masked[lit.end:], " \t")
		switch {
		case strings.HasPrefix(after, "|") && strings.HasPrefix(strings.TrimLeft(after[1:], " \t"), "getline"):
			w.inlineShell(f, []codeLit{lit}, span{lit.start, lit.end}, "getline")
		case strings.HasSuffix(before, "|") && !strings.HasSuffix(before, "||"):
			w.inlineShell(f, []codeLit{lit}, span{lit.start, lit.end}, "print |")
			if !shells[strings.Fields(lit.val + " x")[0]] {
				continue
			}
			// A pending literal was not printed in its own statement; it
			// is printed into this pipe when a print lies between them.
			// Those ranges all end here and nest, so the ones that hold a
			// print come first.
			k := 0
			for ; k < len(pending) && prints.in(pending[k].end, lit.start); k++ {
				w.inlineShell(f, []codeLit{pending[k]}, span{pending[k].start, lit.end}, "print | sh")
			}
			pending = pending[k:]
			for ; seen < i; seen++ {
				data := lits[seen]
				for ; scanned < data.start; scanned++ {
					if masked[scanned] == ';' {
						stmt = scanned + 1
					}
				}
				if prints.in(data.end, lit.start) || prints.in(stmt, data.start) {
					w.inlineShell(f, []codeLit{data}, span{data.start, lit.end}, "print | sh")
				} else {
					pending = append(pending, data)
				}
			}
		}
	}
}

// counts holds, for each offset i of a text, how many occurrences of a
// word start before i.
type counts []int32

func occurrences(text, word string) counts {
	c := make(counts, len(text)+1)
	for i := range len(text) {
		c[i+1] = c[i]
		if strings.HasPrefix(text[i:], word) {
			c[i+1]++
		}
	}
	return c
}

// in reports whether text[from:to] holds the word (of length 5, "print").
func (c counts) in(from, to int) bool {
	last := to - len("print") + 1 // occurrences must start before last
	return last > from && c[last] > c[from]
}
