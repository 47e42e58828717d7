package policy

import (
	"path"
	"slices"
	"strings"
)

// interpreterLang returns the language of an interpreter program, or
// langShell for any other program.
func interpreterLang(name string) lang {
	switch {
	case strings.HasPrefix(name, "python") && strings.Trim(name[6:], "0123456789.") == "",
		strings.HasPrefix(name, "pypy") && strings.Trim(name[4:], "0123456789.") == "":
		return langPython
	case canonical(name) == "perl":
		return langPerl
	case name == "ruby" || name == "jruby":
		return langRuby
	case name == "node" || name == "nodejs" || name == "bun":
		return langNode
	case strings.HasPrefix(name, "php") && strings.Trim(name[3:], "0123456789.") == "":
		return langPHP
	case strings.HasPrefix(name, "lua") && strings.Trim(name[3:], "0123456789.") == "", name == "luajit":
		return langLua
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		return langAwk
	}
	return langShell
}

// interpSpec describes an interpreter's options: those whose value is
// code, those that take a value (attached or next word), those that take
// only an attached value, and those after which no code is read (-m).
type interpSpec struct {
	code, value, attached, stop string
	digits                      string // options whose attached value is a number only (perl -l, -0)
	longCode, longValue         []string
}

var interpSpecs = map[lang]interpSpec{
	langPython: {code: "c", value: "WX", stop: "m"},
	langPerl:   {code: "eE", attached: "ixIMmCdD", digits: "l0"},
	langRuby:   {code: "e", value: "rICE", attached: "FiKx", digits: "0WT"},
	langNode:   {code: "ep", value: "rC", longCode: []string{"eval", "print"}, longValue: []string{"require", "import", "loader", "experimental-loader", "input-type", "conditions", "env-file"}},
	langPHP:    {code: "rBRE", value: "cdfz"},
	langLua:    {code: "e", value: "l"},
}

// interpreter judges an interpreter: each code option (python -c, perl -e,
// node -e, php -r), else a script operand that is generated content, else
// the code it reads on stdin.
func (w *walker) interpreter(c *command, l lang) {
	if l == langAwk {
		w.awk(c)
		return
	}
	spec := interpSpecs[l]
	var codes []arg
	var flag string
	i := 0
loop:
	for ; i < len(c.args); i++ {
		a := c.args[i]
		v := a.val
		switch {
		case !a.lit || len(v) < 2 || v[0] != '-':
			break loop
		case v == "--":
			i++
			break loop
		case strings.HasPrefix(v, "--"):
			name, val, hasVal := strings.Cut(v[2:], "=")
			isCode := slices.Contains(spec.longCode, name)
			if !hasVal && (isCode || slices.Contains(spec.longValue, name)) && i+1 < len(c.args) {
				i++
				a = c.args[i]
			} else if hasVal {
				a = arg{val: val, lit: a.lit, pos: a.pos, end: a.end, exact: -1}
			}
			if isCode {
				codes, flag = append(codes, a), "--"+name
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			ch := v[j : j+1]
			switch {
			case strings.Contains(spec.stop, ch):
				return // python -m module: no code on the command line
			case l == langRuby && ch == "c" && rubyChecksOnly(c):
				return // ruby -c checks the syntax and runs nothing
			case strings.Contains(spec.code, ch):
				code := arg{val: v[j+1:], lit: true, pos: a.pos, end: a.end, exact: -1}
				if a.exact >= 0 {
					code.exact = a.exact + j + 1
				}
				if j+1 == len(v) && i+1 < len(c.args) {
					i++
					code = c.args[i]
				}
				codes, flag = append(codes, code), "-"+ch
				continue loop
			case strings.Contains(spec.value, ch):
				if j+1 == len(v) {
					i++
				}
				continue loop
			case strings.Contains(spec.digits, ch):
				// perl -l and -0 take only an attached number: in -lne
				// and -0777e the letters after it are options (-e's code)
				digits := "0123456789"
				if ch == "0" && j+1 < len(v) && (v[j+1] == 'x' || v[j+1] == 'X') {
					j, digits = j+1, "0123456789abcdefABCDEF" // -0x1FF
				}
				for j+1 < len(v) && strings.IndexByte(digits, v[j+1]) >= 0 {
					j++
				}
			case strings.Contains(spec.attached, ch):
				continue loop
			}
		}
	}
	via := c.name + " " + flag
	for _, code := range codes {
		w.runCode(c, l, argCode(code), via, c.sp, nil, false)
	}
	if len(codes) > 0 {
		return
	}
	if ops := c.args[min(i, len(c.args)):]; len(ops) > 0 {
		if code, ok := djangoShell(l, ops); ok {
			w.runCode(c, l, argCode(code), c.name+" manage.py shell -c", c.sp, nil, false)
		}
		w.scriptOperand(c, l, ops[0], nil)
		return
	}
	w.stdinCode(c, l, nil)
}

// rubyChecksOnly reports a ruby -c call that loads no library first: no
// -r or -I (alone or in a cluster, -cr/tmp/x.rb), no RUBYOPT or RUBYLIB.
func rubyChecksOnly(c *command) bool {
	for _, v := range []string{"RUBYOPT", "RUBYLIB"} {
		if _, ok := c.vars[v]; ok {
			return false
		}
	}
	return !slices.ContainsFunc(c.args, func(a arg) bool {
		return !a.lit || strings.HasPrefix(a.val, "--") && a.val != "--" || strings.HasPrefix(a.val, "-") && strings.ContainsAny(a.val, "rI")
	})
}

// awk judges an awk program: the first operand unless -f gives a file,
// and gawk's -e/--source code.
func (w *walker) awk(c *command) {
	ops, opts := operands(c.args, optSpec{short: "FvfeWilE", long: []string{"field-separator", "assign", "file", "source", "include", "load", "exec"}})
	fromFile := false
	for _, o := range opts {
		switch o.name {
		case "e", "source":
			w.runCode(c, langAwk, argCode(o.value), c.name+" -e", c.sp, nil, false)
		case "f", "file", "E", "exec", "i", "include":
			fromFile = true
		}
	}
	if !fromFile && len(ops) > 0 {
		w.runCode(c, langAwk, argCode(ops[0]), c.name, c.sp, nil, false)
	}
}

// djangoShell returns the code of python manage.py shell -c CODE (or
// --command CODE, --command=CODE): Django runs it as Python with the
// project's models and database connection.
func djangoShell(l lang, ops []arg) (arg, bool) {
	if l != langPython || len(ops) < 3 || !ops[0].lit || path.Base(ops[0].val) != "manage.py" || ops[1].val != "shell" {
		return arg{}, false
	}
	for k := 2; k < len(ops); k++ {
		v := ops[k].val
		switch {
		case (v == "-c" || v == "--command") && k+1 < len(ops):
			return ops[k+1], true
		case strings.HasPrefix(v, "--command="):
			return arg{val: strings.TrimPrefix(v, "--command="), lit: ops[k].lit, pos: ops[k].pos, end: ops[k].end, exact: -1}, true
		}
	}
	return arg{}, false
}
