package policy

import (
	"strings"
)

// codeLit is one string literal in interpreter code.
type codeLit struct {
	val   string // the value, escapes decoded
	start int    // offset of the opening quote (or q/%x prefix)
	body  int    // offset of the first content byte
	end   int    // offset just past the closing quote
	exact bool   // val appears verbatim at body
	shell bool   // a command literal (`...`, qx{...}, %x(...)): run by a shell
}

// lexCode finds the string literals of interpreter code and returns the
// code with literal contents and comments blanked out (same length), so
// that calls can be found by plain search. It is a tolerant scanner, not a
// parser: unusual syntax (regex literals with quotes) may hide a call,
// never invent one.
func lexCode(l lang, src string) (string, []codeLit) {
	masked := []byte(src)
	blank := func(from, to int) {
		for k := max(from, 0); k < min(to, len(masked)); k++ {
			if masked[k] != '\n' {
				masked[k] = ' '
			}
		}
	}
	var lits []codeLit
	for i := 0; i < len(src); {
		ch := src[i]
		switch {
		case ch == '#' && l != langNode && l != langLua,
			ch == '/' && strings.HasPrefix(src[i:], "//") && (l == langNode || l == langPHP),
			ch == '-' && strings.HasPrefix(src[i:], "--") && l == langLua:
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			blank(i, i+j)
			i += j
		case ch == '/' && strings.HasPrefix(src[i:], "/*") && (l == langNode || l == langPHP):
			j := strings.Index(src[i+2:], "*/")
			end := len(src)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			blank(i, end)
			i = end
		case ch == '\'' || ch == '"' || ch == '`':
			lit := lexQuoted(l, src, i)
			lits = append(lits, lit)
			blank(lit.body, lit.end-1)
			i = lit.end
		case (l == langPerl || l == langRuby) && isPercentQuote(l, src, i):
			lit := lexBracketed(src, i)
			lits = append(lits, lit)
			blank(lit.body, lit.end-1)
			i = lit.end
		case l == langLua && strings.HasPrefix(src[i:], "[["):
			j := strings.Index(src[i+2:], "]]")
			end := len(src)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			lits = append(lits, codeLit{val: src[i+2 : max(i+2, end-2)], start: i, body: i + 2, end: end, exact: true})
			blank(i+2, end-2)
			i = end
		default:
			i++
		}
	}
	return string(masked), lits
}

