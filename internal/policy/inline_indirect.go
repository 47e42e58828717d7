package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Indirect calls. inline finds the calls it judges by their names; code can
// reach the same calls through a name it looks up or computes, which that
// search cannot see: getattr(os, "sys"+"tem"), Kernel.send(:system, ...),
// cp["execSync"](...), &{"POSIX::system"}, call_user_func("system", ...).
//
// A lookup of a literal name is judged as the call it names, with the
// arguments given in place; one that keeps the function for later fails
// closed. A lookup of a computed name fails closed (inline-code) wherever
// the code can reach a call that runs, deletes or writes: always in ruby,
// php and lua, which need no import for one; in python, perl and node when
// the code names a module that has them, and whatever the code names where
// the detector cannot tell what the lookup gets (__import__(name),
// require(name), eval of a computed string, globals()[name]).
//
// The identifiers of the masked code are read once, with every bracket's
// pair found beforehand: an argument list is read at its own level only,
// and a region judged as one call is not judged again as the same call
// (the direct search skips nested calls of one name the same way), so the
// cost stays linear in the code whatever its nesting.

// indirectBytes is what reading one byte of code for indirect calls costs,
// in budget bytes: its bracket pairs and identifiers.
const indirectBytes = 16

// indirect is the state of one reading of interpreter code.
type indirect struct {
	w       *walker
	l       lang
	f       *frame
	masked  string
	lits    []codeLit
	pair    []int32 // at an opening bracket: the offset past its close; at a closing one: its opening's plus one
	toks    []codeTok
	sep     []int32         // the next ; or newline at or after each offset, built on first use
	capable bool            // the code can reach a call that runs or deletes
	modules map[string]bool // node: names bound to a module, true for one that runs or deletes
	vars    map[string]phpVar
	hits    []indirectHit
	failed  map[string]bool // details reported
}

// codeTok is one identifier of masked code: os.system, .send, POSIX::system.
type codeTok struct {
	start, end int
	next       int // the first byte after it that is not a blank
	enc        int // the innermost bracket open around it, or -1
}

// indirectHit is a call reached through a literal name, judged as that call.
type indirectHit struct {
	call   inlineCall
	at     int
	region span
	via    string
}

// phpVar is what a php variable called as a function holds: a closure
// ("function"), a function name, or unknown.
type phpVar struct {
	value string
	known bool
}

// indirect judges the calls code in frame f makes through names the
// direct search cannot follow.
func (w *walker) indirect(l lang, f *frame, masked string, lits []codeLit) {
	w.d.charge(1, indirectBytes*len(masked))
	x := &indirect{w: w, l: l, f: f, masked: masked, lits: lits, failed: map[string]bool{}}
	x.scan()
	x.survey()
	for i := range x.toks {
		x.token(i)
	}
	x.operators()
	x.judgeHits()
}

var langNames = map[lang]string{
	langPython: "python", langPerl: "perl", langRuby: "ruby", langNode: "node", langPHP: "php", langLua: "lua", langAwk: "awk",
}

// fail refuses the code for an indirection it cannot follow. Each kind is
// reported once per code: the first says why, and code repeating one
// construct costs no more findings than code using it once.
func (x *indirect) fail(detail string, sp span) {
	if x.failed[detail] {
		return
	}
	x.failed[detail] = true
	x.w.d.add(x.f, ruleInlineCode, langNames[x.l]+" "+detail, "", sp)
}

// failIf fails closed when the code can reach a call that runs or deletes.
func (x *indirect) failIf(detail string, sp span) {
	if x.capable {
		x.fail(detail, sp)
	}
}

// scan pairs the brackets and lists the identifiers of the masked code.
func (x *indirect) scan() {
	m := x.masked
	x.pair = make([]int32, len(m))
	var open []int32
	colons := x.l == langPerl || x.l == langRuby || x.l == langPHP // Foo::bar
	ident := func(i int) bool { return isIdentByte(m[i]) || colons && strings.HasPrefix(m[i:], "::") }
	for i := 0; i < len(m); {
		switch c := m[i]; {
		case c == '(' || c == '[' || c == '{':
			x.pair[i] = int32(len(m))
			open = append(open, int32(i))
			i++
		case c == ')' || c == ']' || c == '}':
			if n := len(open); n > 0 {
				x.pair[open[n-1]], x.pair[i] = int32(i+1), open[n-1]+1
				open = open[:n-1]
			}
			i++
		case ident(i):
			t := codeTok{start: i, enc: -1}
			if n := len(open); n > 0 {
				t.enc = int(open[n-1])
			}
			for i < len(m) && ident(i) {
				if m[i] == ':' {
					i++
				}
				i++
			}
			t.end, t.next = i, x.skipBlank(i)
			x.toks = append(x.toks, t)
		default:
			i++
		}
	}
}

// survey finds what the code can reach, and what node names and php
// variables hold.
func (x *indirect) survey() {
	x.capable = x.l != langPython && x.l != langPerl && x.l != langNode
	for _, lit := range x.lits {
		x.capable = x.capable || capabilityName(x.l, strings.TrimPrefix(lit.val, "node:"))
	}
	x.modules, x.vars = map[string]bool{}, map[string]phpVar{}
	for i, t := range x.toks {
		x.capable = x.capable || capabilityName(x.l, x.name(t))
		switch x.l {
		case langNode:
			x.bindModule(i)
		case langPHP:
			x.phpAssign(t)
		}
	}
}

// capabilityNames are the modules (and for python the introspection
// attributes) through which code of a language reaches calls that run,
// delete or write, by any name.
var capabilityNames = map[lang][]string{
	langPython: {"os", "subprocess", "shutil", "pty", "posix", "nt", "commands", "pathlib", "importlib", "builtins",
		"__builtins__", "__import__", "sys", "ctypes", "multiprocessing", "asyncio", "runpy", "pickle", "marshal",
		"__globals__", "__subclasses__", "__class__", "__base__", "__bases__", "__mro__", "__code__",
		"__getattribute__", "__loader__", "__spec__", "__self__", "__func__", "__closure__"},
	langPerl: {"POSIX", "IPC", "Shell", "Proc", "CORE", "Expect", "File::Path", "File::Remove"},
	langNode: {"child_process", "fs", "fs/promises", "fs-extra", "graceful-fs", "vm", "worker_threads", "cluster", "module",
		"shelljs", "execa", "rimraf", "del", "cross-spawn", "inspector", "node-pty", "zx", "process", "globalThis", "global"},
}

// capabilityName reports a name (an identifier or a module literal) that
// reaches such calls: any component of a python or node name, the package
// of a perl one.
func capabilityName(l lang, name string) bool {
	names := capabilityNames[l]
	if l == langPerl {
		name = strings.TrimSuffix(strings.ReplaceAll(name, "/", "::"), ".pm")
		for _, n := range names {
			if name == n || strings.HasPrefix(name, n+"::") {
				return true
			}
		}
		return false
	}
	if slices.Contains(names, name) {
		return true
	}
	for part := range strings.SplitSeq(name, ".") {
		if part != name && slices.Contains(names, part) {
			return true
		}
	}
	return false
}

// token dispatches one identifier to its language's constructs.
func (x *indirect) token(i int) {
	x.w.d.charge(1, 0)
	switch x.l {
	case langPython:
		x.python(i)
	case langRuby:
		x.ruby(i)
	case langPerl:
		x.perl(i)
	case langNode:
		x.node(i)
	case langPHP:
		x.php(i)
	case langLua:
		x.lua(i)
	case langAwk:
		if t := x.toks[i]; x.prevByte(t.start) == '@' && x.opens(t, '(') { // gawk @name(): the function a variable names
			x.fail("indirect function call", span{t.start - 1, x.close(t.next)})
		}
	}
}

// --- python ---

