package policy

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxCalls bounds how many times function bodies are walked again at a call
// (with the caller's arguments as $1, $2, ...); past it the command is
// too-complex.
const maxCalls = 256

// hit is one rule firing on the command a matcher looks at.
// hit is one rule a command matched. hosts, for a credential sent over
// the network (egress:token-sent), names the hosts it went to, or is nil
// when one of them is not known (see Config.TokenHosts).
type hit struct {
	rule, detail string
	hosts        []string
}

type hits []hit

func (h *hits) add(rule, detail string) { *h = append(*h, hit{rule: rule, detail: detail}) }

// run judges one expanded command line: wrappers stripped, matchers run,
// nested scripts walked. It returns what the command writes to its output.
func (w *walker) run(words []arg, in stream, sp span, via string, tree bool) (out stream) {
	if w.d.seen != nil {
		w.d.seen(words)
	}
	if dumpsEnvironment(words) || echoesSecret(words) {
		defer func() { out.taint |= taintSecret }()
	}
	if printsToken(words) {
		defer func() { out.taint |= taintToken }()
	}
	c, name, st := unwrap(words)
	if st == runsProgram {
		w.exportedFuncs(words[:len(words)-len(c.args)], sp, via)
	}
	switch st {
	case runsNothing:
		return generated()
	case runsUnresolved:
		if w.inDecl > 0 && positionalProgram.MatchString(name.src) {
			// run() { "$@"; }: the program is the caller's first argument,
			// judged at each call (callFunc); a function never called runs nothing
			return generated()
		}
		if via == "" && w.psAssignment(words) {
			w.psScript(sp)
			return generated()
		}
		if progs, ok := globProgramNames(name); ok && !slices.ContainsFunc(slices.Collect(maps.Keys(w.env.files)), func(k string) bool { return strings.Contains(k, "[") }) {
			// /???/[c]at: the pattern can only name these programs
			for _, p := range progs {
				w.run(append([]arg{{val: p, src: p, lit: true, exact: -1}}, words[1:]...), in, sp, via, tree)
			}
			return generated()
		}
		w.unresolved(name, sp, via)
		return generated()
	}
	c.stdin, c.cwd, c.via, c.tree, c.sp = in, w.env.cwd, via, tree, sp
	c.frame = w.f.src
	if c.stmt = w.pipe; c.stmt == "" && sp.start >= 0 && sp.end <= len(w.f.src) && sp.start < sp.end {
		c.stmt = w.f.src[sp.start:sp.end]
	}
	c.remote = remoteVia(via) || remoteVia(w.f.via)
	c.home, c.links, c.files, c.captured = w.env.get("HOME"), w.env.links, w.env.files, w.captured > 0
	c.xtrace, c.vars = w.env.xtrace, w.env.vars
	if len(w.prefix) > 0 || len(c.assigns) > 0 {
		c.vars = maps.Clone(c.vars)
		if c.vars == nil {
			c.vars = make(map[string]value, len(w.prefix)+len(c.assigns))
		}
		maps.Copy(c.vars, w.prefix)
		wrapperAssigns(c.vars, c.assigns)
	}
	c.scratch, c.earlier = w.scratch, w.earlier
	if via == "" {
		defer func() { w.making = createdBy(&c) }() // the top-level command of a call
	}
	if alias, ok := w.programAlias(&c, name); ok {
		if alias == "" {
			w.unresolved(name, sp, via)
			return generated()
		}
		c.name = alias
	}
	if val, ok := w.aliasFor(name, sp.start); ok {
		w.expandAlias(&c, name.val, val)
		return generated()
	}
	w.sideEffects(&c)
	w.recordCommandWrites(&c)
	w.loadsDownload(&c)
	w.judge(&c)
	w.recordLink(&c) // after judging: ln acts on the link itself
	w.recordProgramCopy(&c)
	return produce(&c)
}

