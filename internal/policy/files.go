package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// written is what the script wrote to a file earlier.
type written struct {
	s stream // its content; s.f is the frame its offsets refer to
}

// fileKey names a file written or run by the script.
func fileKey(p string) string { return path.Clean(p) }

// recordWrite remembers that the script wrote s to the file a names, so
// that running the file later (sh x.sh, ./x.sh, source x.sh) is judged by
// its content: curl -o x.sh URL && sh x.sh is pipe-to-shell.
func (w *walker) recordWrite(a arg, s stream, appendTo bool) {
	if !a.lit && strings.HasSuffix(a.tail, ".pth") {
		w.scriptSink(arg{val: a.tail, lit: true, pos: a.pos, end: a.end, exact: -1}, s) // "$d/x.pth": a .pth wherever it lands
	}
	if !a.lit || a.val == "" || strings.HasPrefix(a.val, "/dev/") {
		return
	}
	w.scriptSink(a, s)
	if w.env.files == nil {
		w.env.files = make(map[string]written)
	}
	k := w.inCwd(a.val) // its absolute name when the directory is known
	if old, ok := w.env.files[k]; ok && (appendTo || w.cond > 0) {
		s = old.s.merge(s)
	}
	s.start = -1
	if s.f == nil {
		s.f = w.f
	}
	w.env.files[k] = written{s: s}
	if raw := fileKey(a.val); raw != k {
		w.env.files[raw] = written{s: s}
	}
}

// recordRedirects records the files a statement's output redirections write.
func (w *walker) recordRedirects(s *syntax.Stmt, out stream) {
	for _, r := range s.Redirs {
		if r.N != nil && r.N.Value != "1" {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.AppOut, syntax.AppAll:
			for _, a := range w.value(r.Word) {
				w.checksOffWrite(a, out, "redirection to ", stmtSpan(s))
			}
		}
		switch r.Op {
		case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll:
			for _, a := range w.value(r.Word) {
				w.recordWrite(a, out, false)
				if !agentWrite(s, r) {
					continue
				}
				c := command{cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links}
				for _, t := range c.targets(a) {
					readable := out.known && out.alt == "" && agentDefinitionRead(t.path, out.text)
					if isAgentFile(t.path) && !readable {
						// a user agent whose commands cannot be read: it runs something at every login
						w.d.add(w.f, ruleWriteSystem, "redirection to "+t.show, "", stmtSpan(s))
					}
				}
			}
		case syntax.AppOut, syntax.AppAll:
			for _, a := range w.value(r.Word) {
				w.recordWrite(a, out, true)
				if out.known && plainStartupText(out.text) && (out.alt == "" || plainStartupText(out.alt)) {
					continue
				}
				c := command{cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links}
				for _, t := range c.targets(a) {
					if isShellStartup(t.path) { // curl URL >> ~/.bashrc, alias ls=rm: changes what every login runs
						w.d.add(w.f, ruleWriteSystem, "redirection to "+t.show, "", stmtSpan(s))
					}
				}
			}
		}
	}
}

