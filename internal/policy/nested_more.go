package policy

import (
	"path"
	"regexp"
	"strings"
)

// Programs whose code reaches a shell in ways the pack tables cannot say:
// Tcl's exec (tclsh, wish, expect), sed's s///e flag and rg --pre.

// tclExec finds Tcl's exec commands: "exec WORDS" up to the end of the
// command (newline, ; or the ] of a substitution).
var tclExec = regexp.MustCompile(`(?:^|[\s;\[{])exec\s+([^\n;\]]+)`)

// tclEnv is a Tcl reference to an environment variable: $env(HOME), $::env(HOME).
var tclEnv = regexp.MustCompile(`\$(?:::)?env\((\w+)\)`)

// tclToShell turns the words of a Tcl exec into a shell command line:
// {braced} words become 'quoted' ones and $env(X) becomes $X; Tcl's
// redirections (2>@1, >@stdout) are dropped.
func tclToShell(words string) string {
	var b strings.Builder
	depth := 0
	for _, r := range words {
		switch {
		case r == '{':
			if depth == 0 {
				b.WriteByte('\'')
			} else {
				b.WriteRune(r)
			}
			depth++
		case r == '}' && depth > 0:
			depth--
			if depth == 0 {
				b.WriteByte('\'')
			} else {
				b.WriteRune(r)
			}
		case r == '\'' && depth > 0:
			b.WriteString(`'\''`)
		default:
			b.WriteRune(r)
		}
	}
	out := tclEnv.ReplaceAllString(b.String(), `$${$1}`)
	for _, redir := range []string{"2>@1", "2>@stderr", ">@stdout", ">@stderr", "2>@stdout"} {
		out = strings.ReplaceAll(out, redir, "")
	}
	return strings.TrimSpace(out)
}

// tcl judges the programs a Tcl script runs with exec: its script file
// (written earlier in the command), expect's -c string, or stdin.
func (w *walker) tcl(c *command) {
	var texts []code
	ops, opts := operands(c.args, optSpec{short: "cfb", long: []string{"encoding"}})
	for _, o := range opts {
		if o.name == "c" && o.value.lit {
			texts = append(texts, argCode(o.value))
		}
	}
	switch {
	case len(ops) > 0:
		if file, ok := w.writtenScript(ops[0]); ok {
			texts = append(texts, file.s.code())
		}
	case len(texts) == 0 && c.stdin.present:
		texts = append(texts, c.stdin.code())
	}
	for _, t := range texts {
		if !t.known {
			continue
		}
		for _, m := range tclExec.FindAllStringSubmatch(t.text, maxInputs) {
			script := tclToShell(m[1])
			if script == "" {
				continue
			}
			w.runCode(c, langShell, code{text: script, known: true, base: -1, anchor: c.sp.start}, c.name+" exec", c.sp, nil, false)
		}
	}
}

