package policy

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// downloaders are programs whose output comes from the network.
var downloaders = map[string]bool{
	"curl": true, "wget": true, "fetch": true, "http": true, "https": true, "xh": true, "xhs": true, "curlie": true,
	"aria2c": true, "lynx": true, "links": true, "w3m": true, "elinks": true,
	"nc": true, "ncat": true, "netcat": true, "socat": true, "tftp": true,
	"telnet": true, "pwncat": true, "nc.traditional": true, "nc.openbsd": true,
	"curl.exe": true, "wget.exe": true,
}

// produce returns what command c writes to its standard output, as far as
// the detector can tell: literal text for echo and printf, the input for
// cat and tee, decoded text for decoders of known input, a taint for
// downloads and decoders, listed trees for find and ls.
func produce(c *command) stream {
	switch c.name {
	case "echo":
		return echoOutput(c)
	case "printf":
		return printfOutput(c)
	case "cat", "tee":
		files, _ := operands(c.args, optSpec{})
		files = slices.DeleteFunc(files, func(a arg) bool { return a.lit && a.val == "-" })
		if c.name == "tee" || len(files) == 0 {
			out := c.stdin
			out.present = true
			return out
		}
		if len(files) == 1 && files[0].lit {
			if f, ok := c.files[fileKey(files[0].val)]; ok {
				out := f.s // cat FILE of a file the script wrote: what was written
				out.present = true
				return out
			}
		}
		out := stream{present: true, file: true, start: -1, base: -1, anchor: c.sp.start}
		if dumpsData(c) {
			out.taint |= taintData
		}
		if readsEnvFile(c) {
			out.taint |= taintEnvFile
		}
		return out
	case "true", ":", "false":
		return stream{present: true, known: true, start: -1, base: -1}
	case "find":
		roots, expr := findParts(c.args)
		out := generated()
		out.paths = roots
		names, _ := findNames(expr)
		if slices.ContainsFunc(names, func(n string) bool { return slices.Contains(credentialNames, n) }) {
			out.taint |= taintCredential
		}
		if findExecReads(expr) && slices.ContainsFunc(names, envFilePattern) {
			out.taint |= taintEnvFile // find -name '.env*' -exec cat {} +: the secrets files' content
		}
		return out
	case "ls":
		ops, _ := operands(c.args, optSpec{short: "IwT", long: []string{"ignore", "width", "tabsize", "hide", "sort", "format", "time", "color", "quoting-style", "indicator-style", "block-size"}})
		if len(ops) == 0 {
			ops = []arg{{val: "*", lit: true, pos: c.sp.start, end: c.sp.start, exact: -1}} // the working directory's entries
		}
		out := generated()
		out.paths = ops
		return out
	case "pwd":
		if !c.cwd.unknown && len(c.cwd.vals) == 1 {
			return stream{present: true, known: true, text: c.cwd.vals[0] + "\n", start: -1, base: -1, anchor: c.sp.start}
		}
		if c.cwd.unknown && c.cwd.env && len(c.cwd.vals) == 0 {
			out := generated()
			out.cwd = true // the job's working directory, as $PWD
			return out
		}
	case "git":
		// git rev-parse --show-toplevel: the repository the job works in,
		// taken as its working directory when that is not known ($PWD)
		if len(c.args) == 2 && c.args[0].lit && c.args[0].val == "rev-parse" && c.args[1].lit && c.args[1].val == "--show-toplevel" &&
			c.cwd.unknown && c.cwd.env && len(c.cwd.vals) == 0 {
			out := generated()
			out.cwd = true
			return out
		}
		// git for-each-ref --format='delete %(refname)': each line is the
		// format filled in; its template is the stream's shape
		if f, ok := gitRefFormat(c.args); ok {
			out := generated()
			out.shape = f
			return out
		}
	case "mktemp":
		return stream{present: true, known: true, text: mktempPath(c) + "\n", start: -1, base: -1, anchor: c.sp.start}
	case "brew", "go", "npm", "pip", "pip3", "yarn", "pnpm":
		// brew shellenv prints the exports that put Homebrew on the PATH
		if c.name == "brew" && len(c.args) == 1 && c.args[0].lit && c.args[0].val == "shellenv" && (c.prog == "brew" || brewPrefix.MatchString(c.prog)) {
			prefix := strings.TrimSuffix(c.prog, "/bin/brew")
			if c.prog == "brew" {
				prefix = "/opt/homebrew"
			}
			return stream{present: true, known: true, start: -1, base: -1, anchor: c.sp.start,
				text: "export HOMEBREW_PREFIX=\"" + prefix + "\";\nexport HOMEBREW_CELLAR=\"" + prefix + "/Cellar\";\nexport HOMEBREW_REPOSITORY=\"" + prefix + "\";\n" +
					"export PATH=\"" + prefix + "/bin:" + prefix + "/sbin${PATH+:$PATH}\";\n"}
		}
		// brew --cache, go env GOCACHE, npm config get cache: the tool's
		// cache directory, in its default place
		if dir, ok := toolCacheDir(c); ok {
			return stream{present: true, known: true, text: homeMarker + dir + "\n", start: -1, base: -1, anchor: c.sp.start}
		}
	case "hdiutil":
		// hdiutil attach -nomount ram://N prints the RAM disk it made: a
		// device holding nothing, named here by what made it
		if len(c.args) == 3 && c.args[0].lit && c.args[0].val == "attach" && c.args[1].lit && c.args[1].val == "-nomount" &&
			c.args[2].lit && ramDisk.MatchString(c.args[2].val) {
			return stream{present: true, known: true, text: c.args[2].val + "\n", start: -1, base: -1, anchor: c.sp.start}
		}
	case "pbpaste", "wl-paste", "xclip", "xsel":
		// the clipboard: where pass show -c, gopass -c and keychains put
		// a password
		if c.name == "pbpaste" || c.name == "wl-paste" || slices.ContainsFunc(c.args, func(a arg) bool {
			return a.lit && (a.val == "-o" || a.val == "-out" || a.val == "--output" || a.val == "-O")
		}) {
			out := generated()
			out.taint |= taintSecret
			return out
		}
	case "ps":
		// ps eww, ps auxe: BSD's e shows each process's environment
		if slices.ContainsFunc(c.args, func(a arg) bool {
			return a.lit && a.val != "" && a.val[0] != '-' && strings.Trim(a.val, "auxewlfjsvmrTgcnhHSZ") == "" && strings.Contains(a.val, "e")
		}) {
			out := generated()
			out.taint |= taintSecret
			return out
		}
	case "docker", "podman", "nerdctl":
		// docker inspect -f '{{json .Config.Env}}' CONTAINER: its
		// environment, where its secrets are given
		if len(c.args) > 0 && c.args[0].lit && (c.args[0].val == "inspect" || c.args[0].val == "container" && len(c.args) > 1 && c.args[1].val == "inspect") &&
			slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && strings.Contains(a.val, ".Config.Env") }) {
			out := generated()
			out.taint |= taintSecret
			return out
		}
	case "losetup":
		// losetup -f --show FILE prints the loop device it attached FILE
		// to: writing the device writes the file, so it stands for it
		if f, ok := loopBacking(c); ok {
			return stream{present: true, known: true, text: f + "\n", start: -1, base: -1, anchor: c.sp.start}
		}
	case "jq", "gojq", "jaq":
		out := generated()
		out.taint |= c.stdin.taint & (taintDownload | taintDecoded | taintSecret | taintSQLGen | taintData | taintToken | taintEnvFile | taintStored)
		out.shape = jqFilter(c.args)
		return out
	case "grep", "egrep":
		// ls -A | grep -E '^(dist|build)$' | xargs rm -rf: each line it
		// prints is one of the words its whole-line pattern names; the
		// stream of all of them is what a reader may get, or less
		// (a listing of another directory keeps its root: unknown, as before)
		if lines, ok := grepLines(c); ok && !slices.ContainsFunc(c.stdin.paths, func(a arg) bool { return !a.lit || a.val != "*" && a.val != "." }) {
			return stream{present: true, known: true, text: strings.Join(lines, "\n") + "\n", start: -1, base: -1, anchor: c.sp.start}
		}
	case "which", "type", "command":
		// `which helm` list, type -P rm, command -v rm: the path of the
		// program named, run by its name
		args := c.args
		if c.name != "which" {
			f := ""
			if len(args) == 2 && args[0].lit {
				f = args[0].val
			}
			lookup := c.name == "type" && (f == "-P" || f == "-p") || c.name == "command" && f == "-v"
			if !lookup {
				break
			}
			args = args[1:]
		}
		if len(args) == 1 {
			if prog, ok := plainProgramName(args[0]); ok {
				return stream{present: true, known: true, text: prog + "\n", start: -1, base: -1, anchor: c.sp.start}
			}
		}
	}
	if downloaders[c.name] {
		out := generated()
		out.taint |= taintDownload | c.stdin.taint&taintDownload
		for _, a := range c.args {
			out.taint |= keyListURL(a)
		}
		return out
	}
	if decode, ok := decoder(c); ok {
		out := generated()
		out.taint |= taintDecoded | c.stdin.taint
		if c.stdin.known {
			if text, ok := decode(c.stdin.text); ok {
				out.known, out.text, out.taint = true, text, taintDecoded
				out.anchor, out.base = c.stdin.anchor, -1
			}
		}
		return out
	}
	out := generated()
	out.taint |= c.stdin.taint & (taintDownload | taintDecoded | taintSecret | taintSQLGen | taintData | taintToken | taintEnvFile | taintStored)
	if dumpsData(c) {
		out.taint |= taintData
	}
	if readsEnvFile(c) {
		out.taint |= taintEnvFile
	}
	if slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && sqlGenerator.MatchString(a.val) }) || printsFlushSQL(c) {
		out.taint |= taintSQLGen
	}
	if countsLines(c) {
		out.taint &^= taintSecret | taintToken | taintEnvFile | taintData | taintStored // n=$(env | wc -l): a number
	}
	return out
}