// recordCommandWrites records files commands write with known content:
// tee FILE, curl -o FILE, wget [-O FILE] URL, cp and mv of a known file.
func (w *walker) recordCommandWrites(c *command) {
	switch strings.TrimSuffix(c.name, ".exe") { // curl.exe: a Windows pack's name for curl
	case "tee":
		ops, opts := operands(c.args, optSpec{long: []string{"output-error"}})
		for _, o := range ops {
			w.recordWrite(o, c.stdin, hasOpt(opts, "a", "append"))
			w.checksOffWrite(o, c.stdin, "tee to ", c.sp)
		}
	case "zip":
		w.recordArchive(c)
	case "curl", "wget":
		dl := generated()
		dl.taint |= taintDownload
		for _, p := range downloadOutputs(c) {
			w.recordWrite(p, dl, false)
		}
	case "aria2c":
		// aria2c [-d DIR] [-o NAME] URL
		dir, name := "", ""
		for i := 0; i+1 < len(c.args); i++ {
			switch a := c.args[i]; {
			case a.lit && (a.val == "-d" || a.val == "--dir") && c.args[i+1].lit:
				dir = c.args[i+1].val
			case a.lit && (a.val == "-o" || a.val == "--out") && c.args[i+1].lit:
				name = c.args[i+1].val
			}
		}
		if name != "" {
			if dir != "" {
				name = path.Join(dir, name)
			}
			dl := generated()
			dl.taint |= taintDownload
			w.recordWrite(arg{val: name, lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}, dl, false)
		}
	case "scp", "sftp":
		// scp host:/pub/x.sh /tmp/x.sh: a file from another machine
		ops, _ := operands(c.args, optSpec{short: "cFiJloPSDX"})
		if len(ops) >= 2 && ops[0].lit && remoteSpec.MatchString(ops[0].val) && ops[len(ops)-1].lit && !remoteSpec.MatchString(ops[len(ops)-1].val) {
			dl := generated()
			dl.taint |= taintDownload
			w.recordWrite(ops[len(ops)-1], dl, false)
		}
	case "certutil", "certutil.exe", "bitsadmin", "bitsadmin.exe":
		// certutil -urlcache -f URL FILE, bitsadmin /transfer JOB URL FILE
		dl := generated()
		dl.taint |= taintDownload
		for i, a := range c.args {
			if a.lit && strings.Contains(a.val, "://") && i+1 < len(c.args) {
				w.recordWrite(c.args[i+1], dl, false)
			}
		}
	case "tar", "gtar", "bsdtar", "unzip", "7z", "7za", "7zz":
		if archive, dir, ok := unpacks(c); ok {
			if f, ok := w.env.files[fileKey(archive)]; ok && f.s.taint&taintDownload != 0 ||
				(archive == "" || archive == "-") && c.stdin.taint&taintDownload != 0 {
				w.env.unpacked = append(slices.Clip(w.env.unpacked), w.inCwd(dir))
			}
		} else if c.name != "unzip" {
			w.recordArchive(c)
		}
	case "vercel", "op", "sops", "gcloud", "ansible-vault":
		if f, ok := pulledSecrets(c); ok {
			s := generated()
			s.taint |= taintPulled | taintEnvFile
			w.recordWrite(f, s, false)
		}
	case "cp", "mv":
		ops, _ := operands(c.args, optSpec{short: "tS", long: []string{"target-directory", "suffix"}})
		if len(ops) == 2 && ops[0].lit {
			if src, ok := w.env.files[fileKey(ops[0].val)]; ok {
				w.recordWrite(ops[1], src.s, false)
			}
		}
	}
}

// pulledSecrets returns the file a secret store's CLI writes its values
// to: vercel env pull [FILE] (.env.local), op inject -o FILE, sops -d
// --output FILE, gcloud secrets versions access --out-file=FILE,
// ansible-vault decrypt --output FILE.
func pulledSecrets(c *command) (arg, bool) {
	var words []string
	for _, a := range c.args {
		if a.lit && !strings.HasPrefix(a.val, "-") {
			words = append(words, a.val)
		}
	}
	at := func(path ...string) bool { return len(words) >= len(path) && slices.Equal(words[:len(path)], path) }
	switch {
	case c.name == "vercel" && at("env", "pull"):
		for i, a := range c.args {
			if a.lit && a.val == "pull" && i > 0 && c.args[i-1].val == "env" && i+1 < len(c.args) &&
				c.args[i+1].lit && !strings.HasPrefix(c.args[i+1].val, "-") {
				return c.args[i+1], true
			}
		}
		return arg{val: ".env.local", lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}, true
	case c.name == "op" && at("inject"):
		return optionValue(c.args, "--out-file", "-o")
	case c.name == "sops" && slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && (a.val == "-d" || a.val == "--decrypt") }):
		return optionValue(c.args, "--output", "")
	case c.name == "gcloud" && at("secrets", "versions", "access"):
		return optionValue(c.args, "--out-file", "")
	case c.name == "ansible-vault" && (at("decrypt") || at("view")):
		return optionValue(c.args, "--output", "")
	}
	return arg{}, false
}