// printsSecret reports a command a pack's rule judges as printing a
// secret when its output reaches the job's (vault kv get, op read): what
// it writes is a secret, wherever it goes.
func printsSecret(c *command) bool {
	tools := packTools[canonical(c.name)]
	if !slices.ContainsFunc(tools, func(t *packTool) bool { return t.printing }) {
		return false // the common case: no rule of the program's is about what it prints
	}
	shown := *c
	shown.captured = false
	var h hits
	for _, t := range tools {
		if t.printing {
			t.judge(&shown, &h)
		}
	}
	return slices.ContainsFunc(h, func(x hit) bool { return x.rule == ruleSecretPrint })
}

// expandAlias runs a command whose name is an alias the script defined
// (alias x='rm -rf'; eval 'x ~') as the shell would: the alias's value
// followed by the command's arguments. An alias is not expanded again
// inside its own value (alias ls='ls -la').
func (w *walker) expandAlias(c *command, name, val string) {
	if w.env.expanding == nil {
		w.env.expanding = map[string]bool{}
	}
	w.env.expanding[name] = true
	defer delete(w.env.expanding, name)
	src := code{text: val, known: true, base: -1, anchor: c.sp.start}
	if written, ok := wordsAsWritten(c.args); ok {
		// the shell replaces the name and reads the rest of the line as
		// written: alias run='sh -c'; run "rm -rf ~" is sh -c "rm -rf ~"
		src.text += " " + written
	} else if len(c.args) > 0 {
		rest := joinCode(c.args)
		src.text += " " + rest.text
		src.known, src.taint = rest.known, rest.taint
	}
	w.runCode(c, langShell, src, "alias "+name, c.sp, nil, true)
}

// bashFuncVar is an environment entry bash imports as a function
// (BASH_FUNC_ls%%=() { ...; }, and the older BASH_FUNC_ls()=... form).
var bashFuncVar = regexp.MustCompile(`^BASH_FUNC_[^=]*(%%|\(\))=\s*\(\)\s*\{(.*)\}\s*$`)

// exportedFuncs judges the bodies of functions env hands to a bash it
// starts (env 'BASH_FUNC_ls%%=() { rm -rf ~; }' bash -c ls): bash imports
// each, and it runs in place of the program of that name; and the
// commands env's assignments hand to the program (see commandVars).
//
// prefix is the words before the program's arguments: the wrappers
// (sudo env ..., nohup env ...) and the program's name.
func (w *walker) exportedFuncs(prefix []arg, sp span, via string) {
	i := slices.IndexFunc(prefix, func(a arg) bool { return a.lit && exeName(path.Base(a.val)) == "env" })
	if i < 0 {
		return
	}
	for _, a := range prefix[i+1:] {
		if !a.lit {
			continue
		}
		c := command{name: "env", via: via, sp: sp, cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links}
		if m := bashFuncVar.FindStringSubmatch(a.val); m != nil {
			w.runCode(&c, langShell, code{text: m[2], known: true, base: -1, anchor: sp.start}, "env BASH_FUNC", sp, nil, false)
			continue
		}
		// env GIT_SSH_COMMAND='rm -rf ~' git fetch: as the prefix form
		name, val, ok := strings.Cut(a.val, "=")
		if l, code := commandVars[name]; ok && code {
			val = strings.TrimLeft(strings.TrimSpace(val), "|")
			w.runCode(&c, l, argCode(arg{val: val, lit: true, pos: a.pos, end: a.end, exact: -1}), "env "+name, sp, nil, false)
		}
	}
}

// wordsAsWritten joins the source of a command's words, each word once
// (brace expansion gives several arguments of one word).
func wordsAsWritten(args []arg) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	var parts []string
	last := -1
	for _, a := range args {
		if a.src == "" || a.pos < 0 {
			return "", false
		}
		if a.pos != last {
			parts = append(parts, a.src)
			last = a.pos
		}
	}
	return strings.Join(parts, " "), true
}

