package policy

import (
	"slices"
	"sort"
	"strings"
)

// findCall finds name( or name "..." in masked code from offset from, as a
// whole identifier (a preceding . is fine), and returns its argument region.
func findCall(masked, name string, from int, l lang) (int, span, bool) {
	for from < len(masked) {
		i := strings.Index(masked[from:], name)
		if i < 0 {
			return 0, span{}, false
		}
		at := from + i
		from = at + len(name)
		if at > 0 && (isIdentByte(masked[at-1]) && masked[at-1] != '.' || masked[at-1] == '$' || masked[at-1] == '@') {
			continue
		}
		j := from
		if j < len(masked) && isIdentByte(masked[j]) && masked[j] != '.' {
			continue
		}
		for j < len(masked) && (masked[j] == ' ' || masked[j] == '\t') {
			j++
		}
		if j < len(masked) && masked[j] == '(' {
			return at, span{j, matchParen(masked, j)}, true
		}
		// perl and ruby call without parentheses: system "cmd", args
		if (l == langPerl || l == langRuby) && j > from && j < len(masked) && (strings.IndexByte("'\"`qx%$@", masked[j]) >= 0 || callAt(masked, j) ||
			l == langPerl && perlHandleAt(masked, j)) {
			end := strings.IndexAny(masked[j:], ";\n")
			if end < 0 {
				end = len(masked) - j
			}
			return at, span{j, j + end}, true
		}
	}
	return 0, span{}, false
}

// callAt reports whether a function call starts at offset j: an
// identifier and its opening parenthesis (system pack("H*", ...)).
func callAt(masked string, j int) bool {
	k := j
	for k < len(masked) && (isIdentByte(masked[k]) || masked[k] == ':') {
		k++
	}
	return k > j && k < len(masked) && masked[k] == '('
}

// perlHandleAt reports a file handle that starts a call's arguments at
// offset j: open F, ">", ... or open my $fh, ...
func perlHandleAt(masked string, j int) bool {
	if strings.HasPrefix(masked[j:], "my ") || strings.HasPrefix(masked[j:], "local ") {
		return true
	}
	k := j
	for k < len(masked) && isIdentByte(masked[k]) && masked[k] != '.' {
		k++
	}
	for k < len(masked) && masked[k] == ' ' {
		k++
	}
	return k > j && k < len(masked) && masked[k] == ','
}

// matchParen returns the offset just past the parenthesis closing the one
// at open (or the end of the code).
func matchParen(masked string, open int) int {
	depth := 0
	for k := open; k < len(masked); k++ {
		switch masked[k] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return k + 1
			}
		}
	}
	return len(masked)
}

// litsIn returns the literals inside a region. lits are in source order,
// so the region's are found by binary search: a program with many calls
// costs no more than its size times their number's logarithm.
func litsIn(lits []codeLit, sp span) []codeLit {
	from := sort.Search(len(lits), func(i int) bool { return lits[i].start >= sp.start })
	to := from + sort.Search(len(lits)-from, func(i int) bool { return lits[from+i].start >= sp.end })
	return slices.Clone(lits[from:to])
}

// litBefore returns the literal a method call is made on, as in
// Path("/etc").rmdir(): the last literal on the same line before at.
func litBefore(lits []codeLit, masked string, at int) []codeLit {
	lineStart := strings.LastIndexByte(masked[:at], '\n') + 1
	for i := len(lits) - 1; i >= 0; i-- {
		if lits[i].end <= at && lits[i].start >= lineStart {
			return lits[i : i+1]
		}
	}
	return nil
}

// dynamicArgs reports whether the command argument of a call (the first
// argument; every positional argument of an argv-style call) holds more
// than string literals: a variable, a function call, an f-string. Such a
// command is built at run time.
func dynamicArgs(masked string, region span, argv bool) bool {
	inner := masked[region.start:min(region.end, len(masked))]
	if strings.HasPrefix(inner, "(") {
		inner = strings.TrimSuffix(inner[1:], ")")
	}
	for i, a := range splitTopLevel(inner) {
		a = strings.TrimSpace(a)
		switch {
		case i > 0 && !argv, strings.HasPrefix(a, "{"), keywordArg(a):
			continue
		}
		if hasCode(a) {
			return true
		}
	}
	return false
}

// splitTopLevel splits at commas outside brackets.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// keywordArg reports a name=value or name: value argument.
func keywordArg(a string) bool {
	i := 0
	for i < len(a) && (isIdentByte(a[i]) && a[i] != '.') {
		i++
	}
	rest := strings.TrimSpace(a[i:])
	return i > 0 && (strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==") || strings.HasPrefix(rest, ":"))
}

// hasCode reports whether a masked argument holds anything but literals
// (whose contents are blanked), constants and punctuation.
func hasCode(a string) bool {
	for i := 0; i < len(a); {
		c := a[i]
		if c == '$' && i+1 < len(a) && (isIdentByte(a[i+1]) || a[i+1] == '{' || a[i+1] == '(') {
			return true // a variable or an awk field: $x, ${x}, $1, $(NF-1)
		}
		if !isIdentByte(c) || c == '.' {
			i++
			continue
		}
		j := i
		for j < len(a) && isIdentByte(a[j]) {
			j++
		}
		word := a[i:j]
		next := byte(0)
		if j < len(a) {
			next = a[j]
		}
		switch {
		case strings.Trim(word, "0123456789.") == "":
		case (next == '\'' || next == '"' || next == '`') && strings.Trim(strings.ToLower(word), "rbu") == "":
			// a string prefix: r"...", b'...'
		case word == "True" || word == "False" || word == "None" || word == "true" || word == "false" ||
			word == "null" || word == "nil" || word == "undefined" || word == "qw" || word == "q" || word == "qq":
		default:
			return true
		}
		i = j
	}
	return false
}