// remoteSpec is scp's [user@]host:path.
var remoteSpec = regexp.MustCompile(`^([\w.-]+@)?[\w.-]+:`)

// unpacks returns the archive an extracting command reads and the
// directory it unpacks into: tar x[z]f FILE [-C DIR] (no FILE, or -: its
// standard input), unzip FILE [-d DIR],
// 7z x FILE [-oDIR].
func unpacks(c *command) (archive, dir string, ok bool) {
	dir = "."
	extract := false
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if !a.lit {
			continue
		}
		v := a.val
		next := func() string {
			if i+1 < len(c.args) && c.args[i+1].lit {
				i++
				return c.args[i].val
			}
			return ""
		}
		switch c.name {
		case "unzip":
			switch {
			case v == "-d":
				dir = next()
			case strings.HasPrefix(v, "-"):
				if strings.ContainsAny(v, "lvtZ") {
					return "", "", false // lists or tests
				}
			case archive == "":
				archive, extract = v, true
			}
		case "7z", "7za", "7zz":
			switch {
			case strings.HasPrefix(v, "-o"):
				dir = v[2:]
			case v == "x" || v == "e":
				extract = true
			case !strings.HasPrefix(v, "-") && extract && archive == "":
				archive = v
			}
		default: // tar
			switch {
			case v == "-C" || v == "--directory":
				dir = next()
			case strings.HasPrefix(v, "--directory="):
				dir = strings.TrimPrefix(v, "--directory=")
			case v == "--extract" || v == "--get":
				extract = true
			case v == "--file" || v == "-f":
				archive = next()
			case strings.HasPrefix(v, "--file="):
				archive = strings.TrimPrefix(v, "--file=")
			case i == 0 && !strings.HasPrefix(v, "-") || strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--"):
				letters := strings.TrimPrefix(v, "-")
				extract = extract || strings.Contains(letters, "x")
				if j := strings.IndexByte(letters, 'f'); j >= 0 {
					if j+1 < len(letters) {
						archive = letters[j+1:]
					} else {
						archive = next()
					}
				}
			}
		}
	}
	fromStdin := archive == "" && c.name != "unzip" && c.name != "7z" && c.name != "7za" && c.name != "7zz"
	return archive, dir, extract && (archive != "" || fromStdin) && dir != ""
}

// unpackedProgram reports a program path (./tools/install.sh) under a
// directory a downloaded archive was unpacked into.
// A relative path is tried from each directory the script may be in.
func (w *walker) unpackedProgram(p string) bool {
	if len(w.env.unpacked) == 0 {
		return false
	}
	keys := []string{fileKey(p)}
	if !path.IsAbs(p) {
		for _, cwd := range w.env.cwd.vals {
			if path.IsAbs(cwd) {
				keys = append(keys, path.Join(cwd, p))
			}
		}
	}
	for _, k := range keys {
		for _, d := range w.env.unpacked {
			if d == "." && !path.IsAbs(k) && k != ".." && !strings.HasPrefix(k, "../") || k == d || strings.HasPrefix(k, d+"/") {
				return true
			}
		}
	}
	return false
}

// inCwd is path p from the working directory, when that is known, else p
// cleaned.
func (w *walker) inCwd(p string) string {
	if !path.IsAbs(p) && !w.env.cwd.unknown && len(w.env.cwd.vals) == 1 && path.IsAbs(w.env.cwd.vals[0]) {
		return path.Join(w.env.cwd.vals[0], p)
	}
	return fileKey(p)
}