// globProgramNames returns the program names a glob as a command's name
// can match, when its last part has no * or ? (/???/[c]at, /u*/bin/[c]hmod:
// the directories may be any, the name is one of a few): each bracket
// class spelled out, at most eight names. Only an absolute pattern is
// read so (a pattern that matches nothing runs the file named as written,
// and the caller makes sure the job wrote no such file).
func globProgramNames(name arg) ([]string, bool) {
	w := name.src
	if !strings.HasPrefix(w, "/") || strings.ContainsAny(w, "$`'\"\\{") {
		return nil, false // a relative pattern may name a file the job made
	}
	base := w[strings.LastIndexByte(w, '/')+1:]
	if base == "" || strings.ContainsAny(base, "*?") || !strings.Contains(base, "[") {
		return nil, false
	}
	names := []string{""}
	for i := 0; i < len(base); i++ {
		if base[i] != '[' {
			for j := range names {
				names[j] += base[i : i+1]
			}
			continue
		}
		end := strings.IndexByte(base[i+1:], ']')
		if end < 1 {
			return nil, false
		}
		class := base[i+1 : i+1+end]
		if class[0] == '!' || class[0] == '^' || strings.Contains(class, "-") || strings.Contains(class, "[") {
			return nil, false // a negation or a range: too many names
		}
		var next []string
		for _, n := range names {
			for k := 0; k < len(class); k++ {
				next = append(next, n+class[k:k+1])
			}
		}
		if names = next; len(names) > 8 {
			return nil, false
		}
		i += end + 1
	}
	slices.Sort(names)
	return slices.Compact(names), true
}

// unresolved reports a command whose program name is not known.
func (w *walker) unresolved(name arg, sp span, via string) {
	switch {
	case name.taint&taintDownload != 0:
		w.d.add(w.f, rulePipeToShell, "program name comes from a download", via, sp)
	case name.taint&taintDecoded != 0:
		w.d.add(w.f, ruleDecodedExec, "program name comes from a decoded payload", via, sp)
	}
	w.d.add(w.f, ruleUnresolved, "program name is not a literal the detector can resolve", via, sp)
}

// plainProgramName returns a literal word that names a program by its name
// alone (rm, helm), not a path or anything a shell would read further.
func plainProgramName(a arg) (string, bool) {
	if !a.lit || a.val == "" || strings.ContainsAny(a.val, "-/ \t\n$`\\\x00") {
		return "", false
	}
	return a.val, true
}

// judge runs the matchers on c and walks what it runs.
func (w *walker) judge(c *command) {
	var h hits
	if c.priv != "" && (c.privEnv || !readOnlyCommand(c) && !privilegedBounded(c) && !accountRelaxed(c)) {
		h.add(rulePrivilege, c.priv)
	}
	for _, m := range matchersFor(c) {
		m(c, &h)
	}
	matchPacksEvery(c, &h)
	xtraceSecret(c, &h)
	for _, x := range h {
		w.d.addHit(w.f, x, c.via, c.sp)
	}
	w.nest(c)
}

// startupAppend reports a redirection that appends a statement's output
// (echo 'export PATH=...' >> ~/.bashrc) whose content recordRedirects sees:
// appended to a shell start-up file, known text that only exports or
// aliases (plainStartupText) is judged as the script it becomes; other
// text is a write-system.
func startupAppend(s *syntax.Stmt, r *syntax.Redirect) bool {
	if r.Op != syntax.AppOut && r.Op != syntax.AppAll || r.N != nil && r.N.Value != "1" {
		return false
	}
	switch s.Cmd.(type) {
	case *syntax.CallExpr, *syntax.Subshell, *syntax.Block:
		return true
	}
	return false
}

// agentWrite reports a redirection that writes a statement's whole output
// (cat > ~/Library/LaunchAgents/x.plist <<EOF) whose content
// recordRedirects sees.
func agentWrite(s *syntax.Stmt, r *syntax.Redirect) bool {
	if r.Op != syntax.RdrOut && r.Op != syntax.RdrClob || r.N != nil && r.N.Value != "1" {
		return false
	}
	_, ok := s.Cmd.(*syntax.CallExpr)
	return ok
}

// isShellStartup reports a shell start-up file of a home directory
// (~/.bashrc, /home/NAME/.zshrc).
func isShellStartup(p string) bool {
	return slices.Contains(shellStartup, path.Base(p)) && isSystemFile(p) && !isHistoryFile(p)
}

