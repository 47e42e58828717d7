package policy

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

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
	long  bool // given as --name
}

// skipOptions parses getopt-style options at the front of args and returns
// the operands that follow. Parsing stops at "--", at "-", at the first word
// that does not start with "-", and at a word whose value is unknown.
// uniquePrefix returns the one name in names that abbrev is a prefix of,
// as getopt_long reads an abbreviated long option.
func uniquePrefix(names []string, abbrev string) (string, bool) {
	found := ""
	for _, n := range names {
		if abbrev != "" && strings.HasPrefix(n, abbrev) {
			if found != "" {
				return "", false
			}
			found = n
		}
	}
	return found, found != ""
}

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
			o := option{name: name, value: arg{val: value, lit: true, pos: a.pos, end: a.end, exact: -1}, long: true}
			if !slices.Contains(spec.long, name) {
				if full, ok := uniquePrefix(spec.long, name); ok {
					name, o.name = full, full // timeout --k 5: getopt_long's --kill-after
				}
			}
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
					o.value = arg{val: a.val[j+1:], lit: true, pos: a.pos, end: a.end, exact: -1}
					if a.exact >= 0 {
						o.value.exact = a.exact + j + 1
					}
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

// hasOpt reports whether opts holds any of the named options.
func hasOpt(opts []option, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}

// operands returns the words of args that are not options, for programs
// that accept options anywhere (GNU style). Options in spec consume their
// value; "--" ends options.
func operands(args []arg, spec optSpec) (ops []arg, opts []option) {
	for len(args) > 0 {
		rest, o := skipOptions(args, spec)
		opts = append(opts, o...)
		if len(rest) == 0 {
			break
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1].val == "--" {
			return append(ops, rest...), opts
		}
		ops = append(ops, rest[0])
		args = rest[1:]
	}
	return ops, opts
}

// argListsOf returns the alternative argument lists of a statement that is
// a simple command with no assignments, or nil.
func (w *walker) argListsOf(s *syntax.Stmt) [][]arg {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil
	}
	return w.argLists(call.Args)
}