// countsLines reports a command that prints only counts of what it reads
// (wc; grep -c), not the text.
func countsLines(c *command) bool {
	switch c.name {
	case "wc":
		words := make([]string, len(c.args))
		for i, a := range c.args {
			if a.lit {
				words[i] = a.val
			}
		}
		return wcCounts(words)
	case "grep", "egrep", "fgrep":
		_, opts := operands(c.args, optSpec{short: "efmABCd", long: []string{"regexp", "file", "max-count", "after-context",
			"before-context", "context", "devices", "directories", "exclude", "include", "exclude-dir", "label", "binary-files", "color", "colour"}})
		return hasOpt(opts, "c", "count") // -e -c: a pattern, not a count
	}
	return false
}

// wcCounts reports wc's words (its arguments; "" for one not known) that
// make it print counts only: not --files0-from=- or an abbreviation of it
// (--f=-), which prints what it reads as file names.
func wcCounts(words []string) bool {
	return !slices.ContainsFunc(words, func(v string) bool {
		return v == "" || strings.HasPrefix(v, "--") && !slices.Contains([]string{"--bytes", "--chars", "--lines", "--words", "--max-line-length"}, v)
	})
}

// printsFlushSQL reports Django's sqlflush, which prints the statements
// that empty every table (manage.py sqlflush | manage.py dbshell runs them).
func printsFlushSQL(c *command) bool {
	if c.name != "manage.py" && c.name != "django-admin" && !strings.HasPrefix(c.name, "python") {
		return false
	}
	for i, a := range c.args {
		if a.lit && a.val == "sqlflush" {
			return c.name != "python" && !strings.HasPrefix(c.name, "python") || i > 0 && path.Base(c.args[i-1].val) == "manage.py"
		}
	}
	return false
}