// redirects judges a statement's output redirections (writes onto devices,
// system files, history) and returns the input its redirections give it.
func (w *walker) redirects(s *syntax.Stmt, in stream, sp span) stream {
	for _, r := range s.Redirs {
		w.subst(r.Word)
		if r.Hdoc != nil {
			w.subst(r.Hdoc)
		}
		w.sensitiveRedirect(s, r, sp)
		kind, ok := outputKind(r)
		if !ok {
			continue
		}
		c := command{cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links}
		var h hits
		deferred, agent := startupAppend(s, r), agentWrite(s, r)
		for _, a := range w.value(r.Word) {
			for _, t := range c.targets(a) {
				if deferred && isShellStartup(t.path) || agent && isAgentFile(t.path) {
					continue // judged by what is written, once known (recordRedirects)
				}
				writeHits(t, kind, "redirection to ", &h)
			}
		}
		for _, x := range h {
			w.d.add(w.f, x.rule, x.detail, "", sp)
		}
	}
	return w.inputRedirects(s, in)
}

// outputKind says how a redirection writes its target, if it does.
func outputKind(r *syntax.Redirect) (writeKind, bool) {
	switch r.Op {
	case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.RdrAllClob:
		return writeTruncate, true
	case syntax.AppOut, syntax.AppClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		return writeModify, true
	case syntax.DplOut:
		lit := r.Word.Lit()
		if lit == "-" || lit != "" && strings.Trim(lit, "0123456789") == "" {
			return 0, false // >&2, >&-
		}
		return writeTruncate, true
	}
	return 0, false
}

// funcDecl records a function and walks its body once with unknown
// arguments; calls walk it again with their arguments (callFunc).
func (w *walker) funcDecl(fn *syntax.FuncDecl, sp span) {
	if detail, ok := matchForkBomb(fn, w.literal); ok {
		w.d.add(w.f, ruleForkBomb, detail, "", sp)
	}
	if fn.Name == nil || fn.Body == nil {
		return
	}
	if w.env.funcs == nil {
		w.env.funcs = make(map[string]funcDef)
	}
	pending := &declFindings{name: fn.Name.Value, f: w.f}
	w.env.funcs[fn.Name.Value] = funcDef{decl: fn, f: w.f, tree: w.tree, pending: pending}
	args, argsKnown := w.env.args, w.env.argsKnown
	w.env.args, w.env.argsKnown = nil, false
	w.cond++
	w.inDecl++
	before := len(w.d.findings)
	w.stmt(fn.Body, stream{})
	if w.inDecl == 1 {
		// bounds reached stay: each is reported once (detector.limit)
		kept := w.d.findings[:before]
		for _, f := range w.d.findings[before:] {
			if r, _ := lookupRule(f.rule); r.fixed {
				kept = append(kept, f)
			} else {
				pending.findings = append(pending.findings, f)
			}
		}
		w.d.findings = kept
		w.d.decls = append(w.d.decls, pending)
	}
	w.inDecl--
	w.cond--
	w.env.args, w.env.argsKnown = args, argsKnown
}

// funcDef is a function defined in some frame of the command.
type funcDef struct {
	decl    *syntax.FuncDecl
	f       *frame
	tree    Shell         // the dialect its body was read in
	pending *declFindings // what its body showed at the definition
}

// declFindings are the findings of a function's body walked at its
// definition, with its arguments unknown ("$1" cannot be resolved there),
// and the calls the walk saw, each judged again with its arguments.
type declFindings struct {
	name     string
	f        *frame
	findings []finding
	calls    map[int]bool // the positions of the calls walked
}

// implicitFuncs are function names a shell calls without the script
// naming them: a definition of one runs when the shell decides.
var implicitFuncs = []string{"command_not_found_handle", "command_not_found_handler", "preexec", "precmd", "chpwd", "periodic", "zshexit"}