func (x *indirect) python(i int) {
	t := x.toks[i]
	name := x.name(t)
	if x.declared(i) {
		return
	}
	switch l := lastPart(name); l {
	case "getattr", "__getattribute__":
		x.pyGetattr(t, name, l)
	case "__import__", "import_module":
		x.importName(t, l)
	case "globals", "locals", "vars":
		if x.opens(t, '(') {
			args := x.args(t.next)
			obj := ""
			if len(args) > 0 {
				obj = x.plain(args[0])
			}
			x.pyLookup(t.start, x.close(t.next), l+"()", obj, len(args) == 0)
		}
	case "__dict__", "__builtins__", "__globals__", "modules":
		if l != "modules" || name == "sys.modules" {
			x.pyLookup(t.start, t.end, l, namePrefix(name), l != "__dict__")
		}
	case "get", "__getitem__", "pop":
		// __builtins__.__dict__.get(name): one identifier up to the call
		ns := namePrefix(name)
		if l := lastPart(ns); (l == "__dict__" || l == "__builtins__" || l == "__globals__" || ns == "sys.modules") && x.opens(t, '(') {
			if args := x.args(t.next); len(args) > 0 {
				x.pyKey(t.start, x.close(t.next), args[0], l, namePrefix(ns), l != "__dict__")
			}
		}
	case "methodcaller", "attrgetter":
		x.pyOperator(t, l)
	case "__subclasses__":
		// ().__class__.__base__.__subclasses__() walks to Popen and os
		// by an index or a name the code computes.
		x.fail("__subclasses__ walk", span{t.start, t.end})
	case "as":
		x.alias(i)
	}
	x.pyModuleRef(t, name)
}

// pyGetattr judges getattr(obj, name) and obj.__getattribute__(name).
func (x *indirect) pyGetattr(t codeTok, name, l string) {
	if !x.opens(t, '(') {
		x.fail(l+" used as a value", span{t.start, t.end})
		return
	}
	args, stop := x.args(t.next), x.close(t.next)
	obj, key := namePrefix(name), span{}
	switch {
	case l == "getattr" && len(args) >= 2:
		obj, key = x.plain(args[0]), args[1]
	case l == "__getattribute__" && len(args) >= 1:
		key = args[len(args)-1]
		if len(args) >= 2 {
			obj = x.plain(args[0])
		}
	}
	if v, ok := x.literal(key); ok {
		x.target(l, obj, v, t.start, stop)
		return
	}
	// A computed name on an object that is not a plain name walks the
	// objects the code does not name: ().__class__.__base__...
	if x.capable || l == "getattr" && len(args) >= 1 && x.plain(args[0]) == "" {
		x.fail(l+" with a computed name", span{t.start, stop})
	}
}

// pyLookup judges a lookup in a namespace: globals()[name],
// vars(os).get(name), __builtins__[name], sys.modules[name]. always says a
// computed name fails closed whatever the code names.
func (x *indirect) pyLookup(at, end int, construct, obj string, always bool) {
	key, stop, ok := x.subscript(end)
	if !ok {
		if (always || x.capable && construct == "__dict__") && x.assigned(at) {
			x.fail(construct+" kept in a variable", span{at, end})
		}
		return
	}
	x.pyKey(at, stop, key, construct, obj, always)
}

// pyKey judges the key of a namespace lookup.
func (x *indirect) pyKey(at, stop int, key span, construct, obj string, always bool) {
	if v, lit := x.literal(key); lit {
		x.target(construct+" lookup", obj, v, at, stop)
		return
	}
	if always || x.capable {
		x.fail(construct+" lookup with a computed name", span{at, stop})
	}
}

// assigned reports an expression at i that is assigned: g = globals().
func (x *indirect) assigned(i int) bool {
	p := x.prevNonBlank(i)
	return p >= 0 && x.masked[p] == '=' && (p == 0 || strings.IndexByte("=!<>", x.masked[p-1]) < 0)
}

// pyOperator judges operator.methodcaller(name, args...), which calls
// name with args, and operator.attrgetter(name), which gets it for later.
func (x *indirect) pyOperator(t codeTok, l string) {
	if !x.opens(t, '(') {
		return
	}
	args, stop := x.args(t.next), x.close(t.next)
	names := args
	if l == "methodcaller" && len(args) > 0 {
		names = args[:1]
	}
	for _, a := range names {
		v, ok := x.literal(a)
		switch {
		case !ok:
			x.failIf(l+" with a computed name", span{t.start, stop})
			return
		case l == "methodcaller":
			x.targetArgs(l, "", v, t.start, argsFrom(args, 1))
		case x.dangerous("", lastPart(v)):
			x.fail(fmt.Sprintf("%s of %q", l, v), span{t.start, stop})
			return
		}
	}
}

// pyExecModules are the python modules whose calls run or delete.
var pyExecModules = []string{"os", "subprocess", "shutil", "pty", "posix", "nt", "commands"}

// pyModuleRef fails closed on a module's call kept for later: s =
// os.system, map(os.remove, ...), subprocess.run.__call__(...).
func (x *indirect) pyModuleRef(t codeTok, name string) {
	mod, rest, ok := strings.Cut(name, ".")
	if !ok || !slices.Contains(pyExecModules, mod) {
		return
	}
	attr, more, _ := strings.Cut(rest, ".")
	if !x.runs("", attr) || more == "" && x.opens(t, '(') {
		return
	}
	x.fail(mod+"."+attr+" used as a value", span{t.start, t.end})
}

// --- ruby ---

func (x *indirect) ruby(i int) {
	t := x.toks[i]
	if x.declared(i) || x.sigil(t) {
		return
	}
	name := x.name(t)
	switch l := lastPart(name); l {
	case "send", "public_send", "__send__":
		first, args, stop, ok := x.rbArgs(t)
		if !ok {
			return
		}
		if v, lit := x.literal(first); lit {
			x.targetArgs(l, namePrefix(name), v, t.start, args)
			return
		}
		x.fail(l+" with a computed name", span{t.start, stop})
	case "method", "public_method", "instance_method", "public_instance_method", "singleton_method":
		if !x.opens(t, '(') && !x.opens(t, ':') && !x.opens(t, '"') && !x.opens(t, '\'') {
			return // a local variable, or a call too unusual to be one
		}
		first, _, stop, ok := x.rbArgs(t)
		if !ok {
			return
		}
		if v, lit := x.literal(first); lit {
			x.target(l, namePrefix(name), v, t.start, stop)
			return
		}
		x.fail(l+" with a computed name", span{t.start, stop})
	case "const_get":
		if first, _, stop, ok := x.rbArgs(t); ok {
			if _, lit := x.literal(first); !lit {
				x.fail(l+" with a computed name", span{t.start, stop})
			}
		}
	case "instance_eval", "class_eval", "module_eval":
		x.rbEval(t, l)
	case "alias", "alias_method":
		x.rbAlias(i)
	}
}

// rbArgs returns the first argument of a ruby call, the others, and where
// the call ends: send(:system, "ls") and send :system, "ls".
func (x *indirect) rbArgs(t codeTok) (first, others span, stop int, ok bool) {
	m := x.masked
	if x.opens(t, '(') {
		args := x.args(t.next)
		if len(args) == 0 {
			return span{}, span{}, 0, false
		}
		return args[0], argsFrom(args, 1), x.close(t.next), true
	}
	if t.next == t.end || t.next >= len(m) || strings.IndexByte(":'\"%$@", m[t.next]) < 0 && !isIdentByte(m[t.next]) || m[t.next] == '.' {
		return span{}, span{}, 0, false
	}
	stop = x.stmtEnd(t.next, t.enc)
	end := stop // a literal first argument ends at its comma; anything else is computed
	switch {
	case m[t.next] == ':' && t.next+1 < len(m) && isIdentByte(m[t.next+1]):
		end = x.symbolEnd(t.next + 1)
	case m[t.next] == ':':
		if lit, ok := x.litAt(t.next + 1); ok {
			end = lit.end
		}
	default:
		if lit, ok := x.litAt(t.next); ok {
			end = lit.end
		}
	}
	if k := x.skipBlank(end); k < stop && m[k] == ',' {
		return span{t.next, end}, span{k + 1, stop}, stop, true
	}
	return span{t.next, stop}, span{stop, stop}, stop, true
}

