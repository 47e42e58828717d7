package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// homeMarker stands for an unexpanded $HOME or ${HOME} in a resolved word.
// A NUL byte cannot occur in a real argument, so a quoted '$HOME' (the
// literal text) can never be mistaken for it.
const homeMarker = "\x00HOME"

// arg is one word of a simple command after quote removal.
type arg struct {
	val string // the word with quotes removed; $HOME kept as homeMarker
	lit bool   // the word is fully known without running anything
}

// resolveWord removes quotes and escapes from w the way the shell would,
// without expanding anything. A word that contains an expansion other than
// a plain $HOME (a variable, $(...), $((...)), <(...), an extended glob) is
// returned with lit=false: its run-time value is unknown.
func resolveWord(w *syntax.Word) arg {
	var sb strings.Builder
	lit := appendParts(&sb, w.Parts, false)
	return arg{val: sb.String(), lit: lit}
}

func appendParts(sb *strings.Builder, parts []syntax.WordPart, quoted bool) bool {
	lit := true
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if quoted {
				sb.WriteString(unescapeDouble(p.Value))
			} else {
				sb.WriteString(unescapeBare(p.Value))
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				sb.WriteString(decodeANSIC(p.Value))
			} else {
				sb.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			if !appendParts(sb, p.Parts, true) {
				lit = false
			}
		case *syntax.ParamExp:
			if isPlainHome(p) {
				sb.WriteString(homeMarker)
			} else {
				lit = false
			}
		default:
			lit = false
		}
	}
	return lit
}

func isPlainHome(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Param.Value == "HOME" && p.Flags == nil &&
		!p.Excl && !p.Length && !p.Width && !p.IsSet && p.NestedParam == nil &&
		p.Index == nil && len(p.Modifiers) == 0 && p.Slice == nil &&
		p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// unescapeBare removes backslash escapes from an unquoted literal: \x is x.
// (The parser has already dropped backslash-newline continuations.)
func unescapeBare(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// unescapeDouble removes the backslashes that are special inside double
// quotes: before $ ` " \ only; any other backslash is kept.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0 {
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// decodeANSIC decodes the body of a bash $'...' string. Like bash, it stops
// at a NUL byte (\0, \x00) or at \c.
func decodeANSIC(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'e', 'E':
			sb.WriteByte(0x1b)
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		case 'c':
			return sb.String()
		case 'x', 'u', 'U':
			width := 2
			switch e {
			case 'u':
				width = 4
			case 'U':
				width = 8
			}
			n, v := hexPrefix(s[i+1:], width)
			if n == 0 {
				sb.WriteByte('\\')
				sb.WriteByte(e)
				continue
			}
			i += n
			if v == 0 {
				return sb.String()
			}
			if e == 'x' {
				sb.WriteByte(byte(v))
			} else if v <= utf8.MaxRune {
				sb.WriteRune(rune(v))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			i = j - 1
			if byte(v) == 0 {
				return sb.String()
			}
			sb.WriteByte(byte(v))
		default: // \\ \' \" \? and unknown escapes
			if strings.IndexByte(`\'"?`, e) < 0 {
				sb.WriteByte('\\')
			}
			sb.WriteByte(e)
		}
	}
	return sb.String()
}

// hexPrefix parses up to width hex digits at the start of s.
func hexPrefix(s string, width int) (n int, v uint64) {
	for n < len(s) && n < width {
		d, err := strconv.ParseUint(s[n:n+1], 16, 8)
		if err != nil {
			break
		}
		v = v<<4 | d
		n++
	}
	return n, v
}