// sedSubstExec finds a sed s command with the e flag, with which GNU sed
// runs the pattern space, after the substitution, as a shell command; it
// returns the replacement. (RE2 has no back-references, so the command is
// scanned: s, a delimiter, two delimited parts, flags.)
func sedSubstExec(script string) (pattern, repl string, global, ok bool) {
	for i := 0; i+1 < len(script); i++ {
		if script[i] != 's' || i > 0 && !strings.ContainsRune(" \t;\n{}0123456789$/!", rune(script[i-1])) {
			continue
		}
		d := script[i+1]
		if d == '\\' || d == '\n' || d == ' ' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= '0' && d <= '9' {
			continue
		}
		parts, j := [2]string{}, i+2
		for p := range 2 {
			start := j
			for j < len(script) && script[j] != d {
				if script[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(script) {
				return "", "", false, false
			}
			parts[p] = script[start:j]
			j++
		}
		g := false
		for ; j < len(script) && strings.IndexByte("gpiImMe0123456789", script[j]) >= 0; j++ {
			g = g || script[j] == 'g'
			if script[j] == 'e' {
				for ; j < len(script) && strings.IndexByte("gpiImM0123456789", script[j]) >= 0; j++ {
					g = g || script[j] == 'g'
				}
				return parts[0], parts[1], g, true
			}
		}
		i = j - 1
	}
	return "", "", false, false
}

// sedApply returns text with sed's substitution applied to each line,
// when the pattern is plain text and the replacement has no & or
// back-reference; ok is false when it cannot say.
func sedApply(text, pattern, repl string, global bool) (string, bool) {
	switch {
	case pattern == ".*" || pattern == "^.*$" || pattern == "^.*":
		if repl == "&" {
			return text, true
		}
	case (pattern == "^" || pattern == "$") && !strings.ContainsAny(repl, `&\`):
		// s/^/rm -rf /e: each line with the text put before (or after) it
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if pattern == "^" {
				lines[i] = repl + l
			} else {
				lines[i] = l + repl
			}
		}
		return strings.Join(lines, "\n"), true
	case len(pattern) > 1 && (pattern[0] == '^') != (pattern[len(pattern)-1] == '$') && !strings.ContainsAny(strings.Trim(pattern, "^$"), `.[]*^$\+?(){}|`) &&
		!strings.ContainsAny(repl, `&\`):
		// s/^echo would remove/rm -rf/: plain text at a line's start (or end)
		lit := strings.Trim(pattern, "^$")
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if pattern[0] == '^' {
				if rest, ok := strings.CutPrefix(l, lit); ok {
					lines[i] = repl + rest
				}
			} else if rest, ok := strings.CutSuffix(l, lit); ok {
				lines[i] = rest + repl
			}
		}
		return strings.Join(lines, "\n"), true
	case strings.ContainsAny(pattern, `.[]*^$\+?(){}|`) || strings.ContainsAny(repl, `&\`):
		return "", false
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if global {
			lines[i] = strings.ReplaceAll(l, pattern, repl)
		} else {
			lines[i] = strings.Replace(l, pattern, repl, 1)
		}
	}
	return strings.Join(lines, "\n"), true
}

// sedExec judges what sed's s///e runs: each line of its input (when
// known) and the replacement itself, when it is literal text.
func (w *walker) sedExec(c *command) {
	scripts, files := sedScripts(c.args)
	for _, s := range scripts {
		if !s.lit {
			continue
		}
		if sedBareExec.MatchString(s.val) {
			// e without a command runs the pattern space: each input line
			if len(files) > 0 {
				w.runCode(c, langShell, code{text: `"$(cat)"`, known: true, base: -1, anchor: s.pos}, "sed e on "+quoteDetail(files[0].val), c.sp, nil, false)
				return
			}
			w.stdinCode(c, langShell, nil)
			return
		}
		pattern, repl, global, ok := sedSubstExec(s.val)
		if !ok {
			continue
		}
		if repl != "" && !strings.ContainsAny(repl, `&\`) {
			w.runCode(c, langShell, code{text: repl, known: true, base: -1, anchor: s.pos}, "sed s///e", c.sp, nil, false)
		}
		if len(files) > 0 {
			// each line of the files, edited, runs: s/^/CMD /e runs CMD on
			// each line; anything else, a command the files hold
			text := `"$(cat)"`
			if (pattern == "^" || pattern == "^.*" && strings.Contains(repl, "&")) && !strings.ContainsAny(strings.ReplaceAll(repl, "&", ""), `&\`) {
				text = strings.ReplaceAll(repl, "&", "") + text
			}
			w.runCode(c, langShell, code{text: text, known: true, base: -1, anchor: s.pos}, "sed s///e on "+quoteDetail(files[0].val), c.sp, nil, false)
			return
		}
		if !c.stdin.present {
			return
		}
		if in := c.stdin; in.known {
			if text, ok := sedApply(in.text, pattern, repl, global); ok {
				w.runCode(c, langShell, code{text: text, known: true, base: -1, anchor: s.pos}, "| sed s///e", c.sp, nil, false)
				return
			}
		}
		w.stdinCode(c, langShell, nil) // as read: the substitution may leave it whole
		return
	}
}

// sedBareExec is a sed script whose command is e alone (after an optional
// address), which runs each line it reaches as a shell command.
var sedBareExec = regexp.MustCompile(`^\s*(\d+|\$|/[^/\n]*/)?\s*e\s*(;|$)`)

// sedScripts returns sed's script arguments: -e and --expression values,
// or else the first operand.
func sedScripts(args []arg) ([]arg, []arg) {
	ops, opts := operands(args, optSpec{short: "efl", long: []string{"expression", "file", "line-length"}})
	var scripts []arg
	for _, o := range opts {
		if o.name == "e" || o.name == "expression" {
			scripts = append(scripts, o.value)
		}
	}
	if len(scripts) == 0 && len(ops) > 0 {
		return ops[:1], ops[1:]
	}
	return scripts, ops
}

// rgPre judges rg --pre COMMAND: rg runs COMMAND with each file it
// searches as the argument (rg --pre shred PATTERN /home shreds them).
func (w *walker) rgPre(c *command) {
	var pre *arg
	var paths []arg
	patternGiven := false
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case !a.lit || !strings.HasPrefix(a.val, "-") || a.val == "-":
			paths = append(paths, a)
		case a.val == "--pre" && i+1 < len(c.args):
			pre = &c.args[i+1]
			i++
		case strings.HasPrefix(a.val, "--pre="):
			v := a
			v.val, v.exact = strings.TrimPrefix(a.val, "--pre="), -1
			pre = &v
		case a.val == "-e" || a.val == "--regexp" || a.val == "-f" || a.val == "--file":
			patternGiven = true
			i++
		case a.val == "--files":
			patternGiven = true
		case a.val == "--pre-glob" || a.val == "-g" || a.val == "--glob" || a.val == "-t" || a.val == "--type" ||
			a.val == "-T" || a.val == "--type-not" || a.val == "-m" || a.val == "--max-count" || a.val == "-A" ||
			a.val == "-B" || a.val == "-C" || a.val == "-j" || a.val == "--threads" || a.val == "-M" || a.val == "--max-columns":
			i++
		}
	}
	if pre == nil {
		return
	}
	if !patternGiven && len(paths) > 0 {
		paths = paths[1:]
	}
	if len(paths) == 0 {
		paths = []arg{{val: ".", lit: true, exact: -1, pos: c.sp.start, end: c.sp.start}}
	}
	words := append([]arg{*pre}, paths...)
	w.run(words, stream{}, c.sp, joinVia(c.via, "rg --pre"), true)
}

// git judges what git runs besides the pack table's -c values: an ext::
// remote (git runs its command to reach the remote: ext::sh -c CMD, with %
// escapes), and hooks in a directory made the hooks path (git -c
// core.hooksPath=DIR, git config core.hooksPath DIR) that the script wrote.
func (w *walker) git(c *command) {
	for i, a := range c.args {
		if !a.lit {
			continue
		}
		if cmd, ok := strings.CutPrefix(a.val, "ext::"); ok {
			if words := extWords(cmd, a.pos); len(words) > 0 {
				w.run(words, stream{}, c.sp, joinVia(c.via, "git ext::"), false)
			}
		}
		dir := ""
		if v, ok := strings.CutPrefix(strings.ToLower(a.val), "core.hookspath="); ok && v != "" {
			dir = a.val[len(a.val)-len(v):]
		} else if strings.EqualFold(a.val, "core.hooksPath") && i+1 < len(c.args) && c.args[i+1].lit {
			dir = c.args[i+1].val
		}
		if dir == "" {
			continue
		}
		for _, d := range c.namedPaths(arg{val: dir, lit: true}) {
			prefix := fileKey(d) + "/"
			for k, f := range w.env.files {
				if strings.HasPrefix(k, prefix) && !strings.Contains(k[len(prefix):], "/") {
					w.runCode(c, langShell, f.s.code(), "git hook "+k, c.sp, nil, false)
				}
			}
		}
	}
	w.gitExecPath(c)
	w.gitAlias(c)
	w.callFunc(c)
}

// gitAlias judges git -c alias.NAME='CMD ARGS' NAME REST: git runs its
// own command CMD ARGS REST (alias.p='push --force'; a !CMD alias is a
// shell command, judged by the nested pack).
func (w *walker) gitAlias(c *command) {
	aliases := map[string]arg{}
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case !a.lit:
			return
		case a.val == "-c" && i+1 < len(c.args):
			i++
			kv := c.args[i]
			if k, v, ok := strings.Cut(kv.val, "="); ok && kv.lit && strings.HasPrefix(strings.ToLower(k), "alias.") && !strings.HasPrefix(strings.TrimSpace(v), "!") {
				kv.val, kv.exact = v, -1
				aliases[strings.ToLower(k[len("alias."):])] = kv
			}
		case a.val == "-C" || a.val == "--git-dir" || a.val == "--work-tree" || a.val == "--namespace":
			i++
		case strings.HasPrefix(a.val, "-"):
		default:
			v, ok := aliases[strings.ToLower(a.val)]
			if !ok {
				return
			}
			words, ok := splitWords(v)
			if !ok {
				words = []arg{{val: "", lit: false, taint: taintUnknown, pos: v.pos, end: v.end, exact: -1}}
			}
			git := arg{val: "git", lit: true, pos: a.pos, end: a.end, exact: -1}
			w.run(append(append([]arg{git}, words...), c.args[i+1:]...), c.stdin, c.sp, joinVia(c.via, "git alias."+a.val), false)
			return
		}
	}
}

// gitExecPath judges git --exec-path=DIR CMD ARGS: git runs DIR/git-CMD
// with ARGS, whatever the command made of that file (a link to a shell,
// a script it wrote).
func (w *walker) gitExecPath(c *command) {
	dir := ""
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case !a.lit:
			return
		case strings.HasPrefix(a.val, "--exec-path="):
			dir = strings.TrimPrefix(a.val, "--exec-path=")
		case a.val == "-c" || a.val == "-C" || a.val == "--git-dir" || a.val == "--work-tree" || a.val == "--namespace":
			i++
		case strings.HasPrefix(a.val, "-"):
		default:
			if dir == "" {
				return
			}
			prog := a
			prog.val, prog.exact = path.Join(dir, "git-"+a.val), -1
			w.run(append([]arg{prog}, c.args[i+1:]...), c.stdin, c.sp, joinVia(c.via, "git --exec-path"), false)
			return
		}
	}
}

// extWords splits the command of a git ext:: remote into its words as git
// does: at spaces, "% " being a space within a word, "%%" a percent sign,
// %s and %S the service (git-upload-pack), %G dropped.
func extWords(cmd string, pos int) []arg {
	var words []arg
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, arg{val: b.String(), lit: true, exact: -1, pos: pos, end: pos})
			b.Reset()
		}
	}
	for i := 0; i < len(cmd); i++ {
		switch {
		case cmd[i] == ' ':
			flush()
		case cmd[i] == '%' && i+1 < len(cmd):
			i++
			switch cmd[i] {
			case ' ', '%':
				b.WriteByte(cmd[i])
			case 's', 'S':
				b.WriteString("git-upload-pack")
			case 'G', 'V':
			default:
				b.WriteByte('%')
				b.WriteByte(cmd[i])
			}
		default:
			b.WriteByte(cmd[i])
		}
	}
	flush()
	return words
}