// rbEval fails closed on instance_eval and friends given a computed
// string; a block is code the detector reads.
func (x *indirect) rbEval(t codeTok, l string) {
	m := x.masked
	if x.opens(t, '{') || strings.HasPrefix(m[t.next:], "do") && (t.next+2 == len(m) || !isIdentByte(m[t.next+2])) {
		return
	}
	first, _, stop, ok := x.rbArgs(t)
	if a := x.trim(first); !ok || a.start < a.end && m[a.start] == '&' { // &block
		return
	}
	if _, lit := x.literal(first); !lit {
		x.fail(l+" of a computed string", span{t.start, stop})
	}
}

// rbAlias fails closed on a new name for a call that runs: alias sh
// system, alias_method :sh, :system.
func (x *indirect) rbAlias(i int) {
	t := x.toks[i]
	stop := x.stmtEnd(t.end, t.enc)
	for k := i + 2; k > i; k-- { // the old name first: alias NEW OLD
		if k >= len(x.toks) || x.toks[k].start >= stop {
			continue
		}
		if n := x.name(x.toks[k]); x.runs("", n) {
			x.fail("alias of "+n, span{t.start, stop})
			return
		}
	}
}

// --- perl ---

func (x *indirect) perl(i int) {
	t := x.toks[i]
	name := x.name(t)
	p := x.prevByte(t.start)
	if p == '$' || p == '@' || p == '%' || x.declared(i) {
		return
	}
	l := lastPart(name)
	switch {
	case strings.HasPrefix(name, "CORE::GLOBAL::"):
		x.fail("CORE::GLOBAL override", span{t.start, t.end})
		return
	case p == '&' && !x.operandBefore(t.start-1) && x.runs("", l) && !x.opens(t, '('):
		x.fail("reference to "+name, span{t.start - 1, t.end}) // \&POSIX::system, &CORE::system
		return
	}
	arrow := p == '>' && x.prevByte(t.start-1) == '-'
	switch {
	case l == "eval" && !arrow:
		x.plEval(t)
	case l == "can" && (arrow || name == "UNIVERSAL::can"):
		x.plCan(t, name)
	case (l == "system" || l == "exec") && !arrow && t.next < len(x.masked) && x.masked[t.next] == '{':
		x.plIndirectObject(t, l)
	}
}

// plEval fails closed on a string eval of anything but one literal: eval
// $code, eval "$x", eval (which evaluates $_).
func (x *indirect) plEval(t codeTok) {
	m := x.masked
	var first span
	switch {
	case t.next < len(m) && m[t.next] == '{':
		return // a block: code the detector reads
	case x.prevByte(t.start) == '{' && x.opens(t, '}'):
		return // a hash key: $h{eval}
	case t.next >= len(m) || strings.IndexByte(";})", m[t.next]) >= 0:
		x.fail("eval of $_", span{t.start, t.end})
		return
	case m[t.next] == '(':
		args := x.args(t.next)
		if len(args) > 0 {
			first = args[0]
		}
	case strings.IndexByte("$@&\"'`", m[t.next]) < 0 && !isIdentByte(m[t.next]):
		return // not an argument: /eval/ in a regex the lexer leaves alone
	default:
		first = span{t.next, t.next}
		if lit, ok := x.litAt(t.next); ok {
			first.end = lit.end
		}
	}
	if _, ok := x.literal(first); !ok {
		x.fail("eval of a computed string", span{t.start, x.stmtEnd(t.next, t.enc)})
	}
}

// plCan judges $obj->can("name") and UNIVERSAL::can($obj, "name"), which
// return the sub for a call.
func (x *indirect) plCan(t codeTok, name string) {
	if !x.opens(t, '(') {
		return
	}
	args, stop := x.args(t.next), x.close(t.next)
	k := 0
	if name == "UNIVERSAL::can" {
		k = 1
	}
	if k >= len(args) {
		return
	}
	if v, ok := x.literal(args[k]); ok {
		x.target("can", "", v, t.start, stop)
		return
	}
	x.failIf("can with a computed name", span{t.start, stop})
}

// plIndirectObject judges system { PROGRAM } LIST and exec { PROGRAM }
// LIST: the list is the argv, the block the program run.
func (x *indirect) plIndirectObject(t codeTok, l string) {
	block := x.close(t.next)
	stop := x.stmtEnd(block, t.enc)
	if _, ok := x.literal(span{t.next + 1, x.inner(t.next)}); !ok {
		x.fail(l+" with a computed program", span{t.start, stop})
	}
	call, _ := x.lookup("", l)
	call.kind = callArgv
	x.hit(call, t.start, span{block, stop}, "indirect object")
}

// --- node ---

func (x *indirect) node(i int) {
	t := x.toks[i]
	name := x.name(t)
	if x.declared(i) {
		return
	}
	switch l := lastPart(name); {
	case l == "require":
		x.nodeRequire(t, name)
	case name == "import" && x.opens(t, '('):
		x.importName(t, "import()")
	case l == "as":
		x.alias(i)
	case l == "Function" || l == "runInNewContext" || l == "runInThisContext" || l == "runInContext" ||
		l == "compileFunction" || name == "vm.Script":
		x.nodeCode(t, l)
	case l == "constructor" && lastPart(namePrefix(name)) == "constructor":
		x.nodeCode(t, "Function") // [].constructor.constructor is Function
	case name == "Object.values" || name == "Object.entries" || name == "Object.assign" ||
		name == "Object.getOwnPropertyDescriptors" || name == "Object.getOwnPropertyDescriptor":
		x.nodeEnumerate(t, name)
	case l == "setTimeout" || l == "setInterval":
		x.nodeTimer(t, l)
	case name == "Reflect.get" || name == "Reflect.apply" || name == "Reflect.construct":
		x.nodeReflect(t, l)
	}
	x.nodeInternals(t, name)
	x.nodeBracket(t, name)
	x.nodeMember(t, name)
	x.nodeRename(t, name)
}

// nodeModule reports a module (a require or import literal) that runs or
// deletes.
func nodeModule(v string) bool {
	v = strings.TrimPrefix(v, "node:")
	return slices.Contains(capabilityNames[langNode], v) || strings.HasPrefix(v, "fs/")
}

// bindModule records a name bound to a module: cp = require("child_process"),
// fs = await import("fs"), g = globalThis, import cp from "child_process".
func (x *indirect) bindModule(i int) {
	t, m := x.toks[i], x.masked
	name := x.name(t)
	if name == "from" && i > 0 && t.next < len(m) && isQuoteByte(m[t.next]) {
		if lit, ok := x.litAt(t.next); ok && x.adjacent(i-1, i) {
			x.modules[x.name(x.toks[i-1])] = nodeModule(lit.val)
		}
		return
	}
	if t.next >= len(m) || m[t.next] != '=' || strings.HasPrefix(m[t.next:], "==") || strings.HasPrefix(m[t.next:], "=>") || i+1 >= len(x.toks) {
		return
	}
	k := i + 1
	if x.name(x.toks[k]) == "await" && k+1 < len(x.toks) {
		k++
	}
	rhs := x.toks[k]
	switch rn := x.name(rhs); {
	case (rn == "require" || rn == "import") && x.opens(rhs, '('):
		capable := true // require(name): refused, and anything may come of it
		if args := x.args(rhs.next); len(args) > 0 {
			if v, ok := x.literal(args[0]); ok {
				capable = nodeModule(v)
			}
		}
		x.modules[name] = capable
	case rn == "globalThis" || rn == "global" || rn == "process":
		x.modules[name] = true
	default:
		if capable, ok := x.modules[rn]; ok {
			x.modules[name] = capable
		}
	}
}

