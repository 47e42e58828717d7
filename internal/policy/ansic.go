package policy

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

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