// downloadOutputs returns the files curl or wget save to: -o/-O FILE, and
// for wget without -O (and curl -O) the last component of each URL.
func downloadOutputs(c *command) []arg {
	outs := outputOptions(c)
	name := strings.TrimSuffix(c.name, ".exe")
	remoteName := name == "wget"
	for _, a := range c.args {
		if name == "curl" && a.lit && (a.val == "-O" || a.val == "--remote-name" || strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.HasSuffix(a.val, "O")) {
			remoteName = true
		}
	}
	if len(outs) > 0 || !remoteName {
		return outs
	}
	for _, a := range c.args {
		if a.lit && strings.Contains(a.val, "://") {
			u := a.val
			if i := strings.IndexAny(u, "?#"); i >= 0 {
				u = u[:i]
			}
			if base := path.Base(u); base != "" && base != "." && base != "/" && !strings.Contains(base, ":") {
				outs = append(outs, arg{val: base, lit: true, pos: a.pos, end: a.end, exact: -1})
			}
		}
	}
	return outs
}

// loadsDownload reports a kernel module, or a Windows library or
// installer, loaded from a file the script downloaded (curl -o m.ko URL
// && insmod m.ko; curl -o h.dll URL && rundll32 h.dll,Start): code from
// the network run.
func (w *walker) loadsDownload(c *command) {
	what := ""
	switch strings.TrimSuffix(strings.ToLower(c.name), ".exe") {
	case "insmod", "modprobe", "kldload":
		what = "a kernel module"
	case "rundll32", "regsvr32", "regsvcs", "regasm", "installutil", "msiexec", "mshta", "cscript", "wscript", "odbcconf":
		// Windows' loaders: rundll32 FILE.dll,Entry, msiexec /i FILE.msi
		what = "a library or installer"
	default:
		return
	}
	for _, a := range c.args {
		if a.lit {
			if file, _, ok := strings.Cut(a.val, ","); ok && what != "a kernel module" {
				a.val = file // rundll32 helper.dll,Start
			}
			if len(a.val) > 3 && (a.val[0] == '/' || a.val[0] == '-') && strings.EqualFold(a.val[1:3], "i:") && what != "a kernel module" {
				a.val = a.val[3:] // regsvr32 /i:x.sct scrobj.dll: the scriptlet it runs
			}
		}
		if f, ok := w.writtenScript(a); ok && f.s.taint&taintDownload != 0 {
			w.d.add(w.f, rulePipeToShell, c.name+" "+quoteDetail(a.val)+": loads "+what+" downloaded from the network", c.via, c.sp)
			return
		}
	}
}

// writtenScript returns what the script wrote to the file a names.
func (w *walker) writtenScript(a arg) (written, bool) {
	if !a.lit {
		return written{}, false
	}
	for _, k := range []string{w.inCwd(a.val), fileKey(a.val)} {
		if f, ok := w.env.files[k]; ok {
			return f, true
		}
		// ln -s /tmp/s /tmp/t; sh /tmp/t: a link the script made to it
		for _, t := range w.env.links[linkKey(k)] {
			if f, ok := w.env.files[fileKey(t)]; ok {
				return f, true
			}
		}
	}
	return written{}, false
}

// writtenMatching returns the files the script wrote, earlier, in the
// working directory whose names match the glob pattern (a tool's default
// recipe files: terraform reads every *.tf), in name order.
func (w *walker) writtenMatching(pattern string, sp span) []arg {
	dir := w.inCwd(".")
	var names []string
	for k := range w.env.files {
		if ok, _ := path.Match(pattern, path.Base(k)); ok && path.Dir(k) == dir {
			names = append(names, path.Base(k))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]arg, len(names))
	for i, n := range names {
		out[i] = arg{val: n, lit: true, pos: sp.start, end: sp.end, exact: -1}
	}
	return out
}

