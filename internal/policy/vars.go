package policy

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Bounds on what the detector tracks about variables. Past them a value
// becomes partly unknown and the command too-complex.
const (
	maxValues   = 8        // distinct values one variable may hold
	maxValueLen = 64 << 10 // bytes of one value
)

// value is what the detector knows a variable may hold: any of vals, and
// possibly something it cannot know (set by the environment, read from
// input, computed at run time).
type value struct {
	vals    []string
	unknown bool
	env     bool   // the unknown value is only the worker's environment's, or unset (see taintEnv)
	carried taint  // what the unknown value holds, of carriedTaints: the environment's values, credential files' names, a token, a secrets file's content, a secret store's value
	over    string // the limit bounded cut vals at, "" if none
	// from is, for a working directory, the word cd reached it through
	// when the detector cannot resolve that word: rm -rf ./* there is
	// rm -rf "$WORD"/*.
	from *arg
	// id is, for a variable assigned a create's output ($(tool create
	// ...)), the resource that create made: the value is its ID. Any
	// other assignment, conditional or appending, gives a value without it.
	id *created
	// elems is, for an array assigned a list of literal words (a=(rm -rf
	// ./dist)), its elements; vals then holds the first, what $a gives.
	// Any other assignment gives a value without them.
	elems []string
	array bool
}

func known(vals ...string) value { return value{vals: vals} }

var unknownValue = value{unknown: true}

// carriedTaints are the taints a variable keeps from the value assigned
// to it, and gives to the words it is expanded in.
const carriedTaints = taintSecret | taintCredential | taintToken | taintEnvFile | taintStored

// union returns the values either a or b may hold.
func union(a, b value) value {
	out := value{vals: slices.Clone(a.vals), unknown: a.unknown || b.unknown, carried: a.carried | b.carried, from: cmp.Or(a.from, b.from)}
	out.env = out.unknown && (a.env || !a.unknown) && (b.env || !b.unknown)
	for _, v := range b.vals {
		if !slices.Contains(out.vals, v) {
			out.vals = append(out.vals, v)
		}
	}
	return out.bounded()
}

// bounded turns a value that grew past the limits into a partly unknown one.
// It says in over which limit it reached; the walker reports that as
// too-complex (walker.checkValue).
func (v value) bounded() value {
	if len(v.vals) > maxValues {
		v.vals, v.unknown, v.env = v.vals[:maxValues], true, false
		v.over = overValues
	}
	for i := 0; i < len(v.vals); i++ {
		if len(v.vals[i]) > maxValueLen {
			v.vals = slices.Delete(slices.Clone(v.vals), i, i+1)
			v.unknown, v.env = true, false
			v.over = overValueLen
			i--
		}
	}
	return v
}

// env is the shell state the detector tracks while it walks a script in
// source order: literal variable assignments, the working directory and the
// positional parameters. It is flow-insensitive where it has to be: an
// assignment in a branch, loop, subshell or function body adds its value to
// the ones the variable may already hold instead of replacing them.
type env struct {
	vars      map[string]value
	cwd       value
	args      []string // $0, $1, $2, ... when argsKnown
	argsKnown bool
	funcs     map[string]funcDef    // functions defined so far
	files     map[string]written    // files the script wrote, by fileKey
	unpacked  []string              // directories a downloaded archive was unpacked into, by fileKey
	links     links                 // symbolic links the command created: file system state, shared by every clone
	progs     progs                 // programs the command copied under another name: shared like links
	over      string                // a limit an assignment reached (value.over), until the walker reports it
	aliased   bool                  // the script defined an alias: a name may run something else
	aliases   map[string]shellAlias // alias NAME=VALUE the script defined, by name
	expanding map[string]bool       // the aliases being expanded (not expanded again inside their value)
	bashAlias bool                  // shopt -s expand_aliases: bash expands aliases outside an interactive shell
	xtrace    bool                  // set -x may be on: commands are printed expanded
	exported  map[string]bool       // names exported (export, declare -x, the job's), copied on write
	opaque    map[string]bool       // names declared with attributes that change values (-l, -u, -n, -i), copied on write
	allexport bool                  // set -a may be on: every assignment is exported
}

// newEnv is the environment a job starts in: the worker's own working
// directory and variables, which the operator chose.
func newEnv() *env { return &env{cwd: value{unknown: true, env: true}, links: links{}, progs: progs{}} }

// forgetArrays makes every array unknown: a shell the script starts is
// given none of them (bash exports no array).
func (e *env) forgetArrays() {
	for k, v := range e.vars {
		if v.array {
			e.vars[k] = unknownValue
		}
	}
}

// inheritedNames are variables a shell is always started with (from its
// own environment): assigned, they stay exported.
var inheritedNames = map[string]bool{"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "LANG": true,
	"TERM": true, "TMPDIR": true, "PWD": true}

// export marks name as exported: a shell the script starts is given it.
func (e *env) export(name string) { e.exported = withName(e.exported, name) }