// nodeRequire judges require(name): a computed name fails closed; a
// module's lookup follows, require("child_process")["execSync"].
func (x *indirect) nodeRequire(t codeTok, name string) {
	if !x.opens(t, '(') {
		end := t.next >= len(x.masked) || x.opens(t, ';') || x.opens(t, '\n')
		if (name == "require" || name == "module.require") && (x.assigned(t.start) || end || x.opens(t, ',') || x.opens(t, ')')) {
			x.fail("require used as a value", span{t.start, t.end}) // r = require, f(require), eval("require")
		}
		return
	}
	args, stop := x.args(t.next), x.close(t.next)
	if len(args) == 0 {
		return
	}
	v, ok := x.literal(args[0])
	if !ok {
		x.fail("require of a computed name", span{t.start, stop})
		return
	}
	if key, end, ok := x.subscript(stop); ok {
		x.nodeKey(t.start, end, key, v, nodeModule(v))
	}
}

// nodeKey judges obj[key] on a module object.
func (x *indirect) nodeKey(at, stop int, key span, obj string, capable bool) {
	if v, ok := x.literal(key); ok {
		x.target("lookup on "+obj, "", v, at, stop)
		return
	}
	if capable {
		x.fail("lookup on "+obj+" with a computed name", span{at, stop})
	}
}

// nodeBracket judges a lookup on a name bound to a module, globalThis or
// process: cp[name], globalThis["require"].
func (x *indirect) nodeBracket(t codeTok, name string) {
	if t.next >= len(x.masked) || x.masked[t.next] != '[' {
		return
	}
	mod, sub, _ := strings.Cut(name, ".")
	capable, ok := x.modules[mod]
	switch {
	case ok && (sub == "" || sub == "promises" || sub == "default"):
	case name == "globalThis" || name == "global" || name == "process" || name == "module" ||
		name == "globalThis.process" || name == "global.process":
		capable = true
	default:
		return
	}
	key, stop, _ := x.subscript(t.end)
	x.nodeKey(t.start, stop, key, name, capable)
}

// nodeMember judges a module's call not called in place: cp.execSync kept
// for later, or called with .call(null, cmd) or .apply(null, [cmd]).
func (x *indirect) nodeMember(t codeTok, name string) {
	if !strings.Contains(name, ".") {
		return
	}
	parts := strings.Split(name, ".")
	capable, ok := x.modules[parts[0]]
	switch {
	case parts[0] == "": // .execSync on an expression: require("child_process").execSync
		capable = x.capable
	case parts[0] == "globalThis" || parts[0] == "global":
		capable = true
	case !ok:
		return
	}
	for k := 1; k < len(parts) && capable; k++ {
		if !x.nodeRuns(parts[k]) {
			continue
		}
		call, _ := x.lookup("", parts[k])
		switch {
		case k == len(parts)-1 && x.opens(t, '('):
			// a direct call, judged by name
		case k == len(parts)-2 && (parts[k+1] == "call" || parts[k+1] == "apply") && x.opens(t, '(') && call.name != "":
			x.hit(call, t.start, span{t.next, x.close(t.next)}, parts[k+1])
		default:
			x.fail(strings.Join(parts[:k+1], ".")+" used as a value", span{t.start, t.end})
		}
		return
	}
}

// nodeRuns reports a member that runs a command or code, deletes, or
// loads a module: fs.rmSync, cp.fork, module.require.
func (x *indirect) nodeRuns(name string) bool {
	switch name {
	case "fork", "require", "mainModule", "binding", "_linkedBinding", "dlopen", "_load":
		return true
	}
	c, ok := x.lookup("", name)
	return ok && c.kind != callWrite
}

// nodeRename fails closed on a destructuring that renames a call that
// runs: const {execSync: run} = require("child_process").
func (x *indirect) nodeRename(t codeTok, name string) {
	m := x.masked
	if t.next >= len(m) || m[t.next] != ':' || t.enc < 0 || m[t.enc] != '{' || !x.runs("", name) || !x.capable {
		return
	}
	if k := x.skipBlank(x.close(t.enc)); k < len(m) && m[k] == '=' && !strings.HasPrefix(m[k:], "==") && !strings.HasPrefix(m[k:], "=>") {
		x.fail("alias of "+name, span{t.start, t.end})
	}
}

// nodeCode judges Function and vm's code runners given a computed string.
func (x *indirect) nodeCode(t codeTok, l string) {
	if !x.opens(t, '(') {
		return
	}
	args, stop := x.args(t.next), x.close(t.next)
	if len(args) == 0 {
		return
	}
	code := args[:1]
	if l == "Function" {
		code = args // every argument is code: parameters and body
	}
	for _, a := range code {
		if _, ok := x.literal(a); !ok {
			x.fail(l+" of a computed string", span{t.start, stop})
			return
		}
	}
	if _, direct := x.lookup("", l); !direct {
		x.hit(inlineCall{name: l, kind: callCode, strict: true}, t.start, args[0], l)
	}
}

// nodeTimer judges setTimeout("code"): a string is evaluated.
func (x *indirect) nodeTimer(t codeTok, l string) {
	if !x.opens(t, '(') {
		return
	}
	args := x.args(t.next)
	if len(args) == 0 {
		return
	}
	a := x.trim(args[0])
	if a.start < a.end && isQuoteByte(x.masked[a.start]) {
		if _, ok := x.literal(a); !ok {
			x.fail(l+" of a computed string", span{t.start, x.close(t.next)})
			return
		}
		x.hit(inlineCall{name: l, kind: callCode, strict: true}, t.start, a, l)
	}
}

// nodeReflect judges Reflect.get(obj, name), Reflect.apply(fn, this,
// args) and Reflect.construct(Function, [code]).
func (x *indirect) nodeReflect(t codeTok, l string) {
	if !x.opens(t, '(') {
		return
	}
	args, stop := x.args(t.next), x.close(t.next)
	sp := span{t.start, stop}
	switch {
	case l == "get" && len(args) >= 2:
		if v, ok := x.literal(args[1]); ok {
			x.target("Reflect.get", "", v, t.start, stop)
		} else {
			x.failIf("Reflect.get with a computed name", sp)
		}
	case (l == "apply" || l == "construct") && len(args) >= 2:
		fn := x.plain(args[0])
		if fn == "" {
			x.failIf("Reflect."+l+" of a computed function", sp)
			return
		}
		call, ok := x.lookup("", lastPart(fn))
		if !ok {
			if x.dangerous("", lastPart(fn)) {
				x.fail("Reflect."+l+" of "+fn, sp)
			}
			return
		}
		x.hit(call, t.start, args[len(args)-1], "Reflect."+l)
	}
}

// nodeEnumerate fails closed on a module's members taken by enumeration:
// Object.values(require("child_process"))[3](cmd).
func (x *indirect) nodeEnumerate(t codeTok, name string) {
	if !x.opens(t, '(') {
		return
	}
	stop := x.close(t.next)
	for _, a := range x.args(t.next) {
		capable := x.modules[x.plain(a)]
		if a = x.trim(a); strings.HasPrefix(x.masked[a.start:a.end], "require") {
			if args := x.args(x.skipBlank(a.start + len("require"))); len(args) > 0 {
				v, ok := x.literal(args[0])
				capable = !ok || nodeModule(v)
			}
		}
		if capable {
			x.fail(name+" of a module", span{t.start, stop})
			return
		}
	}
}

// nodeInternals are ways to child_process and the loader that no direct
// call names.
var nodeInternals = []string{"process.binding", "process._linkedBinding", "process.dlopen", "process.mainModule",
	"module.constructor", "Module._load", "require.main.constructor"}

func (x *indirect) nodeInternals(t codeTok, name string) {
	if strings.Contains(name, "mainModule") && slices.Contains(strings.Split(name, "."), "mainModule") {
		x.fail("process.mainModule", span{t.start, t.end}) // also Function("return process")().mainModule
		return
	}
	for _, p := range nodeInternals {
		k := strings.Index(name, p)
		if k >= 0 && (k == 0 || name[k-1] == '.') && (k+len(p) == len(name) || name[k+len(p)] == '.') {
			x.fail(p, span{t.start, t.end})
			return
		}
	}
}

