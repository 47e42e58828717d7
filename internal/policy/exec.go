package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
)

// maxInputs bounds how many inputs of xargs, find -exec and parallel the
// detector substitutes into the command they run (xargs without -I
// appends up to maxInputs*4); past it the command is too-complex.
const maxInputs = 32

// xargs judges the command xargs runs. Its stdin arguments are known when
// they come from echo/printf (the words) or find/ls (the listed trees,
// judged as whole trees); otherwise the command is judged with one
// argument the detector cannot resolve.
func (w *walker) xargs(c *command) {
	rest, opts := skipOptions(c.args, xargsSpec)
	replace := ""
	in := c.stdin
	for _, o := range opts {
		switch o.name {
		case "a", "arg-file":
			// the arguments come from the file, not stdin
			in = stream{present: true, file: true, start: -1, base: -1, anchor: c.sp.start}
			if o.value.lit && isProjectEnvFile(o.value.val) {
				in.taint |= taintEnvFile // xargs -a .env -I{} curl -d {} URL sends it
			}
			if f, ok := w.writtenScript(o.value); ok {
				in = f.s
				in.present = true
			}
		case "I", "replace":
			replace = o.value.val
			if replace == "" {
				replace = "{}"
			}
		case "i":
			replace = "{}"
		}
	}
	if len(rest) == 0 {
		return // echo
	}
	inputs, tree := stdinWords(in, replace != "")
	w.runWith(rest, inputs, replace, c, "xargs", tree)
}