// sqlGenerator is destructive SQL written into a string a query or script
// outputs: DROP TABLE, TRUNCATE, DELETE FROM inside quotes, to be run by
// whatever reads the output.
var sqlGenerator = regexp.MustCompile(`(?i)['"]\s*(drop\s+(table|database|schema|view|index|sequence|function|type|user|role|owned)|truncate(\s+table)?|delete\s+from)\b`)

// dumpers are the programs whose output is a database's data.
var dumpers = map[string]bool{"pg_dump": true, "pg_dumpall": true, "mysqldump": true, "mariadb-dump": true, "mysqlpump": true,
	"mongodump": true, "mongoexport": true}

// dumpsData reports whether c writes a database's dump, a shell history
// or a coding agent's saved sessions to its output: what egress:data-send
// refuses to send.
func dumpsData(c *command) bool {
	if dumpers[c.name] {
		return c.name != "mongodump" || slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && (a.val == "--archive" || a.val == "--out=-") })
	}
	switch c.name {
	case "redis-cli":
		return slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && a.val == "--rdb" })
	case "sqlite3":
		return slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && strings.HasPrefix(a.val, ".dump") })
	case "etcdctl":
		return slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && a.val == "--prefix" }) &&
			slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && a.val == "get" })
	case "terraform", "tofu", "terragrunt":
		// the state, its sensitive values in clear: terraform show -json,
		// terraform state pull
		ops, _ := operands(c.args, optSpec{})
		return len(ops) > 0 && ops[0].lit && (ops[0].val == "show" && slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && a.val == "-json" }) ||
			len(ops) > 1 && ops[0].val == "state" && ops[1].lit && ops[1].val == "pull")
	}
	if archivesToStdout(c) {
		for _, a := range c.args {
			for _, p := range c.paths(a) {
				if credentialTree(p) || agentTranscripts(p) {
					return true // a home directory, packed: its keys and tokens with it
				}
			}
		}
	}
	if !slices.Contains(credentialReaders, c.name) {
		return false
	}
	for _, a := range c.args {
		for _, p := range c.paths(a) {
			if isHistoryFile(p) || agentTranscripts(p) {
				return true
			}
		}
	}
	return false
}