// markOpaque marks name as one whose assignments the detector cannot
// read (declare -l, -u, -c, -i, -n: the shell changes the value, or it
// names another variable).
func (e *env) markOpaque(name string) { e.opaque = withName(e.opaque, name) }

// withName returns set with name in it: set itself when it has it, else a
// copy, so that what a clone adds does not reach the env it came from.
func withName(set map[string]bool, name string) map[string]bool {
	if set[name] {
		return set
	}
	m := make(map[string]bool, len(set)+1)
	for k := range set {
		m[k] = true
	}
	m[name] = true
	return m
}

// dropUnexported removes the variables another shell process is not
// given: those the script assigned and did not export (x=echo; sh -c '$x
// rm -rf ~' runs rm). There they hold the environment's value, or none.
func (e *env) dropUnexported() {
	if e.allexport {
		return
	}
	for k := range e.vars {
		if !e.exported[k] && !inheritedNames[k] {
			delete(e.vars, k)
		}
	}
}

// clone returns an independent copy, for a script run by another shell
// process (sh -c) or a function call.
func (e *env) clone() *env {
	c := *e
	if e.vars != nil {
		c.vars = make(map[string]value, len(e.vars))
		for k, v := range e.vars {
			c.vars[k] = v
		}
	}
	if e.files != nil {
		c.files = make(map[string]written, len(e.files))
		for k, v := range e.files {
			c.files[k] = v
		}
	}
	c.aliases, c.expanding, c.bashAlias = nil, nil, false // another shell process: aliases are not inherited
	if e.funcs != nil {
		c.funcs = make(map[string]funcDef, len(e.funcs))
		for k, v := range e.funcs {
			c.funcs[k] = v
		}
	}
	return &c
}

// get returns what the parameter name may hold. A name the script never
// assigned comes from the environment and is unknown, except HOME, whose
// value is the home directory (homeMarker), and PWD, the working directory.
func (e *env) get(name string) value {
	if v, ok := e.vars[name]; ok {
		return v
	}
	if n, err := strconv.Atoi(name); err == nil && n >= 0 {
		switch {
		case !e.argsKnown:
			return unknownValue
		case n < len(e.args):
			return known(e.args[n])
		}
		return known("")
	}
	switch name {
	case "HOME":
		return known(homeMarker)
	case "IFS":
		// the shell starts with IFS set to white space (a job cannot set
		// it: job.go refuses IFS in its environment)
		return known(" \t\n")
	case "PWD":
		return e.cwd
	case "$", "!", "#", "?", "PPID", "LINENO", "RANDOM", "SRANDOM", "UID", "EUID", "SECONDS", "BASHPID", "EPOCHSECONDS":
		// Numbers, or empty where the shell does not set them (dash has
		// no RANDOM): /tmp/build-$$ names a build directory, /$RANDOM
		// may name the root.
		return known("", "4242")
	}
	return value{unknown: true, env: true}
}

// set records an assignment; cond says it may not happen (or may happen in
// another process), so the old values stay possible.
func (e *env) set(name string, v value, cond bool) {
	if cond {
		v = union(e.get(name), v)
	}
	if e.vars == nil {
		e.vars = make(map[string]value)
	}
	e.vars[name] = v.bounded()
	e.over = cmp.Or(e.vars[name].over, e.over)
}

// markID records that the variable, just assigned a create's output,
// holds the ID of what r made.
func (e *env) markID(name string, r *created) {
	if v, ok := e.vars[name]; ok {
		v.id = r
		e.vars[name] = v
	}
}

// setCwd records a cd, like set.
func (e *env) setCwd(v value, cond bool) {
	if cond {
		v = union(e.cwd, v)
	}
	e.cwd = v.bounded()
	e.over = cmp.Or(e.cwd.over, e.over)
}

// setArgs sets the positional parameters $0, $1, ... of a nested script or
// function call.
func (e *env) setArgs(args []arg) {
	e.args, e.argsKnown = make([]string, 0, len(args)), true
	for _, a := range args {
		if !a.lit {
			e.args, e.argsKnown = nil, false
			return
		}
		v := a.val
		if rest, ok := strings.CutPrefix(v, "~"); ok && (rest == "" || rest[0] == '/') {
			// the caller's shell expanded an unquoted ~ before passing
			// it (a quoted one is ./~ by now): "$@" in the body is the home
			v = homeMarker + rest
		}
		e.args = append(e.args, v)
	}
}

// ifs returns the characters that split unquoted expansions: every
// character any known IFS value holds (splitting more fails closed), the
// default white space when IFS may be unset or unknown.
func (e *env) ifs() string {
	v, ok := e.vars["IFS"]
	if !ok {
		return " \t\n"
	}
	out := ""
	if v.unknown {
		out = " \t\n"
	}
	for _, s := range v.vals {
		out += s
	}
	return out
}
