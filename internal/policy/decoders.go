package policy

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"io"
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
		if !has("d", "decode") {
			return nil, false
		}
		switch {
		case has("base64"):
			return decodeBase64, true
		case has("base64url"):
			return decodeBase64URL, true
		case has("base32"):
			return decodeBase32, true
		case has("base32hex"):
			return decodeBase32Hex, true
		case has("base16"):
			return decodeHex, true
		}
		return cannotDecode, true
	case "python", "python3":
		// python3 -m base64 -d: the standard library's decoder
		if len(c.args) >= 3 && c.args[0].val == "-m" && c.args[1].val == "base64" && (c.args[2].val == "-d" || c.args[2].val == "--decode") {
			return decodeBase64, true
		}
		return nil, false
	case "xxd":
		if has("r", "revert") {
			if has("p", "ps", "plain", "postscript") {
				return decodeHex, true
			}
			return cannotDecode, true
		}
	case "openssl":
		if slices.ContainsFunc(c.args, func(a arg) bool { return a.val == "-d" }) {
			if len(c.args) > 0 && (c.args[0].val == "base64" || c.args[0].val == "enc" && opensslBase64Only(c.args[1:])) {
				return decodeBase64, true // openssl enc -d -base64 with no cipher: base64 alone
			}
			return cannotDecode, true
		}
	case "gunzip", "zcat":
		return decodeGzip, true
	case "bzcat", "bunzip2":
		return decodeBzip2, true
	case "gzip":
		return decodeGzip, has("d", "decompress")
	case "bzip2":
		return decodeBzip2, has("d", "decompress")
	case "uudecode", "unxz", "xzcat", "unzstd", "zstdcat", "lzcat", "unlzma":
		return cannotDecode, true
	case "xz", "zstd", "lzma", "brotli":
		return cannotDecode, has("d", "decompress")
	case "rev":
		return decodeRev, true
	case "sed", "gsed":
		// sed 's/^echo would remove/rm -rf/': a plain substitution on a
		// known input (sed e, scripts it cannot compute and unknown input:
		// not a decoder)
		if scripts, files := sedScripts(c.args); c.stdin.known && len(scripts) == 1 && len(files) == 0 && scripts[0].lit && !slices.ContainsFunc(c.args, func(a arg) bool {
			return a.lit && (a.val == "-i" || strings.HasPrefix(a.val, "-i") && !strings.HasPrefix(a.val, "--") || a.val == "-n" || strings.HasPrefix(a.val, "--in-place"))
		}) {
			if pattern, repl, global, ok := sedSubst(scripts[0].val); ok {
				if _, ok := sedApply("", pattern, repl, global); ok {
					return func(s string) (string, bool) { return sedApply(s, pattern, repl, global) }, true
				}
			}
		}
		return nil, false
	case "tr":
		if ops, _ := operands(c.args, optSpec{}); len(ops) == 1 && ops[0].lit && has("d") && !has("s", "c", "C") {
			set := ops[0].val
			return func(s string) (string, bool) { return deleteSet(s, set) }, true // tr -d X
		}
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

func decodeBase64URL(s string) (string, bool) {
	b, err := base64.URLEncoding.DecodeString(s)
	return string(b), err == nil
}

func decodeBase32Hex(s string) (string, bool) {
	b, err := base32.HexEncoding.DecodeString(s)
	return string(b), err == nil
}

// maxDecompressed is the most a decompressor's output is read to: a
// payload that expands past it is not decoded.
const maxDecompressed = 1 << 20

func decodeGzip(s string) (string, bool) {
	r, err := gzip.NewReader(strings.NewReader(s))
	if err != nil {
		return "", false
	}
	return readBounded(r)
}

func decodeBzip2(s string) (string, bool) {
	return readBounded(bzip2.NewReader(strings.NewReader(s)))
}

func readBounded(r io.Reader) (string, bool) {
	var b bytes.Buffer
	n, err := io.Copy(&b, io.LimitReader(r, maxDecompressed+1))
	if err != nil || n > maxDecompressed {
		return "", false
	}
	return b.String(), true
}

// opensslBase64Only reports openssl enc options that decode base64 and
// decrypt nothing: -a, -A or -base64, and no cipher or key.
func opensslBase64Only(args []arg) bool {
	b64 := false
	for _, a := range args {
		switch a.val {
		case "-a", "-A", "-base64":
			b64 = true
		case "-d", "-in", "-none":
		default:
			return false
		}
	}
	return b64
}

// deleteSet deletes the characters of set from s, like tr -d SET with
// ranges (a-z); sets with escapes or brackets are not decoded.
func deleteSet(s, set string) (string, bool) {
	chars := expandSet(set)
	if len(chars) == 0 || strings.ContainsAny(set, "\\[") {
		return "", false
	}
	var del [256]bool
	for _, c := range chars {
		del[c] = true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if !del[s[i]] {
			b.WriteByte(s[i])
		}
	}
	return b.String(), true
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

// sedSubst parses a sed script that is one substitution and nothing else,
// without the e flag: s/PATTERN/REPLACEMENT/[g]. Delimiters other than /
// and flags other than g, I, p are not read.
func sedSubst(script string) (pattern, repl string, global, ok bool) {
	script = strings.TrimSpace(script)
	if len(script) < 4 || script[0] != 's' || script[1] != '/' {
		return "", "", false, false
	}
	parts := strings.Split(script[2:], "/")
	if len(parts) != 3 || strings.Contains(script, `\`) {
		return "", "", false, false
	}
	for _, f := range parts[2] {
		switch f {
		case 'g':
			global = true
		case 'I', 'p':
		default:
			return "", "", false, false
		}
	}
	if strings.ContainsRune(parts[2], 'I') {
		return "", "", false, false // case-insensitive matching: not computed
	}
	return parts[0], parts[1], global, true
}