// readsEnvFile reports a reader (cat, grep, base64, ...) given the
// project's secrets file: what it prints is the file's secrets, or made of
// them.
func readsEnvFile(c *command) bool {
	if !slices.Contains(credentialReaders, c.name) {
		return false
	}
	return slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && isProjectEnvFile(a.val) })
}

// grepLines returns the lines grep can print when its patterns match whole
// lines made of literal words only (-x, or ^...$; in an extended pattern a
// group of alternatives: ^(dist|build|\.turbo)$): the set of lines it
// prints is a part of them, whatever its input. Any option that changes
// what a line is, or prints something else (-v, -i, -w, -c, -n, -o, -l,
// -H, -f, -z, ...), makes it unknown.
func grepLines(c *command) ([]string, bool) {
	ext, fixed, whole := c.name == "egrep", false, false
	var pats []string
	var ops []arg
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if !a.lit {
			return nil, false
		}
		switch {
		case a.val == "-e" || a.val == "--regexp":
			if i+1 >= len(c.args) || !c.args[i+1].lit {
				return nil, false
			}
			pats = append(pats, c.args[i+1].val)
			i++
		case strings.HasPrefix(a.val, "--regexp="):
			pats = append(pats, strings.TrimPrefix(a.val, "--regexp="))
		case a.val == "--extended-regexp":
			ext = true
		case a.val == "--fixed-strings":
			fixed = true
		case a.val == "--line-regexp":
			whole = true
		case a.val == "--" || !strings.HasPrefix(a.val, "-") || a.val == "-":
			ops = append(ops, c.args[i:]...)
			i = len(c.args)
		case strings.HasPrefix(a.val, "--"):
			return nil, false
		default:
			for _, f := range a.val[1:] {
				switch f {
				case 'E':
					ext = true
				case 'F':
					fixed = true
				case 'x':
					whole = true
				case 's':
				default:
					return nil, false
				}
			}
		}
	}
	if len(ops) > 0 && ops[0].val == "--" {
		ops = ops[1:]
	}
	if len(pats) == 0 {
		if len(ops) == 0 {
			return nil, false
		}
		pats, ops = []string{ops[0].val}, ops[1:]
	}
	if len(ops) > 0 {
		return nil, false // files: their names prefix the lines when there are several
	}
	var lines []string
	for _, p := range pats {
		for _, p := range strings.Split(p, "\n") {
			alts, ok := wholeLineWords(p, ext, fixed, whole)
			if !ok {
				return nil, false
			}
			lines = append(lines, alts...)
		}
	}
	return lines, len(lines) > 0
}