// lexQuoted scans a '...', "..." or `...` literal starting at i.
func lexQuoted(l lang, src string, i int) codeLit {
	q := src[i]
	raw := q == '\'' && l != langPython && l != langNode // only \\ and \' are escapes
	if l == langPython && i > 0 && (src[i-1] == 'r' || src[i-1] == 'R') {
		raw = true
	}
	triple := l == langPython && strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	body := i + 1
	if triple {
		body = i + 3
	}
	j := body
	for j < len(src) {
		if src[j] == '\\' && j+1 < len(src) {
			j += 2
			continue
		}
		if src[j] == q && (!triple || strings.HasPrefix(src[j:], strings.Repeat(string(q), 3))) {
			break
		}
		j++
	}
	content := src[body:min(j, len(src))]
	end := min(j+1, len(src))
	if triple {
		end = min(j+3, len(src))
	}
	val := content
	if strings.Contains(content, `\`) {
		if raw {
			val = strings.NewReplacer(`\\`, `\`, `\'`, `'`).Replace(content)
		} else {
			val = interpretEscapes(unicodeEscapes(content), false)
		}
	}
	shell := q == '`' && (l == langPerl || l == langRuby || l == langPHP)
	return codeLit{val: val, start: i, body: body, end: end, exact: val == content, shell: shell}
}

// unicodeEscapes decodes \uHHHH escapes, leaving other escapes alone.
func unicodeEscapes(s string) string {
	if !strings.Contains(s, `\u`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == 'u' {
			if n, v := hexPrefix(s[i+2:], 4); n == 4 {
				sb.WriteRune(rune(v))
				i += 5
				continue
			}
		}
		if s[i] == '\\' && i+1 < len(s) {
			sb.WriteByte(s[i])
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// isPercentQuote reports a Perl q/qq/qx/qw or Ruby %q/%Q/%x/%w literal at i.
func isPercentQuote(l lang, src string, i int) bool {
	if i > 0 && isIdentByte(src[i-1]) {
		return false
	}
	rest := src[i:]
	var prefixes []string
	if l == langPerl {
		prefixes = []string{"qq", "qx", "qw", "q"}
	} else {
		prefixes = []string{"%q", "%Q", "%x", "%w", "%W"}
	}
	for _, p := range prefixes {
		if strings.HasPrefix(rest, p) && len(rest) > len(p) && strings.IndexByte("({[</|!", rest[len(p)]) >= 0 {
			return true
		}
	}
	return false
}

// lexBracketed scans q{...}, qx(...), %x(...) and friends starting at i.
func lexBracketed(src string, i int) codeLit {
	j := i
	for j < len(src) && strings.IndexByte("({[</|!", src[j]) < 0 {
		j++
	}
	prefix := src[i:j]
	open := src[j]
	closeCh := map[byte]byte{'(': ')', '{': '}', '[': ']', '<': '>'}[open]
	if closeCh == 0 {
		closeCh = open
	}
	depth, k := 1, j+1
	for ; k < len(src); k++ {
		switch src[k] {
		case '\\':
			k++
		case closeCh:
			depth--
		case open:
			if closeCh != open {
				depth++
			}
		}
		if depth == 0 {
			break
		}
	}
	body, end := j+1, min(k+1, len(src))
	val := src[body:min(k, len(src))]
	shell := prefix == "qx" || prefix == "%x"
	return codeLit{val: val, start: i, body: body, end: end, exact: true, shell: shell}
}

// foldConcat returns code src, whose literals lexCode found as lits,
// with every run of plain string literals
// joined by the language's concatenation ('sh' + 'util', "sys" . "tem",
// Python's 'a' 'b') replaced by the one literal it makes, so that a name
// or a command split across literals is judged whole. Literals that
// interpolate, command literals, prefixed ones (f'…', b'…') and anything
// else between two literals (a variable, a call) end a run. It reports
// whether it joined any.
func foldConcat(l lang, src string, lits []codeLit) (string, bool) {
	var op string
	switch l {
	case langPython, langNode, langRuby:
		op = "+"
	case langPerl, langPHP:
		op = "."
	default:
		return src, false
	}
	plain := func(c codeLit) bool {
		if c.shell || c.start < 0 || c.end > len(src) || c.start >= c.body || c.start > 0 && isLetter(src[c.start-1]) {
			return false
		}
		opener := src[c.start:c.body]
		if opener != "'" && opener != `"` {
			return false // q{}, %q(), triple quotes, template literals
		}
		re := interpolations[l]
		return !interpolating(l, opener) || re == nil || !re.MatchString(c.val)
	}
	joins := func(between string) bool {
		t := strings.TrimSpace(between)
		return t == op || t == "" && l == langPython
	}
	var b strings.Builder
	last, folded := 0, false
	for i := 0; i < len(lits); {
		j := i
		for j+1 < len(lits) && plain(lits[j]) && plain(lits[j+1]) && joins(src[lits[j].end:lits[j+1].start]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		var val strings.Builder
		for k := i; k <= j; k++ {
			val.WriteString(lits[k].val)
		}
		b.WriteString(src[last:lits[i].start])
		b.WriteString(quoteCode(l, val.String()))
		last, folded = lits[j].end, true
		i = j + 1
	}
	if !folded {
		return src, false
	}
	b.WriteString(src[last:])
	return b.String(), true
}

// quoteCode writes s as a single-quoted literal of language l: only \\
// and \' are escaped, and a newline is written as \n in Python and
// JavaScript, whose single-quoted literals cannot hold one, and as itself
// elsewhere.
func quoteCode(l lang, s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n' && (l == langPython || l == langNode):
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