// checksOffConfig pairs a client's configuration file (its path, as the
// script names it) with the settings that, written into it, switch a
// check off for every later run of the client: SSH host keys, TLS
// certificates, package checksums.
var checksOffConfig = []struct{ file, text *regexp.Regexp }{
	{regexp.MustCompile(`(^|/)\.ssh/config$|(^|/)\.ssh/config\.d/[^/]+$|(^|/)ssh_config$|/ssh_config\.d/[^/]+$`),
		regexp.MustCompile(`(?im)^\s*(StrictHostKeyChecking\s*=?\s*(no|off)|UserKnownHostsFile\s*=?\s*/dev/null)\b`)},
	{regexp.MustCompile(`(^|/)[._]curlrc$`), regexp.MustCompile(`(?im)^\s*(-k|--?insecure|insecure)\s*$`)},
	{regexp.MustCompile(`(^|/)\.?wgetrc$`), regexp.MustCompile(`(?im)^\s*check_?certificate\s*=\s*(off|no|0|false)\b`)},
	{regexp.MustCompile(`(^|/)\.?npmrc$|(^|/)\.yarnrc(\.yml)?$`), regexp.MustCompile(`(?im)^\s*(strict-ssl\s*=\s*false|enableStrictSsl\s*:\s*false)\b`)},
	{regexp.MustCompile(`(^|/)pip\.(conf|ini)$`), regexp.MustCompile(`(?im)^\s*trusted[-_]host\s*=`)},
	{regexp.MustCompile(`(^|/)\.gitconfig$|(^|/)git/config$|(^|/)\.git/config$|(^|/)gitconfig$`), regexp.MustCompile(`(?im)^\s*sslverify\s*=\s*(false|0|no|off)\b`)},
	{regexp.MustCompile(`(^|/)\.condarc$`), regexp.MustCompile(`(?im)^\s*ssl_verify\s*:\s*(false|no|0)\b`)},
	{regexp.MustCompile(`(^|/)\.gemrc$|(^|/)\.bundle/config$`), regexp.MustCompile(`(?im):?ssl_verify_mode:\s*"?0\b`)},
	{regexp.MustCompile(`(^|/)composer/config\.json$|(^|/)\.composer/config\.json$`), regexp.MustCompile(`(?i)"secure-http"\s*:\s*false|"disable-tls"\s*:\s*true`)},
	{regexp.MustCompile(`(^|/)registries\.conf$|/registries\.conf\.d/[^/]+$`), regexp.MustCompile(`(?im)^\s*insecure\s*=\s*true\b`)},
	// Jupyter's server with no token and no password: anyone who reaches it runs code
	{regexp.MustCompile(`(^|/)jupyter_(server|notebook)_config\.py$`), regexp.MustCompile(`(?m)(^|;)\s*c\.(ServerApp|NotebookApp|IdentityProvider)\.token\s*=\s*(''|"")`)},
	// mvn sources ~/.mavenrc and /etc/mavenrc before every build
	{regexp.MustCompile(`(^|/)\.?mavenrc$`), regexp.MustCompile(`(?i)-D[\w.]*ssl\.(insecure|allowall|ignore\.validity\.dates)=true`)},
}

// checksOffEnv is, written into a shell start-up file, a variable that
// switches a client's TLS, host key or checksum checks off for every
// later login.
var checksOffEnv = regexp.MustCompile(`(?i)\b(\w+_(SKIP_VERIFY|SKIP_TLS_VERIFY|INSECURE_SKIP_VERIFY|TLS_SKIP_VERIFY|SKIP_SSL_VERIFY|INSECURE|TLS_INSECURE|SSL_NO_VERIFY|NO_SSL_VERIFY)=["']?(1|true|yes)\b|` +
	`\w+_(SSL_VERIFY|TLS_VERIFY|VERIFY_SSL|VERIFY_TLS|SSL_VERIFICATION|CERT_VERIFY|VERIFY_CERTS?)=["']?(0|false|no|off)\b|` +
	// an alias that adds the switch to every later call (alias mc="mc --insecure", alias curl='curl -sk')
	`alias\s+[\w.-]+=["']?[^"'\n]*\s(--insecure|--no-check-certificate|--insecure-skip-tls-verify(=true)?|--tls-verify=false|--skip-tls-verify|--tls=insecure|--no-verify-ssl)(["'\s]|$)|` +
	`alias\s+[\w.-]+=["']?(curl|http|https|xh)(\s[^"'\n]*)?\s-[a-zA-Z]*k[a-zA-Z]*(["'\s]|$)|` +
	`NODE_TLS_REJECT_UNAUTHORIZED=["']?0|GIT_SSL_NO_VERIFY=["']?[^0\s"']|PYTHONHTTPSVERIFY=["']?0|GOINSECURE=["']?\S|GOSUMDB=["']?off|GOFLAGS=["']?\S*-insecure|VAULT_SKIP_VERIFY=["']?(1|true)|AZURE_CLI_DISABLE_CONNECTION_VERIFICATION=["']?[^0\s"']|NPM_CONFIG_STRICT_SSL=["']?false|DOCKER_CONTENT_TRUST=["']?0|ANSIBLE_HOST_KEY_CHECKING=["']?(false|0|no))` +
	// Maven's and Java's SSL switches (MAVEN_OPTS, JAVA_TOOL_OPTIONS)
	`|-D[\w.]*ssl\.(insecure|allowall|ignore\.validity\.dates)=true`)