// wholeLineWords returns the lines pattern p matches when it matches whole
// lines of literal text (see grepLines).
func wholeLineWords(p string, ext, fixed, whole bool) ([]string, bool) {
	if fixed {
		return []string{p}, whole && p != ""
	}
	if !whole {
		var ok bool
		if p, ok = strings.CutPrefix(p, "^"); !ok {
			return nil, false
		}
		if p, ok = strings.CutSuffix(p, "$"); !ok || strings.HasSuffix(p, "\\") {
			return nil, false
		}
	}
	if ext && strings.HasPrefix(p, "(") && strings.HasSuffix(p, ")") {
		p = p[1 : len(p)-1]
	}
	alts := []string{p}
	if ext {
		alts = strings.Split(p, "|")
	}
	for i, a := range alts {
		var b strings.Builder
		for j := 0; j < len(a); j++ {
			ch := a[j]
			switch {
			case ch == '\\' && j+1 < len(a) && strings.IndexByte(".-_/", a[j+1]) >= 0:
				j++
				b.WriteByte(a[j])
			case 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '_' || ch == '-' || ch == '/' || ch == '@' || ch == ',' || ch == ':':
				b.WriteByte(ch)
			default:
				return nil, false // a character that matches more than itself
			}
		}
		if b.Len() == 0 {
			return nil, false
		}
		alts[i] = b.String()
	}
	return alts, true
}

// archivesToStdout reports an archiver writing the archive to its output:
// tar -c with no -f or -f -, zip ... -, 7z -so.
func archivesToStdout(c *command) bool {
	switch c.name {
	case "tar", "gtar", "bsdtar":
		create, file := false, ""
		for i, a := range c.args {
			v := a.val
			switch {
			case v == "--create" || v == "-c":
				create = true
			case strings.HasPrefix(v, "--file="):
				file = strings.TrimPrefix(v, "--file=")
			case v == "--file" && i+1 < len(c.args):
				file = c.args[i+1].val
			case i == 0 && !strings.HasPrefix(v, "-") || strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--"):
				letters := strings.TrimPrefix(v, "-") // czf, -czf
				create = create || strings.Contains(letters, "c")
				if j := strings.IndexByte(letters, 'f'); j >= 0 {
					if j+1 < len(letters) {
						file = letters[j+1:] // -f-, -fFILE
					} else if i+1 < len(c.args) {
						file = c.args[i+1].val
					}
				}
			}
		}
		return create && (file == "" || file == "-")
	case "zip":
		ops, _ := operands(c.args, optSpec{short: "bnitx", long: []string{"temp-path", "suffixes", "exclude", "include"}})
		return len(ops) > 0 && ops[0].lit && ops[0].val == "-"
	case "7z", "7za", "7zz":
		return slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && a.val == "-so" })
	}
	return false
}

// secretVarRef is a use of a variable named like a secret ($AWS_SECRET_ACCESS_KEY).
var secretVarRef = regexp.MustCompile(`\$\{?` + envSecretName)

// echoesSecret reports echo or printf of a variable named like a secret:
// its output holds the secret (echo "$API_TOKEN" | curl -d @- URL).
func echoesSecret(words []arg) bool {
	if len(words) < 2 || !words[0].lit || words[0].val != "echo" && words[0].val != "printf" {
		return false
	}
	for _, a := range words[1:] {
		if !a.lit && secretVarRef.MatchString(a.src) {
			return true
		}
	}
	return false
}

