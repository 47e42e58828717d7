package policy

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// command is a simple command as the detector sees it: quotes removed,
// wrappers such as sudo or nice stripped, and the program named by the
// basename of its path (/bin/rm is rm).
type command struct {
	name string // basename of the program that actually runs
	args []arg  // its arguments
}

// commandOf resolves the words of a simple command. It reports false when
// the command runs no program the detector can name: no words (only
// assignments), a program name that is not a literal, or a wrapper that
// does not run its operand (command -v).
func commandOf(call *syntax.CallExpr) (command, bool) {
	words := make([]arg, len(call.Args))
	for i, w := range call.Args {
		words[i] = resolveWord(w)
	}
	return unwrap(words)
}

// unwrap strips wrapper programs from the front of words until it reaches
// the program that does the work. Every step consumes the wrapper's name and
// adds at most the words of a strictly shorter -S string, so it terminates.
func unwrap(words []arg) (command, bool) {
	for len(words) > 0 {
		w := words[0]
		if !w.lit || strings.Contains(w.val, homeMarker) {
			return command{}, false
		}
		name := w.val[strings.LastIndexByte(w.val, '/')+1:]
		if name == "" {
			return command{}, false
		}
		strip, ok := wrappers[name]
		if !ok {
			return command{name: name, args: words[1:]}, true
		}
		if words, ok = strip(words[1:]); !ok {
			return command{}, false
		}
	}
	return command{}, false
}

// A wrapper returns the words of the command it runs, or false if it runs none.
type wrapper func(args []arg) ([]arg, bool)

// wrappers are the programs whose operand is itself a command line.
var wrappers = map[string]wrapper{
	"sudo": optionsThen(optSpec{short: "ugpCDrtTUR", long: []string{
		"user", "group", "prompt", "close-from", "chdir", "role", "type",
		"command-timeout", "other-user", "chroot", "host"}}),
	"doas":  optionsThen(optSpec{short: "uC"}),
	"nice":  optionsThen(optSpec{short: "n", long: []string{"adjustment"}}),
	"nohup": optionsThen(optSpec{}),
	"exec":  optionsThen(optSpec{short: "a"}),
	"time":  optionsThen(optSpec{short: "fo", long: []string{"format", "output"}}),
	"timeout": func(args []arg) ([]arg, bool) {
		rest, _ := skipOptions(args, optSpec{short: "sk", long: []string{"signal", "kill-after"}})
		if len(rest) == 0 {
			return nil, false
		}
		return rest[1:], true // the duration
	},
	"command": func(args []arg) ([]arg, bool) {
		rest, opts := skipOptions(args, optSpec{})
		if slices.ContainsFunc(opts, func(o option) bool { return o.name == "v" || o.name == "V" }) {
			return nil, false // command -v only looks the name up
		}
		return rest, true
	},
	"busybox": func(args []arg) ([]arg, bool) { return args, true }, // busybox APPLET args...
	"env":     unwrapEnv,
}

// unwrapEnv strips env's options and NAME=VALUE words. With -S (split
// string) the string is split into words the way a shell would and those
// words lead the command.
func unwrapEnv(args []arg) ([]arg, bool) {
	rest, opts := skipOptions(args, optSpec{short: "uCS", long: []string{"unset", "chdir", "split-string"}})
	for len(rest) > 0 && rest[0].lit && strings.Contains(rest[0].val, "=") {
		rest = rest[1:]
	}
	for _, o := range opts {
		if o.name != "S" && o.name != "split-string" {
			continue
		}
		if !o.value.lit {
			return nil, false
		}
		split, ok := splitWords(o.value.val)
		if !ok {
			return nil, false
		}
		rest = append(split, rest...)
	}
	return rest, true
}

// splitWords splits s into words as the shell would for a single simple
// command, without expanding anything.
func splitWords(s string) ([]arg, bool) {
	f, err := parse(s)
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, false
	}
	words := make([]arg, len(call.Args))
	for i, w := range call.Args {
		words[i] = resolveWord(w)
	}
	return words, true
}

// optSpec describes a program's options that take a separate value.
type optSpec struct {
	short string   // short options that take a value, e.g. "u" for -u USER
	long  []string // long options that take a value, e.g. "user" for --user USER
}

// option is one parsed option: name is one letter for a short option or the
// long name without dashes.
type option struct {
	name  string
	value arg
}

// optionsThen returns a wrapper that skips options and runs the rest.
func optionsThen(spec optSpec) wrapper {
	return func(args []arg) ([]arg, bool) {
		rest, _ := skipOptions(args, spec)
		return rest, true
	}
}

// skipOptions parses getopt-style options at the front of args and returns
// the operands that follow. Parsing stops at "--", at "-", at the first word
// that does not start with "-", and at a word whose value is unknown.
func skipOptions(args []arg, spec optSpec) (rest []arg, opts []option) {
	i := 0
	for i < len(args) {
		a := args[i]
		if !a.lit || len(a.val) < 2 || a.val[0] != '-' {
			break
		}
		i++
		if a.val == "--" {
			break
		}
		if long, ok := strings.CutPrefix(a.val, "--"); ok {
			name, value, hasValue := strings.Cut(long, "=")
			o := option{name: name, value: arg{val: value, lit: true}}
			if !hasValue && slices.Contains(spec.long, name) && i < len(args) {
				o.value = args[i]
				i++
			}
			opts = append(opts, o)
			continue
		}
		for j := 1; j < len(a.val); j++ {
			o := option{name: a.val[j : j+1]}
			if strings.IndexByte(spec.short, a.val[j]) >= 0 {
				switch {
				case j+1 < len(a.val): // -uroot
					o.value = arg{val: a.val[j+1:], lit: true}
				case i < len(args): // -u root
					o.value = args[i]
					i++
				}
				opts = append(opts, o)
				break
			}
			opts = append(opts, o)
		}
	}
	return args[i:], opts
}
