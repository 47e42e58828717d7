package vercel

import (
	"bytes"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// errBadString is a log line whose data is not a JSON string.
var errBadString = errors.New("data is not a well-formed JSON string")

// unquote decodes the inside of a JSON string (its quotes removed) into
// bytes, keeping bytes that are not UTF-8: a lone surrogate
// \udc80-\udcff stands for the byte 80-ff (Python's surrogateescape),
// and raw bytes pass as they are. Other lone surrogates become U+FFFD, as
// in encoding/json.
func unquote(s []byte) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(out, s...), nil
		}
		out, s = append(out, s[:i]...), s[i:]
		if len(s) < 2 {
			return nil, errBadString
		}
		if b, ok := simpleEscape(s[1]); ok {
			out, s = append(out, b), s[2:]
			continue
		}
		r, ok := hex4(s)
		if !ok {
			return nil, errBadString
		}
		s = s[6:]
		switch {
		case utf16.IsSurrogate(r) && r < 0xDC00:
			if lo, ok := hex4(s); ok && lo >= 0xDC00 && lo < 0xE000 {
				out = utf8.AppendRune(out, utf16.DecodeRune(r, lo))
				s = s[6:]
			} else {
				out = utf8.AppendRune(out, utf8.RuneError)
			}
		case r >= 0xDC80 && r <= 0xDCFF:
			out = append(out, byte(r-0xDC00))
		case utf16.IsSurrogate(r):
			out = utf8.AppendRune(out, utf8.RuneError)
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return out, nil
}

// simpleEscape returns the byte the escape \c stands for.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// hex4 reads a \uXXXX escape at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
