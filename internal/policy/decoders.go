package policy

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// decodeFunc decodes a literal payload, reporting false when it cannot.
type decodeFunc func(string) (string, bool)

func cannotDecode(string) (string, bool) { return "", false }

// decoder reports whether c decodes or transforms its input (base64 -d,
// xxd -r, openssl -d, uudecode, rev, tr, decompressors) and how to decode
// a literal payload, when the detector can.
func decoder(c *command) (decodeFunc, bool) {
	_, opts := operands(c.args, optSpec{short: "w", long: []string{"wrap"}})
	has := func(names ...string) bool { return hasOpt(opts, names...) }
	switch c.name {
	case "base64":
		return decodeBase64, has("d", "D", "decode")
	case "base32":
		return decodeBase32, has("d", "decode")
	case "basenc":
		return cannotDecode, has("d", "decode")
	case "xxd":
		if has("r", "revert") {
			if has("p", "ps", "plain", "postscript") {
				return decodeHex, true
			}
			return cannotDecode, true
		}
	case "openssl":
		if slices.ContainsFunc(c.args, func(a arg) bool { return a.val == "-d" }) {
			if len(c.args) > 0 && c.args[0].val == "base64" {
				return decodeBase64, true
			}
			return cannotDecode, true
		}
	case "uudecode", "gunzip", "zcat", "bzcat", "bunzip2", "unxz", "xzcat", "unzstd", "zstdcat", "lzcat", "unlzma":
		return cannotDecode, true
	case "gzip", "bzip2", "xz", "zstd", "lzma", "brotli":
		return cannotDecode, has("d", "decompress")
	case "rev":
		return decodeRev, true
	case "tr":
		if ops, _ := operands(c.args, optSpec{}); len(ops) == 2 && ops[0].lit && ops[1].lit && !has("d", "s", "c", "C") {
			from, to := ops[0].val, ops[1].val
			return func(s string) (string, bool) { return translate(s, from, to) }, true
		}
		return cannotDecode, true
	}
	return nil, false
}

// decodeBase64 decodes like base64 -d: the standard alphabet with its
// padding, newlines ignored. Anything else (URL-safe letters, missing
// padding, blanks, garbage) is not decoded: base64 -d stops there, having
// written only part of the payload, and a part of a benign command can
// be a harmful one (rm -rf /tmp/x cut to rm -rf /).
func decodeBase64(s string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(s) // ignores \r and \n
	return string(b), err == nil
}

func decodeBase32(s string) (string, bool) {
	b, err := base32.StdEncoding.DecodeString(s)
	return string(b), err == nil
}

func decodeHex(s string) (string, bool) {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	return string(b), err == nil
}

// decodeRev reverses every line, like rev.
// Text that is not ASCII is not decoded: rev reverses characters, not
// bytes.
func decodeRev(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", false
		}
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		b := []byte(l)
		for j, k := 0, len(b)-1; j < k; j, k = j+1, k-1 {
			b[j], b[k] = b[k], b[j]
		}
		lines[i] = string(b)
	}
	return strings.Join(lines, "\n"), true
}

// translate maps characters of set from to set to, like tr SET1 SET2 with
// ranges (a-z); sets with escapes or brackets (classes, [c*n]) are not
// decoded.
func translate(s, from, to string) (string, bool) {
	f, t := expandSet(from), expandSet(to)
	if len(f) == 0 || len(t) == 0 || strings.ContainsAny(from+to, "\\[") {
		return "", false
	}
	var m [256]byte
	var set [256]bool
	for i := range f {
		m[f[i]], set[f[i]] = t[min(i, len(t)-1)], true
	}
	b := []byte(s)
	for i, c := range b {
		if set[c] {
			b[i] = m[c]
		}
	}
	return string(b), true
}

func expandSet(s string) []byte {
	var out []byte
	for i := 0; i < len(s); i++ {
		if i+2 < len(s) && s[i+1] == '-' && s[i] <= s[i+2] {
			for c := int(s[i]); c <= int(s[i+2]); c++ {
				out = append(out, byte(c))
			}
			i += 2
			continue
		}
		out = append(out, s[i])
	}
	return out
}

// interpretEscapes decodes backslash escapes the way echo -e (echo=true:
// octal as \0NNN) or a printf format (\NNN) does; \c ends the output.
func interpretEscapes(s string, echo bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			sb.WriteByte(s[i])
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'v':
			sb.WriteByte('\v')
		case 'e', 'E':
			sb.WriteByte(0x1b)
		case '\\', '"', '\'':
			sb.WriteByte(e)
		case 'c':
			return sb.String()
		case 'x':
			n, v := hexPrefix(s[i+1:], 2)
			if n == 0 {
				sb.WriteString(`\x`)
				continue
			}
			sb.WriteByte(byte(v))
			i += n
		default:
			if e < '0' || e > '7' {
				sb.WriteByte('\\')
				sb.WriteByte(e)
				continue
			}
			j := i
			if echo && e == '0' {
				j++
			}
			k := j
			for k < len(s) && k < j+3 && s[k] >= '0' && s[k] <= '7' {
				k++
			}
			v, _ := strconv.ParseUint(s[j:k], 8, 16)
			if k == j {
				v = 0
			}
			sb.WriteByte(byte(v))
			i = k - 1
		}
	}
	return sb.String()
}

// printfText formats like printf FORMAT ARGS...: escapes in the format,
// every conversion takes the next argument (%b with its escapes
// interpreted), and the format repeats while arguments remain.
func printfText(format string, args []string) string {
	var sb strings.Builder
	for range 64 {
		used := false
		for i := 0; i < len(format); i++ {
			c := format[i]
			switch {
			case c == '\\' && i+1 < len(format):
				j := i + 2
				switch n := format[i+1]; {
				case n >= '0' && n <= '7':
					for j < len(format) && j < i+4 && format[j] >= '0' && format[j] <= '7' {
						j++
					}
				case n == 'x':
					k, _ := hexPrefix(format[j:], 2)
					j += k
				}
				sb.WriteString(interpretEscapes(format[i:j], false))
				i = j - 1
			case c == '%' && i+1 < len(format):
				j := i + 1
				for j < len(format) && strings.IndexByte("-+ #0123456789.", format[j]) >= 0 {
					j++
				}
				if j >= len(format) {
					sb.WriteString(format[i:])
					i = len(format)
					continue
				}
				conv := format[j]
				i = j
				if conv == '%' {
					sb.WriteByte('%')
					continue
				}
				a := ""
				if len(args) > 0 {
					a, args, used = args[0], args[1:], true
				}
				if conv == 'b' {
					a = interpretEscapes(a, true)
				}
				sb.WriteString(a)
			default:
				sb.WriteByte(c)
			}
		}
		if !used || len(args) == 0 {
			break
		}
	}
	return sb.String()
}