// dumpsEnvironment reports a command that prints the environment's values:
// env or printenv (with or without names), set, export -p, declare -x or -p,
// a read of /proc/*/environ.
func dumpsEnvironment(words []arg) bool {
	if len(words) == 0 || !words[0].lit {
		return false
	}
	name, rest := path.Base(words[0].val), words[1:]
	for len(rest) > 0 && (name == "sudo" || name == "command" || name == "builtin") {
		name, rest = path.Base(rest[0].val), rest[1:]
	}
	if wrap, ok := wrappers[name]; ok && name != "env" {
		// envchain aws env, timeout 5 printenv: what the launcher runs
		if inner, ok := wrap(rest); ok && len(inner) < len(words) {
			return dumpsEnvironment(inner)
		}
	}
	switch name {
	case "printenv":
		return true
	case "env":
		for i, a := range rest {
			if a.lit && !strings.HasPrefix(a.val, "-") && !strings.Contains(a.val, "=") {
				return dumpsEnvironment(rest[i:]) // env runs a command: env FOO=1 printenv
			}
		}
		return true
	case "set":
		return len(rest) == 0
	case "export", "declare", "typeset":
		return len(rest) == 0 && name != "export" || slices.ContainsFunc(rest, func(a arg) bool {
			return a.lit && strings.HasPrefix(a.val, "-") && strings.ContainsAny(a.val, "px")
		})
	case "systemctl":
		return slices.ContainsFunc(rest, func(a arg) bool { return a.lit && a.val == "show-environment" })
	case "buildkite-agent":
		// the job's environment, its secrets with it
		return len(rest) >= 2 && rest[0].lit && rest[0].val == "env" && rest[1].lit && (rest[1].val == "dump" || rest[1].val == "get")
	case "docker", "podman", "nerdctl", "kubectl", "oc", "crictl":
		// docker exec api env, kubectl exec web -- printenv: a container's
		// environment (its secrets)
		if n := len(rest); n >= 3 && rest[n-1].lit && (rest[n-1].val == "env" || rest[n-1].val == "printenv") &&
			slices.ContainsFunc(rest[:n-1], func(a arg) bool { return a.lit && a.val == "exec" }) {
			return true
		}
	}
	for _, a := range rest {
		if a.lit && strings.HasPrefix(a.val, "/proc/") && strings.HasSuffix(a.val, "/environ") {
			return true
		}
	}
	return false
}

// toolCaches are the commands that print a tool's cache directory, and
// where that is by default (home-relative).
var toolCaches = map[string]string{
	"brew --cache": "/Library/Caches/Homebrew", "go env GOCACHE": "/.cache/go-build", "go env GOMODCACHE": "/go/pkg/mod",
	"npm config get cache": "/.npm", "pip cache dir": "/.cache/pip", "pip3 cache dir": "/.cache/pip", "yarn cache dir": "/.cache/yarn",
	"pnpm store path": "/.local/share/pnpm/store",
}

// toolCacheDir returns the home-relative cache directory a toolCaches
// command prints.
func toolCacheDir(c *command) (string, bool) {
	words := []string{c.name}
	for _, a := range c.args {
		if !a.lit {
			return "", false
		}
		words = append(words, a.val)
	}
	dir, ok := toolCaches[strings.Join(words, " ")]
	if !ok {
		return "", false
	}
	// the script may have moved it: a variable it set, or the tool's
	// configuration it wrote (go env -w GOCACHE=/etc)
	for _, v := range []string{"HOMEBREW_CACHE", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "npm_config_cache", "NPM_CONFIG_CACHE",
		"PIP_CACHE_DIR", "XDG_CACHE_HOME", "YARN_CACHE_FOLDER", "PNPM_HOME", "XDG_DATA_HOME", "HOME"} {
		if _, set := c.vars[v]; set {
			return "", false
		}
	}
	if c.frame == "" || strings.Contains(c.frame, "env -w") || strings.Count(c.frame, "config") > strings.Count(c.frame, "config get cache") ||
		strings.Contains(c.frame, "npmrc") || strings.Contains(c.frame, "pip.conf") {
		return "", false
	}
	return dir, true
}