// xargsSpec is xargs' options that take a value.
var xargsSpec = optSpec{short: "adEILnPs", long: []string{
	"arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}}

// xargsOptions is the options xargs was given, before its command.
func xargsOptions(args []arg) []option {
	_, opts := skipOptions(args, xargsSpec)
	return opts
}

// stdinWords returns the arguments a stream supplies to xargs or parallel:
// its words, or its lines (xargs -I, parallel), and one unknown argument
// for content the detector cannot know (rm -rf fed by cat list fails
// closed).
func stdinWords(in stream, lines bool) (words []arg, tree bool) {
	if len(in.paths) > 0 {
		if in.taint&taintCredential != 0 { // find / -name .netrc | xargs cat
			return append(slices.Clip(in.paths), arg{taint: taintCredential | taintUnknown, pos: in.anchor, end: in.anchor, exact: -1}), true
		}
		return in.paths, true
	}
	if !in.known {
		if !in.present {
			return nil, false
		}
		return []arg{{taint: in.taint | taintUnknown, pos: in.anchor, end: in.anchor, exact: -1}}, false
	}
	// A NUL ends an item whatever the mode (xargs -0, parallel -0; no
	// argument can hold one).
	items := strings.FieldsFunc(in.text, func(r rune) bool { return r == 0 || unicode.IsSpace(r) })
	if lines {
		items = items[:0]
		for l := range strings.Lines(strings.ReplaceAll(in.text, "\x00", "\n")) {
			if l = strings.TrimSpace(l); l != "" {
				items = append(items, l)
			}
		}
	}
	for _, f := range items {
		if strings.ContainsAny(f, "\"'\\") {
			// xargs takes quotes and backslashes out of what it reads
			// (echo '"/home"' | xargs rm -rf removes /home); with -0 they
			// stay, and reading them out fails closed
			f = xargsUnquote.Replace(f)
		}
		// echo "$HOME" wrote the home directory, which a known stream
		// spells $HOME (read as the home directory, also when it was
		// written literally: failing closed)
		if rest, ok := strings.CutPrefix(f, "$HOME"); ok && (rest == "" || rest[0] == '/') {
			f = homeMarker + rest
		}
		words = append(words, arg{val: f, lit: true, pos: in.anchor, end: in.anchor, exact: -1})
	}
	return words, false
}

// xargsUnquote removes xargs' quoting from an item.
var xargsUnquote = strings.NewReplacer(`"`, "", `'`, "", `\`, "")

// runWith runs words with inputs substituted for replace (each input in
// turn), or appended when replace is "".
func (w *walker) runWith(words, inputs []arg, replace string, c *command, via string, tree bool) {
	via = joinVia(c.via, via)
	if replace == "" {
		if len(inputs) > maxInputs*4 {
			w.limit(fmt.Sprintf("more than %d inputs appended by xargs", maxInputs*4), c.sp)
			inputs = inputs[:maxInputs*4]
		}
		w.run(append(append([]arg(nil), words...), inputs...), stream{}, c.sp, via, tree)
		return
	}
	if len(inputs) == 0 {
		w.run(words, stream{}, c.sp, via, tree)
		return
	}
	for i, in := range inputs {
		if i == maxInputs {
			w.limit(overInputs, c.sp)
			break
		}
		w.run(substitute(words, replace, in), stream{}, c.sp, via, tree)
	}
}

// substitute replaces every occurrence of replace in the literal words.
func substitute(words []arg, replace string, in arg) []arg {
	out := make([]arg, len(words))
	for i, a := range words {
		out[i] = a
		if a.lit && strings.Contains(a.val, replace) {
			out[i].val = strings.ReplaceAll(a.val, replace, in.val)
			out[i].lit, out[i].taint = in.lit, a.taint|in.taint
			out[i].exact = -1
			if !in.lit { // the known end is what follows the last input
				out[i].tail = a.val[strings.LastIndex(a.val, replace)+len(replace):]
			}
		}
	}
	return out
}

// findExec judges the commands of find's -exec, -execdir, -ok and -okdir
// actions, with {} standing for each root (and the command judged as
// acting on whole trees).
func (w *walker) findExec(c *command) {
	roots, expr := findParts(c.args)
	if names, narrowed := findNames(expr); narrowed && !slices.ContainsFunc(names, func(n string) bool { return !strings.HasSuffix(n, ".pub") }) {
		// find ~/.ssh -name '*.pub' -exec cat {} \;: {} is a public key
		pub := make([]arg, len(roots))
		for i, r := range roots {
			pub[i] = r
			pub[i].val, pub[i].exact = path.Join(r.val, "id_rsa.pub"), -1 // ${1%.pub} is still a private key's name
		}
		roots = pub
	}
	for i := 0; i < len(expr); i++ {
		action := expr[i].val
		if action != "-exec" && action != "-execdir" && action != "-ok" && action != "-okdir" {
			continue
		}
		j := i + 1
		for j < len(expr) && (!expr[j].lit || expr[j].val != ";" && expr[j].val != "+") {
			j++
		}
		if j > i+1 {
			w.runWith(expr[i+1:j], roots, "{}", c, "find "+action, true)
		}
		i = j
	}
}

// fdExec judges fd's -x/--exec and -X/--exec-batch: every word after
// the option is the command, run on the results under the search paths
// (fd PATTERN PATH... -X rm -rf acts on those trees).
func (w *walker) fdExec(c *command) {
	spec := optSpec{short: "etdEScoj", long: []string{"extension", "type", "max-depth", "min-depth", "exact-depth", "exclude",
		"size", "changed-within", "changed-before", "owner", "color", "threads", "max-results", "base-directory",
		"path-separator", "search-path", "format", "ignore-file", "and", "max-buffer-time", "batch-size"}}
	var operands []arg
	args := c.args
	for len(args) > 0 {
		rest, opts := skipOptions(args, spec)
		for _, o := range opts {
			if o.name == "search-path" {
				operands = append(operands, o.value)
			}
		}
		consumed := args[:len(args)-len(rest)]
		for i, a := range consumed {
			if !a.lit || a.val != "-x" && a.val != "--exec" && a.val != "-X" && a.val != "--exec-batch" {
				continue
			}
			cmd := args[i+1:]
			for j, b := range cmd {
				if b.lit && b.val == ";" {
					cmd = cmd[:j]
					break
				}
			}
			roots := operands
			if len(roots) > 1 {
				roots = roots[1:] // the first operand is the pattern
			} else {
				roots = []arg{{val: ".", lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}}
			}
			replace := ""
			for _, b := range cmd {
				if b.lit && strings.Contains(b.val, "{}") {
					replace = "{}"
				}
			}
			if len(cmd) > 0 {
				w.runWith(cmd, roots, replace, c, "fd "+a.val, true)
			}
			return
		}
		if len(rest) == 0 {
			return
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

// parallel judges GNU parallel: COMMAND ::: ARGS runs COMMAND per argument;
// with no COMMAND each argument is itself a command line.
func (w *walker) parallel(c *command) {
	rest, opts := skipOptions(c.args, optSpec{short: "jSaIdEPn", long: []string{"jobs", "sshlogin", "arg-file", "delimiter", "joblog", "results", "max-args"}})
	if hasOpt(opts, "dry-run", "dryrun") {
		return // prints the commands it would run
	}
	if hasOpt(opts, "nonall") && len(rest) > 0 {
		// parallel --nonall -S HOSTS CMD: CMD runs once on every host, with
		// no arguments
		w.runCode(c, langShell, joinCode(rest), "parallel --nonall", c.sp, nil, false)
		return
	}
	cmd, inputs := rest, []arg(nil)
	for i, a := range rest {
		if a.lit && (a.val == ":::" || a.val == "::::") {
			cmd, inputs = rest[:i], rest[i+1:]
			break
		}
	}
	tree := false
	if len(inputs) == 0 {
		inputs, tree = stdinWords(c.stdin, true)
	}
	if len(cmd) == 0 {
		for i, in := range inputs {
			if i == maxInputs {
				w.limit(overInputs, c.sp)
				break
			}
			w.runCode(c, langShell, argCode(in), "parallel", c.sp, nil, false)
		}
		return
	}
	replace := ""
	for _, a := range cmd {
		if strings.Contains(a.val, "{}") {
			replace = "{}"
		}
	}
	w.runWith(cmd, inputs, replace, c, "parallel", tree)
}
