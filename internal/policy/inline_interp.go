package policy

import (
	"regexp"
	"strings"
)

// unknownText is what an interpolation in interpreter code stands for in
// the shell command the detector judges: the output of a command it cannot
// know, chosen by whoever wrote the code (system("rm -rf $d") is
// rm -rf on an operand it cannot resolve, not on the shell's empty $d).
const unknownText = "$(cat /dev/null)"

// interpolations are the forms a language substitutes into its
// interpolating string literals.
var interpolations = map[lang]*regexp.Regexp{
	langPerl: regexp.MustCompile(`[$@](?:\{[^}]*\}|[A-Za-z_][A-Za-z0-9_:]*|[0-9]+)(?:(?:->)?(?:\[[^\]]*\]|\{[^}]*\}))*`),
	langPHP:  regexp.MustCompile(`\{\$[^}]*\}|\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\]|->[A-Za-z_][A-Za-z0-9_]*)*`),
	langRuby: regexp.MustCompile(`#(?:\{[^}]*\}|[@$][A-Za-z_@][A-Za-z0-9_]*)`),
	langNode: regexp.MustCompile(`\$\{[^}]*\}`),
}

// interpolating reports whether a literal opened by opener substitutes
// values in language l: "…" (not '…'), backticks, qq{}/qx{} in perl,
// %Q()/%x()/%() in ruby, template literals in node.
func interpolating(l lang, opener string) bool {
	switch l {
	case langPerl:
		return opener == `"` || opener == "`" || strings.HasPrefix(opener, "qq") || strings.HasPrefix(opener, "qx")
	case langRuby:
		return opener == `"` || opener == "`" || strings.HasPrefix(opener, "%Q") || strings.HasPrefix(opener, "%x") ||
			strings.HasPrefix(opener, "%W") || strings.HasPrefix(opener, "%I") || len(opener) == 2 && opener[0] == '%' && !isLetter(opener[1])
	case langPHP:
		return opener == `"` || opener == "`"
	case langNode:
		return opener == "`"
	}
	return false
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// interpolate replaces, in the literals of code src that interpolate, each
// interpolated value with unknownText.
func interpolate(l lang, src string, lits []codeLit) []codeLit {
	re, ok := interpolations[l]
	if !ok {
		return lits
	}
	var out []codeLit
	for i, lit := range lits {
		if lit.start < 0 || lit.body > len(src) || lit.start > lit.body || !interpolating(l, src[lit.start:lit.body]) || !re.MatchString(lit.val) {
			continue
		}
		if out == nil {
			out = append([]codeLit(nil), lits...)
		}
		out[i].val = re.ReplaceAllLiteralString(lit.val, unknownText)
		out[i].exact = false
	}
	if out == nil {
		return lits
	}
	return out
}