// --- php ---

// phpCallbacks are php functions that call a callback, by the callback's
// position.
var phpCallbacks = map[string]int{
	"call_user_func": 0, "call_user_func_array": 0, "forward_static_call": 0, "forward_static_call_array": 0,
	"array_map": 0, "register_shutdown_function": 0, "register_tick_function": 0, "set_error_handler": 0,
	"set_exception_handler": 0, "spl_autoload_register": 0, "ob_start": 0, "header_register_callback": 0,
	"reflectionfunction": 0, "iterator_apply": 1, "array_filter": 1, "array_walk": 1, "array_walk_recursive": 1,
	"usort": 1, "uasort": 1, "uksort": 1, "array_reduce": 1, "preg_replace_callback": 1,
}

func (x *indirect) php(i int) {
	t := x.toks[i]
	name := x.name(t)
	p := x.prevByte(t.start)
	switch {
	case p == '$' && x.opens(t, '('):
		x.phpVarCall(t, name)
	case p == '$' || p == '>' && x.prevByte(t.start-1) == '-' || x.declared(i):
		// a variable, an object's method, a definition
	default:
		l := strings.ToLower(lastPart(name))
		if k, ok := phpCallbacks[l]; ok && x.opens(t, '(') {
			x.phpCallback(t, l, k)
		}
	}
}

// phpAssign records what $name = ... gives a variable: a closure or a
// function name; any other assignment or use makes it unknown.
func (x *indirect) phpAssign(t codeTok) {
	m := x.masked
	if x.prevByte(t.start) != '$' || x.opens(t, '(') {
		return
	}
	name := x.name(t)
	v := phpVar{}
	if t.next < len(m) && m[t.next] == '=' && !strings.HasPrefix(m[t.next:], "==") && !strings.HasPrefix(m[t.next:], "=>") {
		rhs := x.skipBlank(t.next + 1)
		if val, ok := x.callee(span{rhs, x.stmtEnd(rhs, t.enc)}); ok {
			v = phpVar{value: val, known: true}
		}
	}
	if old, seen := x.vars[name]; seen && old != v {
		v = phpVar{}
	}
	x.vars[name] = v
}

// callee returns the function a php callable expression names: a closure
// ("function"), a function name literal, a variable holding one.
func (x *indirect) callee(sp span) (string, bool) {
	sp = x.trim(sp)
	a := x.masked[sp.start:sp.end]
	switch {
	case phpClosure(a):
		return "function", true
	case strings.HasPrefix(a, "$") && x.plain(span{sp.start + 1, sp.end}) != "":
		v := x.vars[a[1:]]
		return v.value, v.known
	}
	return x.literal(sp)
}

// phpClosure reports an expression that starts a closure: function (...)
// {...}, fn (...) => ..., static function.
func phpClosure(a string) bool {
	a = strings.TrimPrefix(a, "static ")
	for _, kw := range []string{"function", "fn"} {
		if rest, ok := strings.CutPrefix(a, kw); ok && (rest == "" || rest[0] == '(' || rest[0] == ' ' || rest[0] == '&') {
			return true
		}
	}
	return false
}

// phpVarCall judges $f(...): the function $f holds, else fails closed.
func (x *indirect) phpVarCall(t codeTok, name string) {
	sp := span{t.start - 1, x.close(t.next)}
	switch x.prevByte(t.start - 1) {
	case '$':
		x.fail("variable variable call", sp)
	case '>', ':':
		x.fail("method call with a computed name", sp)
	default:
		v := x.vars[name]
		switch {
		case !v.known:
			x.fail("call of a variable function", sp)
		case v.value != "function":
			x.target("variable function", "", v.value, t.start-1, t.end)
		}
	}
}

// phpCallback judges call_user_func("system", "ls") and its kind: a
// function name callback is judged as that call with the other arguments.
func (x *indirect) phpCallback(t codeTok, l string, k int) {
	args, stop := x.args(t.next), x.close(t.next)
	if k >= len(args) {
		return
	}
	cb := x.trim(args[k])
	v, ok := x.callee(cb)
	if !ok && cb.start < cb.end && (x.masked[cb.start] == '[' || strings.HasPrefix(x.masked[cb.start:], "array(")) {
		v, ok = x.literal(x.lastArg(cb)) // [$obj, "method"], "Class::method"
	}
	switch {
	case !ok:
		x.fail(l+" with a computed callback", span{t.start, stop})
	case v == "function":
	case k == 1 || l == "reflectionfunction":
		// The callback gets the elements of a collection, or is called
		// later: what it runs is not in sight.
		if x.dangerous("", v) {
			x.fail(fmt.Sprintf("%s of %q", l, v), span{t.start, stop})
		}
	default:
		x.targetArgs(l, "", v, t.start, argsFrom(args, 1))
	}
}

// lastArg returns the last element of an array literal: [a, b] or array(a, b).
func (x *indirect) lastArg(sp span) span {
	open := sp.start
	if x.masked[open] != '[' {
		open += len("array")
	}
	args := x.args(open)
	if len(args) == 0 {
		return span{}
	}
	return args[len(args)-1]
}

// --- lua ---

func (x *indirect) lua(i int) {
	t := x.toks[i]
	name := x.name(t)
	mod := lastPart(name)
	switch {
	case name == "require" && x.opens(t, '('):
		x.importName(t, "require")
		if args := x.args(t.next); len(args) > 0 {
			if v, _ := x.literal(args[0]); v == "os" || v == "io" {
				x.fail("require of "+v, span{t.start, x.close(t.next)}) // require("os").execute(cmd)
			}
		}
	case (mod == "os" || mod == "io" || name == "_G" || name == "_ENV") && (name == mod || strings.HasPrefix(name, "_G.") || strings.HasPrefix(name, "_ENV.")):
		if x.assigned(t.start) && !x.opens(t, '[') {
			x.fail(name+" kept in a variable", span{t.start, t.end}) // local o = os; o.execute(cmd)
			return
		}
		x.luaLookup(t, mod)
	case (name == "os.execute" || name == "io.popen" || name == "os.remove") && !x.opens(t, '('):
		if lit, ok := x.litAt(t.next); ok && t.next < len(x.masked) && x.masked[t.next] != '(' {
			call, _ := x.lookup("", name)
			x.hit(call, t.start, span{t.next, lit.end}, "a call without parentheses") // os.execute "cmd"
			return
		}
		x.fail(name+" used as a value", span{t.start, t.end})
	}
}

// luaLookup judges os["execute"], _G["os"]["execute"] and their computed
// forms.
func (x *indirect) luaLookup(t codeTok, obj string) {
	end := t.end
	for {
		key, stop, ok := x.subscript(end)
		if !ok {
			return
		}
		v, lit := x.literal(key)
		switch {
		case !lit:
			x.fail(obj+" lookup with a computed name", span{t.start, stop})
		case v == "os" || v == "io":
			obj, end = v, stop
			continue
		default:
			x.target(obj+" lookup", obj, v, t.start, stop)
		}
		return
	}
}

// --- shared constructs ---

// importName judges a module loaded by name: __import__(name),
// importlib.import_module(name), import(name), lua's require(name).
func (x *indirect) importName(t codeTok, construct string) {
	if !x.opens(t, '(') {
		x.fail(construct+" used as a value", span{t.start, t.end})
		return
	}
	args, stop := x.args(t.next), x.close(t.next)
	if len(args) == 0 {
		return
	}
	if _, ok := x.literal(args[0]); !ok {
		x.fail(construct+" of a computed name", span{t.start, stop})
	}
}