// settleDecls keeps the findings of a function's definition only when
// the function may run other than through the calls the walk judged: its
// name appears in the script anywhere but its definition and those calls
// (export -f f; bash -c f, trap f EXIT, PROMPT_COMMAND=f, eval strings),
// the shell calls it itself, or the script sources a file it did not
// write (. ./run.sh may call it). A function only called directly was
// judged at each call with its arguments (cleanup ./tmp is not
// rm -rf "$1"); one never named again never runs.
func (d *detector) settleDecls() {
	for _, p := range d.decls {
		if d.sourcedUnread || slices.Contains(implicitFuncs, p.name) || strings.HasPrefix(p.name, "TRAP") || wordCount(p.f.src, p.name) != 1+len(p.calls) {
			d.findings = append(d.findings, p.findings...)
		}
	}
	d.decls = nil
}

// wordCount counts the occurrences of name in src that are not part of a
// longer word.
func wordCount(src, name string) int {
	isName := func(b byte) bool {
		return b == '_' || b == '-' || b == '.' || b == ':' || b == '/' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
	}
	n := 0
	for i := 0; ; {
		j := strings.Index(src[i:], name)
		if j < 0 {
			return n
		}
		j += i
		end := j + len(name)
		if (j == 0 || !isName(src[j-1])) && (end == len(src) || !isName(src[end])) {
			n++
		}
		i = j + 1
	}
}

// callFunc walks the body of a function the script defined, with the
// call's arguments as positional parameters.
func (w *walker) callFunc(c *command) {
	if c.external {
		return // command ls, sudo f: the program of that name, not the function
	}
	def, ok := w.env.funcs[c.name]
	key := callKey(c)
	if !ok || slices.Contains(w.stack, key) {
		return // a recursive call with the same arguments: judged already
	}
	if w.d.calls >= maxCalls {
		w.limit(fmt.Sprintf("more than %d function calls", maxCalls), c.sp)
		return
	}
	w.d.calls++
	if def.pending != nil && def.f == w.f {
		if def.pending.calls == nil {
			def.pending.calls = make(map[int]bool)
		}
		def.pending.calls[c.sp.start] = true
	}
	args, argsKnown := w.env.args, w.env.argsKnown
	w.env.setArgs(positional(c.name, c.args))
	fw := &walker{d: w.d, f: def.f, tree: def.tree, env: w.env, cond: w.cond + 1, argsCond: w.cond + 1, stack: append(slices.Clone(w.stack), key)}
	fw.stmt(def.decl.Body, c.stdin)
	w.env.args, w.env.argsKnown = args, argsKnown
}

// literal returns the value of a word that is one known field.
func (w *walker) literal(word *syntax.Word) (string, bool) {
	alts := w.fields(word)
	if len(alts) != 1 || len(alts[0]) != 1 || !alts[0][0].lit {
		return "", false
	}
	return alts[0][0].val, true
}

// positionalProgram is a program word that is a function's arguments:
// "$@", $1, "${1}", "$*".
var positionalProgram = regexp.MustCompile(`^"?\$(?:[@*1-9]|\{[@*1-9]\})"?$`)

// wrapperAssigns applies to vars what wrappers do to the program's
// environment, in order (env GOOSE_MODE=auto goose, sudo
// RAILS_ENV=production rake, env -u RAILS_ENV, env -i): NAME=VALUE sets a
// variable as a prefix assignment would (unknown when the word has
// unknown parts), -u removes it, -i removes them all, and a runner that
// sets its own (railway run, sudo) makes every one unknown.
func wrapperAssigns(vars map[string]value, assigns []arg) {
	for _, a := range assigns {
		word := a.src
		if a.lit {
			word = a.val
		}
		switch {
		case word == envCleared:
			clear(vars)
			continue
		case word == envInjectedMark, strings.HasPrefix(word, envUnset) && !a.lit:
			// railway run: the runner's own values; env -u "$X": any of
			// them may be gone
			for k := range vars {
				vars[k] = value{unknown: true}
			}
			continue
		case strings.HasPrefix(word, envUnset):
			delete(vars, strings.TrimPrefix(word, envUnset))
			continue
		}
		name, val, ok := strings.Cut(word, "=")
		if !ok || !isName(name) {
			continue
		}
		vars[name] = value{vals: []string{val}}
		if !a.lit {
			vars[name] = value{unknown: true}
		}
	}
}