// brewPrefix is Homebrew's brew at one of its standard prefixes.
var brewPrefix = regexp.MustCompile(`^(/opt/homebrew|/usr/local|/home/linuxbrew/\.linuxbrew)/bin/brew$`)

// ramDisk is a RAM disk's URL: ram://SECTORS.
var ramDisk = regexp.MustCompile(`^ram://\d+$`)

// echoOutput is echo's output; alt holds the reading with escapes
// interpreted, since sh's echo interprets them and bash's does not.
func echoOutput(c *command) stream {
	args := c.args
	newline := true
	for len(args) > 0 && args[0].lit && len(args[0].val) > 1 && args[0].val[0] == '-' &&
		strings.Trim(args[0].val[1:], "neE") == "" {
		if strings.Contains(args[0].val, "n") {
			newline = false
		}
		args = args[1:]
	}
	text, ok := joinLiterals(args)
	if !ok {
		return taintedBy(args)
	}
	if newline {
		text += "\n"
	}
	out := stream{present: true, known: true, text: text, via: "pipe", start: -1, base: -1, anchor: c.sp.start}
	if len(args) == 1 {
		out.base, out.anchor = args[0].exact, args[0].pos
	} else if len(args) > 0 {
		out.anchor = args[0].pos
	}
	if alt := interpretEscapes(text, true); alt != text {
		out.alt = alt
	}
	return out
}

// printfOutput is printf's output; printf -v writes to a variable.
func printfOutput(c *command) stream {
	args := c.args
	if len(args) > 0 && args[0].val == "--" {
		args = args[1:]
	}
	if len(args) == 0 || args[0].val == "-v" {
		return stream{present: true, known: true, start: -1, base: -1}
	}
	if _, ok := joinLiterals(args); !ok {
		return taintedBy(args)
	}
	vals := make([]string, len(args)-1)
	for i, a := range args[1:] {
		vals[i] = strings.ReplaceAll(a.val, homeMarker, "$HOME") // as echo writes it (joinLiterals)
	}
	return stream{present: true, known: true, text: printfText(strings.ReplaceAll(args[0].val, homeMarker, "$HOME"), vals), via: "pipe",
		start: -1, base: -1, anchor: args[0].pos}
}

func joinLiterals(args []arg) (string, bool) {
	vals := make([]string, len(args))
	for i, a := range args {
		if !a.lit {
			return "", false
		}
		vals[i] = a.val
	}
	return strings.ReplaceAll(strings.Join(vals, " "), homeMarker, "$HOME"), true
}

// taintedBy is the output of a command that prints words it cannot resolve.
func taintedBy(args []arg) stream {
	out := generated()
	for _, a := range args {
		out.taint |= a.taint &^ taintProc
	}
	return out
}

// findParts splits find's arguments into its roots and its expression.
func findParts(args []arg) (roots, expr []arg) {
	i := 0
	for i < len(args) && args[i].lit && (args[i].val == "-H" || args[i].val == "-L" || args[i].val == "-P" ||
		strings.HasPrefix(args[i].val, "-O") || args[i].val == "-D") {
		if args[i].val == "-D" {
			i++
		}
		i++
	}
	args = args[min(i, len(args)):]
	for i = 0; i < len(args); i++ {
		v := args[i].val
		if args[i].lit && (strings.HasPrefix(v, "-") || v == "(" || v == "!" || v == ",") {
			break
		}
	}
	roots, expr = args[:i], args[i:]
	if len(roots) == 0 {
		roots = []arg{{val: ".", lit: true, exact: -1}}
	}
	return roots, expr
}

// loopBacking returns the regular file losetup -f --show attaches.
func loopBacking(c *command) (string, bool) {
	show, find, file := false, false, ""
	for _, a := range c.args {
		switch {
		case !a.lit:
			return "", false
		case a.val == "--show":
			show = true
		case a.val == "-f" || a.val == "--find":
			find = true
		case a.val == "-fP" || a.val == "-Pf" || a.val == "-P" || a.val == "--partscan" || a.val == "-r" || a.val == "--read-only":
			find = find || strings.Contains(a.val, "f")
		case strings.HasPrefix(a.val, "-"):
			return "", false
		case file != "":
			return "", false
		default:
			file = a.val
		}
	}
	if !show || !find || file == "" || strings.HasPrefix(path.Clean(file), "/dev/") {
		return "", false
	}
	return file, true
}