// alias fails closed on `import name as other` (python, node) of a call
// that runs: from os import system as s.
func (x *indirect) alias(i int) {
	if i == 0 || !x.adjacent(i-1, i) || !x.capable {
		return
	}
	if n := x.name(x.toks[i-1]); x.runs("", n) {
		x.fail("alias of "+n, span{x.toks[i-1].start, x.toks[i].end})
	}
}

// operators reads the constructs that are not led by an identifier: perl's
// &{"name"}, &$ref, ->$method and ->(), php's "name"(), (expr)() and
// $a[k]().
func (x *indirect) operators() {
	m := x.masked
	switch x.l {
	case langPerl:
		for k := 0; k+1 < len(m); k++ {
			if m[k] == '&' || m[k] == '-' || m[k] == '*' {
				x.perlOperator(k)
			}
		}
	case langPHP:
		for _, lit := range x.lits {
			if k := x.skipBlank(lit.end); k < len(m) && m[k] == '(' {
				x.calledValue(span{lit.start, lit.end}, lit.start, k)
			}
		}
		for k := range len(m) {
			if (m[k] == ')' || m[k] == ']' || m[k] == '}') && x.pair[k] > 0 {
				if j := x.skipBlank(k + 1); j < len(m) && m[j] == '(' {
					x.phpCalledResult(k)
				}
			}
		}
	}
}

// perlOperator judges &{...} and &$ref (calls of a sub by a computed name
// or reference), *{...} (a glob by name), ->$method and ->() at k.
func (x *indirect) perlOperator(k int) {
	m := x.masked
	switch {
	case (m[k] == '&' || m[k] == '*') && m[k+1] == '{' && !x.operandBefore(k) && (k == 0 || m[k-1] != '\\' && m[k-1] != '&'):
		construct, stop := string(m[k])+"{...}", x.close(k+1)
		v, ok := x.literal(span{k + 2, x.inner(k + 1)})
		switch {
		case !ok:
			x.failIf(construct+" with a computed name", span{k, stop})
		case m[k] == '&':
			x.target(construct, "", v, k, stop)
		case x.runs("", v):
			x.fail(fmt.Sprintf("%s of %q", construct, v), span{k, stop}) // *{"POSIX::system"}{CODE}
		}
	case m[k] == '&' && m[k+1] == '$' && !x.operandBefore(k) && (k == 0 || m[k-1] != '\\' && m[k-1] != '&'):
		x.failIf("&$ref call", span{k, min(k+2, len(m))})
	case m[k] == '-' && m[k+1] == '>' && k+2 < len(m) && m[k+2] == '$':
		x.failIf("->$method call", span{k, k + 3})
	case m[k] == '-' && m[k+1] == '>' && k+2 < len(m) && m[k+2] == '(':
		x.failIf("code reference call", span{k, x.close(k + 2)})
	}
}

// phpCalledResult judges a call of what an expression gives: (expr)(...),
// f()(...), $a["k"](...), [$o, "m"](...).
func (x *indirect) phpCalledResult(closing int) {
	open, call := int(x.pair[closing])-1, x.skipBlank(closing+1)
	sp := span{open, x.close(call)}
	before := strings.ToLower(x.wordBefore(open))
	switch {
	case x.masked[closing] == '}':
		if p := x.prevByte(open); p == '$' || p == '>' { // ${"f"}(...), $o->{"m"}(...)
			x.fail("call of a computed name", sp)
		}
	case x.masked[closing] == ']':
		x.fail("call of an array element", sp)
	case phpControl[before] || phpCasts[strings.ToLower(x.plain(span{open + 1, closing}))]:
		// if (...) (...), (int) ($x): no call
	case phpExprWords[before]:
		x.calledValue(span{open + 1, closing}, open, call) // return ($f)(...)
	case before != "" || x.prevByte(open) == ')' || x.prevByte(open) == ']':
		x.fail("call of a returned function", sp)
	default:
		x.calledValue(span{open + 1, closing}, open, call)
	}
}

// phpControl are the words whose parenthesized condition a statement
// follows; phpExprWords those a parenthesized expression may follow;
// phpCasts the types of a cast.
var (
	phpControl   = map[string]bool{"if": true, "elseif": true, "while": true, "switch": true, "match": true, "foreach": true, "for": true}
	phpExprWords = map[string]bool{"return": true, "echo": true, "print": true, "and": true, "or": true, "xor": true, "case": true}
	phpCasts     = map[string]bool{"int": true, "integer": true, "bool": true, "boolean": true, "float": true, "double": true,
		"string": true, "array": true, "object": true, "binary": true}
)

// wordBefore returns the identifier that ends just before open, blanks
// aside, or "".
func (x *indirect) wordBefore(open int) string {
	end := x.prevNonBlank(open) + 1
	k := end
	for k > 0 && isIdentByte(x.masked[k-1]) {
		k--
	}
	return x.masked[k:end]
}

// calledValue judges a php expression called in place at call: a closure
// (read as code), a function name, anything else computed.
func (x *indirect) calledValue(expr span, at, call int) {
	v, ok := x.callee(expr)
	switch {
	case !ok:
		x.fail("call of a computed name", span{at, x.close(call)})
	case v != "function":
		x.target("string call", "", v, at, call)
	}
}

// --- judging ---

// callIndex finds a language's inline calls by name.
type callIndex struct {
	exact  map[string]inlineCall
	byLast map[string]inlineCall // by the name's last component: Open3.capture2 as capture2
}

var inlineIndex = indexCalls()

func indexCalls() map[lang]callIndex {
	out := make(map[lang]callIndex, len(inlineCalls))
	for l, calls := range inlineCalls {
		idx := callIndex{exact: map[string]inlineCall{}, byLast: map[string]inlineCall{}}
		for _, c := range calls {
			idx.exact[c.name] = c
			if _, seen := idx.byLast[lastPart(c.name)]; !seen {
				idx.byLast[lastPart(c.name)] = c
			}
		}
		out[l] = idx
	}
	return out
}

// indirectNames are names that run, load or look up code besides the
// inline calls, by language: reached through a lookup, they fail closed.
var indirectNames = map[lang][]string{
	langPython: {"__import__", "import_module", "getattr", "__getattribute__", "__builtins__", "__globals__",
		"__subclasses__", "__loader__", "load_module", "exec_module", "modules", "methodcaller", "attrgetter",
		"posix_spawn", "posix_spawnp", "startfile", "fork", "forkpty", "execle", "execlpe", "spawnle", "spawnlpe",
		"spawnve", "spawnvpe", "create_subprocess_shell", "create_subprocess_exec", "globals", "locals", "vars"},
	langRuby: {"send", "public_send", "__send__", "method", "public_method", "instance_method", "singleton_method",
		"const_get", "module_eval", "instance_exec", "class_exec", "binding", "syscall", "fork", "popen",
		"popen2", "popen2e", "popen3", "capture2", "capture2e", "capture3", "pipeline", "`", "open",
		"define_method", "load", "require"},
	langPerl: {"readpipe", "syscall", "fork", "open2", "open3", "capture", "can", "require", "do"},
	langNode: {"require", "import", "mainModule", "binding", "_linkedBinding", "dlopen", "constructor", "fork",
		"process", "globalThis", "global", "Reflect", "_load", "execPath"},
	langPHP: {"call_user_func", "call_user_func_array", "forward_static_call", "forward_static_call_array",
		"create_function", "array_map", "array_filter", "array_walk", "usort", "preg_replace_callback",
		"register_shutdown_function", "expect_popen", "dl"},
	langLua: {"execute", "popen", "remove", "load", "loadstring", "dofile", "loadfile", "require"},
}

// lookup returns the inline call a name reached through obj names:
// os + system is os.system, POSIX::system is system.
func (x *indirect) lookup(obj, name string) (inlineCall, bool) {
	if x.l == langPHP {
		name = strings.ToLower(name) // php function names ignore case
	}
	if k := strings.LastIndex(name, "::"); k >= 0 {
		name = name[k+2:]
	}
	idx := inlineIndex[x.l]
	if c, ok := idx.exact[obj+"."+name]; ok && obj != "" {
		return c, true
	}
	if c, ok := idx.exact[name]; ok {
		return c, true
	}
	if slices.Contains(indirectNames[x.l], name) {
		return inlineCall{}, false
	}
	c, ok := idx.byLast[name]
	return c, ok
}