// checksOffWrite reports a write of known text s into a client's
// configuration file, or a shell start-up file, that switches its checks
// off (secrets:tls-off).
func (w *walker) checksOffWrite(a arg, s stream, how string, sp span) {
	if !s.known || !a.lit && !a.expanded {
		return
	}
	c := command{cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links}
	for _, t := range c.targets(a) {
		for _, text := range []string{s.text, s.alt} {
			if text == "" {
				continue
			}
			if isShellStartup(t.path) && checksOffEnv.MatchString(text) || slices.ContainsFunc(checksOffConfig, func(cc struct{ file, text *regexp.Regexp }) bool {
				return cc.file.MatchString(t.path) && cc.text.MatchString(text)
			}) {
				w.d.add(w.f, ruleChecksOff, how+t.show+": switches its checks off", "", sp)
				return
			}
		}
	}
}

// recordArchive records the archive an archiver creates as holding what it
// packed when that is a tree of credentials or histories (tar czf h.tgz
// ~/.claude/projects): sent later, it is that data sent.
func (w *walker) recordArchive(c *command) {
	out, ins := archiveOperands(c)
	if !out.lit || !slices.ContainsFunc(ins, func(a arg) bool {
		return slices.ContainsFunc(c.paths(a), func(p string) bool { return credentialTree(p) || agentTranscripts(p) || isHistoryFile(p) })
	}) {
		return
	}
	packed := generated()
	packed.taint |= taintData
	w.recordWrite(out, packed, false)
}

// archiveOperands returns the archive an archiver creates (tar -czf FILE,
// tar czf FILE, zip [-r] FILE, 7z a FILE) and the paths it packs into it.
func archiveOperands(c *command) (arg, []arg) {
	var out arg
	var ins []arg
	name := strings.TrimSuffix(c.name, ".exe")
	if name == "gtar" || name == "bsdtar" {
		name = "tar"
	}
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		v := a.val
		switch {
		case !a.lit:
			ins = append(ins, a)
		case name == "tar" && strings.HasPrefix(v, "--file="):
			out = arg{val: strings.TrimPrefix(v, "--file="), lit: true, pos: a.pos, end: a.end, exact: -1}
		case name == "tar" && (v == "--file" || strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.HasSuffix(v, "f") && strings.Trim(v[1:], "cvzjJaPpf") == "" ||
			i == 0 && strings.Contains(v, "f") && strings.Trim(v, "cvzjJaPpf") == ""):
			if i+1 < len(c.args) {
				out = c.args[i+1] // -czf FILE; czf FILE and cfz FILE (the old style: f's value is the next word)
				i++
			}
		case strings.HasPrefix(v, "-"):
		case strings.HasPrefix(name, "7z") && out.val == "" && (v == "a" || v == "u"):
		case (name == "zip" || strings.HasPrefix(name, "7z")) && out.val == "":
			out = a
		default:
			ins = append(ins, a)
		}
	}
	return out, ins
}