// mktempPath stands for the path mktemp prints: a fresh file or directory
// that did not exist, so never a protected root or a system file, in the
// directory its -p or template names (/tmp by default).
func mktempPath(c *command) string {
	ops, opts := operands(c.args, optSpec{short: "p", long: []string{"tmpdir", "suffix"}})
	dir := "/tmp"
	for _, o := range opts {
		if (o.name == "p" || o.name == "tmpdir") && o.value.lit && o.value.val != "" {
			dir = o.value.val
		}
	}
	if len(ops) > 0 && ops[0].lit && strings.Contains(ops[0].val, "/") {
		dir = path.Dir(ops[0].val)
	}
	return joinPath(dir, "tmp.mktemp")
}

// jqFilter returns the literal filter of a jq command line (its first
// operand), the template of what it writes: the constant strings of
// jq -n '{query: "mutation { volumeDelete(...) }"}' reach its output.
func jqFilter(args []arg) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.lit:
			return ""
		case a.val == "--arg" || a.val == "--argjson" || a.val == "--slurpfile" || a.val == "--rawfile":
			i += 2
		case a.val == "--indent" || a.val == "-L" || a.val == "-f" || a.val == "--from-file":
			if a.val == "-f" || a.val == "--from-file" {
				return ""
			}
			i++
		case a.val == "--args" || a.val == "--jsonargs" || a.val == "--":
			return ""
		case strings.HasPrefix(a.val, "-") && a.val != "-":
		default:
			return a.val
		}
	}
	return ""
}

// gitRefFormat returns the --format of git for-each-ref, branch or tag
// (the commands that print refs by a template).
func gitRefFormat(args []arg) (string, bool) {
	sub := false
	for i, a := range args {
		switch {
		case !a.lit:
			return "", false
		case !sub && (a.val == "for-each-ref" || a.val == "branch" || a.val == "tag"):
			sub = true
		case sub && strings.HasPrefix(a.val, "--format="):
			return refFormatText(strings.TrimPrefix(a.val, "--format=")), true
		case sub && a.val == "--format" && i+1 < len(args) && args[i+1].lit:
			return refFormatText(args[i+1].val), true
		}
	}
	return "", false
}

// findExecReads reports a find expression that prints the content of what
// it finds: -exec cat {} + (or another reader).
func findExecReads(expr []arg) bool {
	for i, e := range expr {
		if e.lit && (e.val == "-exec" || e.val == "-execdir" || e.val == "-ok" || e.val == "-okdir") && i+1 < len(expr) && expr[i+1].lit &&
			slices.Contains(credentialReaders, path.Base(expr[i+1].val)) {
			return true
		}
	}
	return false
}

// envFilePattern reports a name pattern that matches a project's secrets
// file (.env, .env*, .env.production), not only its templates.
func envFilePattern(p string) bool {
	for _, n := range []string{".env", ".env.production", ".env.local"} {
		if ok, _ := path.Match(p, n); ok {
			return true
		}
	}
	return false
}

// refFormatHex is a %xx escape of a for-each-ref format; refFormatIf a
// conditional's markers.
var (
	refFormatHex = regexp.MustCompile(`%([0-9a-fA-F]{2})`)
	refFormatIf  = regexp.MustCompile(`%\((?:if|then|else|end)(?::[^)]*)?\)`)
)

// refFormatText is a format as the lines it prints read: its %xx escapes
// decoded (%64elete is delete, %0a a newline) and its %(if)...%(then)
// markers dropped, so that what follows them starts the text.
func refFormatText(f string) string {
	f = refFormatIf.ReplaceAllString(f, "\n")
	return refFormatHex.ReplaceAllStringFunc(f, func(m string) string {
		b, err := strconv.ParseUint(m[1:], 16, 8)
		if err != nil {
			return m
		}
		return string(rune(b))
	})
}