// dangerous reports a name that runs, deletes, writes or looks up code.
func (x *indirect) dangerous(obj, name string) bool {
	if _, ok := x.lookup(obj, name); ok {
		return true
	}
	if k := strings.LastIndex(name, "::"); k >= 0 {
		name = name[k+2:]
	}
	return slices.Contains(indirectNames[x.l], name)
}

// runs reports a name that runs a command or code, or deletes: what an
// alias or a reference kept for later must not hide.
func (x *indirect) runs(obj, name string) bool {
	c, ok := x.lookup(obj, name)
	return ok && c.kind != callWrite || !ok && x.dangerous(obj, name)
}

// target judges a lookup of a literal name at [at, end): as the call it
// names when called in place, else failing closed if the name is one that
// runs, deletes, writes or looks up.
func (x *indirect) target(construct, obj, name string, at, end int) {
	if !x.dangerous(obj, name) {
		return
	}
	call, ok := x.lookup(obj, name)
	region, called := x.calledAt(end)
	switch {
	case !ok:
		x.fail(fmt.Sprintf("%s of %q", construct, name), span{at, end})
	case !called:
		x.fail(fmt.Sprintf("%s of %q used as a value", construct, name), span{at, end})
	default:
		x.hit(call, at, region, construct)
	}
}

// targetArgs judges a call of a literal name given its arguments in place:
// send(:system, "ls"), call_user_func("system", "ls").
func (x *indirect) targetArgs(construct, obj, name string, at int, args span) {
	if !x.dangerous(obj, name) {
		return
	}
	call, ok := x.lookup(obj, name)
	if !ok {
		x.fail(fmt.Sprintf("%s of %q", construct, name), span{at, args.end})
		return
	}
	x.hit(call, at, args, construct)
}

// hit records a call to judge. Reached through a lookup, a call that runs
// is unambiguous wherever the code can reach one (getattr(x, "run") is
// subprocess's when the code imports it), so it is judged strictly.
func (x *indirect) hit(call inlineCall, at int, region span, via string) {
	call.strict = call.strict || x.capable
	x.hits = append(x.hits, indirectHit{call: call, at: at, region: region, via: via})
}

// judgeHits judges the calls reached through literal names, in source
// order. A region inside one judged as the same call that runs is not
// judged again: its literals were (the direct search does the same).
func (x *indirect) judgeHits() {
	sort.SliceStable(x.hits, func(i, j int) bool { return x.hits[i].region.start < x.hits[j].region.start })
	done := map[string]int{}
	for _, h := range x.hits {
		x.w.d.charge(1, 0)
		if h.call.kind != callDelete && h.call.kind != callWrite {
			if h.region.start < done[h.call.name] {
				continue
			}
			done[h.call.name] = h.region.end
		}
		x.judge(h)
	}
}

// judge judges one call as inline judges a direct one.
func (x *indirect) judge(h indirectHit) {
	w, f, sp := x.w, x.f, span{h.at, h.region.end}
	name := h.call.name
	if h.via != name {
		name += " through " + h.via
	}
	switch h.call.kind {
	case callShell, callArgv, callCode:
		in := litsIn(x.lits, h.region)
		interpolated := slices.ContainsFunc(in, x.interpolated)
		if h.call.strict && (len(in) == 0 || interpolated || dynamicArgs(x.masked, h.region, h.call.kind == callArgv)) {
			w.d.add(f, ruleUnresolved, name+" runs a command built at run time", "", sp)
		}
		switch {
		case len(in) == 0:
		case h.call.kind == callCode:
			w.inlineCode(x.l, f, in, sp, name)
		default:
			w.inlineShell(f, in, sp, name)
		}
	default:
		in := x.firstLits(h.region, 3)
		if pipe := perlPipe(x.l, h.call, in); pipe != nil {
			w.inlineShell(f, pipe, sp, name)
			return
		}
		w.inlinePath(f, h.call, in, sp)
	}
}

// firstLits returns at most n literals of a region, the first ones.
func (x *indirect) firstLits(sp span, n int) []codeLit {
	from := sort.Search(len(x.lits), func(i int) bool { return x.lits[i].start >= sp.start })
	to := from
	for to < len(x.lits) && to-from < n && x.lits[to].start < sp.end {
		to++
	}
	return slices.Clone(x.lits[from:to])
}

// --- reading the masked code ---

func (x *indirect) name(t codeTok) string { return x.masked[t.start:t.end] }

// lastPart returns a name's last component: system for os.system and POSIX::system.
func lastPart(name string) string {
	k := strings.LastIndexByte(name, '.') + 1
	if c := strings.LastIndex(name, "::"); c >= 0 && c+2 > k {
		k = c + 2
	}
	return name[k:]
}

// namePrefix returns what a name's last component is looked up on: os for
// os.system, "" for .send and send.
func namePrefix(name string) string {
	k := max(strings.LastIndexByte(name, '.'), strings.LastIndex(name, "::"))
	if k <= 0 {
		return ""
	}
	return name[:k]
}

func isQuoteByte(c byte) bool          { return c == '\'' || c == '"' || c == '`' }
func isOpenBracket(c byte) bool        { return c == '(' || c == '[' || c == '{' }
func isBlankByte(c byte) bool          { return c == ' ' || c == '\t' }
func (x *indirect) close(open int) int { return int(x.pair[open]) }

// inner returns the offset of the bracket closing the one at open, or the
// end of the code.
func (x *indirect) inner(open int) int {
	c := x.close(open)
	if c-1 > open && int(x.pair[c-1]) == open+1 {
		return c - 1
	}
	return c
}

func (x *indirect) skipBlank(i int) int {
	for i < len(x.masked) && isBlankByte(x.masked[i]) {
		i++
	}
	return i
}

func (x *indirect) prevByte(i int) byte {
	if i <= 0 || i > len(x.masked) {
		return 0
	}
	return x.masked[i-1]
}

// prevNonBlank returns the offset of the last byte before i that is not
// blank, or -1.
func (x *indirect) prevNonBlank(i int) int {
	k := i - 1
	for k >= 0 && (isBlankByte(x.masked[k]) || x.masked[k] == '\n') {
		k--
	}
	return k
}

// operandBefore reports that & at k follows an operand, so it is perl's
// bitwise and, not a sub call.
func (x *indirect) operandBefore(k int) bool {
	p := x.prevNonBlank(k)
	return p >= 0 && (isIdentByte(x.masked[p]) || strings.IndexByte(")]\"'`", x.masked[p]) >= 0)
}

// opens reports that a token is followed by the bracket c.
func (x *indirect) opens(t codeTok, c byte) bool {
	return t.next < len(x.masked) && x.masked[t.next] == c
}

// declared reports a token that a definition names: def send, sub can.
func (x *indirect) declared(i int) bool {
	if i == 0 {
		return false
	}
	switch x.name(x.toks[i-1]) {
	case "def", "function", "sub", "class", "module", "fn":
		return x.adjacent(i-1, i)
	}
	return false
}

// adjacent reports two tokens separated by blanks only.
func (x *indirect) adjacent(i, j int) bool {
	return strings.Trim(x.masked[x.toks[i].end:x.toks[j].start], " \t") == ""
}

// sigil reports a ruby symbol, instance or global variable: :send, @send.
func (x *indirect) sigil(t codeTok) bool {
	p := x.prevByte(t.start)
	return p == '@' || p == '$' || p == ':' && x.prevByte(t.start-1) != ':'
}

// symbolEnd returns the end of a ruby symbol's name starting at i.
func (x *indirect) symbolEnd(i int) int {
	for i < len(x.masked) && isIdentByte(x.masked[i]) && x.masked[i] != '.' {
		i++
	}
	if i < len(x.masked) && strings.IndexByte("?!", x.masked[i]) >= 0 {
		i++
	}
	return i
}

// stmtEnd returns where a statement that goes on at i ends: at a ; or a
// newline, or at the bracket that encloses it.
func (x *indirect) stmtEnd(i, enc int) int {
	m := x.masked
	if x.sep == nil {
		x.sep = make([]int32, len(m)+1)
		x.sep[len(m)] = int32(len(m))
		for k := len(m) - 1; k >= 0; k-- {
			x.sep[k] = x.sep[k+1]
			if m[k] == ';' || m[k] == '\n' {
				x.sep[k] = int32(k)
			}
		}
	}
	end := int(x.sep[min(i, len(m))])
	if enc >= 0 {
		end = min(end, x.inner(enc))
	}
	return end
}

// args returns the top-level comma-separated arguments inside the bracket
// at open. Nested brackets are skipped through their pairs, so each byte
// is read at its own level only.
func (x *indirect) args(open int) []span {
	m := x.masked
	end := x.inner(open)
	var out []span
	from := open + 1
	for k := from; k < end; k++ {
		switch {
		case isOpenBracket(m[k]):
			k = x.close(k) - 1
		case m[k] == ',':
			out = append(out, span{from, k})
			from = k + 1
		}
	}
	if last := x.trim(span{from, end}); len(out) > 0 || last.start < last.end {
		out = append(out, span{from, end})
	}
	return out
}

// rest returns the span of the arguments from k on (empty at the end of
// the last one when there are none).
func argsFrom(args []span, k int) span {
	if k >= len(args) {
		e := 0
		if len(args) > 0 {
			e = args[len(args)-1].end
		}
		return span{e, e}
	}
	return span{args[k].start, args[len(args)-1].end}
}

// trim returns a span without its leading and trailing blanks and newlines.
func (x *indirect) trim(sp span) span {
	m := x.masked
	sp.end = min(sp.end, len(m))
	for sp.start < sp.end && (isBlankByte(m[sp.start]) || m[sp.start] == '\n') {
		sp.start++
	}
	for sp.end > sp.start && (isBlankByte(m[sp.end-1]) || m[sp.end-1] == '\n') {
		sp.end--
	}
	return sp
}

// plain returns an argument that is a plain name (os, self.x), or "".
func (x *indirect) plain(sp span) string {
	sp = x.trim(sp)
	for k := sp.start; k < sp.end; k++ {
		if !isIdentByte(x.masked[k]) {
			return ""
		}
	}
	return x.masked[sp.start:sp.end]
}

// litAt returns the literal that starts at i.
func (x *indirect) litAt(i int) (codeLit, bool) {
	k := sort.Search(len(x.lits), func(k int) bool { return x.lits[k].start >= i })
	if k < len(x.lits) && x.lits[k].start == i {
		return x.lits[k], true
	}
	return codeLit{}, false
}

// literal returns the value of an argument that is one literal name: a
// string without interpolation (with a python r, b or u prefix), a ruby
// symbol, a number. Anything else, concatenations included, is computed.
func (x *indirect) literal(sp span) (string, bool) {
	sp = x.trim(sp)
	m := x.masked
	if sp.start >= sp.end {
		return "", false
	}
	s := sp.start
	switch {
	case x.l == langRuby && m[s] == ':' && s+1 < sp.end && isIdentByte(m[s+1]):
		if x.symbolEnd(s+1) == sp.end {
			return m[s+1 : sp.end], true
		}
		return "", false
	case x.l == langRuby && m[s] == ':' && s+1 < sp.end:
		s++ // :"name"
	case x.l == langPython:
		for k := s; k < min(s+2, sp.end) && strings.IndexByte("rRbBuU", m[k]) >= 0; k++ {
			s++
		}
	}
	if lit, ok := x.litAt(s); ok && lit.end == sp.end && !x.interpolated(lit) {
		return lit.val, true
	}
	if strings.Trim(m[sp.start:sp.end], "0123456789") == "" {
		return m[sp.start:sp.end], true
	}
	return "", false
}

// interpolated reports a literal whose value is built at run time: a
// python f-string, "#{x}" in ruby, "$x" in perl and php, `${x}` in node.
func (x *indirect) interpolated(lit codeLit) bool {
	src := x.f.src
	if lit.start >= len(src) {
		return false
	}
	q, raw := src[lit.start], src[lit.body:max(lit.body, min(lit.end-1, len(src)))]
	switch x.l {
	case langPython:
		k := lit.start
		for k > 0 && lit.start-k < 2 && strings.IndexByte("rRbBuUfF", src[k-1]) >= 0 {
			k--
		}
		return strings.ContainsAny(src[k:lit.start], "fF") && strings.Contains(raw, "{")
	case langRuby:
		interp := q == '"' || q == '`' || q == '%' && lit.start+1 < len(src) && strings.IndexByte("QxW", src[lit.start+1]) >= 0
		return interp && unescapedMark(raw, "#{", "#@", "#$")
	case langPerl:
		return (q == '"' || q == '`' || strings.HasPrefix(src[lit.start:], "qq") || strings.HasPrefix(src[lit.start:], "qx")) &&
			unescapedSigil(raw)
	case langPHP:
		return (q == '"' || q == '`') && unescapedSigil(raw)
	case langNode:
		return q == '`' && unescapedMark(raw, "${")
	}
	return false
}

// unescaped reports any of marks in s not after a backslash.
func unescapedMark(s string, marks ...string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		for _, mk := range marks {
			if strings.HasPrefix(s[i:], mk) {
				return true
			}
		}
	}
	return false
}

// unescapedSigil reports a $ or @ not after a backslash that starts a
// variable: "$x", "@{[ ... ]}", "${x}".
func unescapedSigil(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case (s[i] == '$' || s[i] == '@') && (isIdentByte(s[i+1]) && s[i+1] != '.' || s[i+1] == '{' || s[i+1] == ':'):
			return true
		}
	}
	return false
}

// subscript returns the key of a lookup that follows end: [key], or
// .get(key), .__getitem__(key), .pop(key) in python; and where it stops.
func (x *indirect) subscript(end int) (span, int, bool) {
	m := x.masked
	j := x.skipBlank(end)
	if j < len(m) && m[j] == '[' {
		return span{j + 1, x.inner(j)}, x.close(j), true
	}
	if x.l != langPython {
		return span{}, 0, false
	}
	for _, get := range []string{".get(", ".__getitem__(", ".pop("} {
		if strings.HasPrefix(m[j:], get) {
			open := j + len(get) - 1
			if args := x.args(open); len(args) > 0 {
				return args[0], x.close(open), true
			}
		}
	}
	return span{}, 0, false
}

// calledAt returns the arguments of a call that follows end: (...), and
// .call(...) or .apply(...) in node and ruby, .() and [...] in ruby, ->(...)
// in perl.
func (x *indirect) calledAt(end int) (span, bool) {
	m := x.masked
	j := x.skipBlank(end)
	open := -1
	switch {
	case j < len(m) && m[j] == '(':
		open = j
	case x.l == langPerl && strings.HasPrefix(m[j:], "->("):
		open = j + 2
	case (x.l == langNode || x.l == langRuby) && (strings.HasPrefix(m[j:], ".call(") || strings.HasPrefix(m[j:], ".apply(")):
		open = j + strings.IndexByte(m[j:], '(')
	case x.l == langRuby && strings.HasPrefix(m[j:], ".("):
		open = j + 1
	case x.l == langRuby && j < len(m) && m[j] == '[':
		open = j
	case x.l == langRuby && strings.HasPrefix(m[j:], ".call") && j+5 < len(m) && isBlankByte(m[j+5]):
		return span{j + 5, x.stmtEnd(j+5, -1)}, true // .call "cmd"
	}
	if open < 0 {
		return span{}, false
	}
	return span{open, x.close(open)}, true
}
