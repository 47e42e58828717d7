package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// writeKind says how a command writes a file.
type writeKind int

const (
	writeTruncate writeKind = iota // replaces the content (>, cp, tee)
	writeModify                    // appends or edits (>>, sed -i, touch)
)

// writeHits classifies writing path p: a block device is dd-device,
// /proc/sysrq-trigger is shutdown, truncating a history file is
// history-wipe, a system or startup file is write-system. label prefixes
// the quoted path in the detail ("dd of=", "redirection to ").
func writeHits(t target, kind writeKind, label string, h *hits) {
	p := t.path
	c, ok := cleanAbs(p)
	switch {
	case isBlockDevice(p):
		h.add(ruleDDDevice, label+t.show)
	case ok && c == "/proc/sysrq-trigger":
		h.add(ruleShutdown, label+t.show)
	case isHistoryFile(p):
		if kind == writeTruncate {
			h.add(ruleHistoryWipe, label+t.show)
		}
	case isSystemFile(p):
		h.add(ruleWriteSystem, label+t.show)
	case kind == writeTruncate && isCredentialPath(p):
		h.add(ruleCredentialDestroy, label+t.show)
	case ok && shadowsProgram(c):
		h.add(ruleWriteSystem, label+t.show+", which the PATH finds before the system's "+path.Base(c))
	case kind == writeTruncate && ok && strings.HasPrefix(c+"/", "/var/log/"): // a log, or the logs find lists under it
		h.add(ruleHistoryWipe, label+t.show+", a system log")
	case kind == writeTruncate && ok && serviceStateFile(c):
		h.add(ruleWriteSystem, label+t.show+", a service's data")
	}
}

// shadowedPrograms are programs a file of the same name in a PATH
// directory of the home directory would stand in for: at every call a
// job, a hook or the user makes, it runs first (and sees their arguments:
// passwords given to sudo, keys given to ssh).
var shadowedPrograms = []string{"git", "ssh", "scp", "sftp", "sudo", "su", "doas", "ls", "cat", "cp", "mv", "rm", "sh", "bash", "zsh",
	"dash", "env", "python", "python3", "node", "npm", "npx", "pip", "pip3", "curl", "wget", "gpg", "gpg2", "passwd", "login", "id",
	"ps", "which", "make", "go", "cargo", "docker", "kubectl", "aws", "gcloud", "az", "terraform", "vault", "op", "gh", "ssh-add", "ssh-agent"}

// userBinDirs are the home directory's PATH directories.
var userBinDirs = []string{".local/bin", "bin", ".bin"}

// shadowsProgram reports whether the clean path c is, in a PATH directory
// of a home directory, the name of a program the system provides.
func shadowsProgram(c string) bool {
	rel, ok := homeRelative(c)
	if !ok {
		return false
	}
	dir, name := path.Split(rel)
	return slices.Contains(userBinDirs, strings.TrimSuffix(dir, "/")) && slices.Contains(shadowedPrograms, name)
}

// serviceStateFile reports whether the clean path c is a file of a
// service's state (/var/lib/mysql/ibdata1, /var/backups/db.tar):
// truncating it destroys the data.
func serviceStateFile(c string) bool {
	if serviceDatabaseFile(c) {
		return true
	}
	for _, d := range []string{"/var/lib/", "/var/backups/"} {
		rest, ok := strings.CutPrefix(c, d)
		if ok && rest != "" && !slices.ContainsFunc(serviceStateRebuilt, func(r string) bool { return c == r || strings.HasPrefix(c, r+"/") }) {
			return d == "/var/backups/" || strings.Contains(rest, "/")
		}
	}
	return false
}

// into is the file a copy or move of src into directory d creates.
func into(d target, src string) target {
	p := joinPath(d.path, path.Base(src))
	if d.show == quoteDetail(d.path) {
		return target{path: p, show: quoteDetail(p)}
	}
	return target{path: p, show: d.show}
}

// matchCopy judges cp, install and rsync by their destination (also as a
// directory receiving each source).
func matchCopy(c *command, h *hits) {
	spec := optSpec{short: "tSmogeB", long: []string{"target-directory", "suffix", "mode", "owner", "group", "rsh", "exclude", "include", "filter"}}
	ops, opts := operands(c.args, spec)
	var dests []arg
	for _, o := range opts {
		if o.name == "t" || o.name == "target-directory" {
			dests = append(dests, o.value)
		}
	}
	if c.name == "install" && hasOpt(opts, "d", "directory") {
		dests, ops = ops, nil
	}
	if len(dests) == 0 && len(ops) > 1 {
		dests, ops = ops[len(ops)-1:], ops[:len(ops)-1]
	}
	if c.name == "rsync" && rsyncDryRun(opts) {
		return
	}
	mirrors := c.name == "rsync" && slices.ContainsFunc(opts, func(o option) bool { return strings.HasPrefix(o.name, "del") })
	for _, d := range dests {
		for _, dt := range c.targets(d) {
			if mirrors {
				// rsync --delete removes what the source lacks: with an
				// empty source, the whole destination tree.
				deleteHits("rsync --delete", dt, true, h)
			}
			writeHits(dt, writeTruncate, c.name+" to ", h)
			for _, src := range ops {
				if src.lit {
					writeHits(into(dt, src.val), writeTruncate, c.name+" to ", h)
				}
			}
		}
	}
}

// matchLn judges ln by the link it creates or replaces.
func matchLn(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "tS", long: []string{"target-directory", "suffix"}})
	for _, o := range opts {
		if o.name == "t" || o.name == "target-directory" {
			for _, t := range c.targets(o.value) {
				writeHits(t, writeTruncate, "ln to ", h)
			}
		}
	}
	if len(ops) >= 2 {
		for _, t := range c.targets(ops[len(ops)-1]) {
			writeHits(t, writeTruncate, "ln to ", h)
		}
	}
}

// matchTee judges tee by the files it writes.
func matchTee(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{long: []string{"output-error"}})
	kind := writeTruncate
	if hasOpt(opts, "a", "append") {
		kind = writeModify
	}
	for _, o := range ops {
		for _, t := range c.targets(o) {
			if kind == writeModify && c.stdin.known && plainStartupText(c.stdin.text) && isShellStartup(t.path) {
				continue // an export or alias appended to ~/.bashrc (and judged as a script: scriptSink)
			}
			writeHits(t, kind, "tee ", h)
		}
	}
}

// matchDD judges dd by its of= operand.
func matchDD(c *command, h *hits) {
	kind := writeTruncate
	for _, a := range c.args {
		if strings.HasPrefix(a.val, "conv=") && strings.Contains(a.val, "notrunc") {
			kind = writeModify
		}
	}
	for _, a := range c.args {
		dst, ok := strings.CutPrefix(a.val, "of=")
		if !ok && !a.lit && !strings.Contains(a.val, "=") {
			ok = true // "$ARGS": its key is not known, so it may be of=
		}
		if !ok {
			continue
		}
		if !a.lit {
			if c.unresolvedDevice(a) {
				h.add(ruleDDDevice, "dd of="+unresolvedShow(a))
			}
			continue
		}
		for _, t := range c.targets(arg{val: dst, lit: true}) {
			writeHits(t, kind, "dd of=", h)
		}
	}
}

// matchInPlace judges sed -i and perl -i by the files they edit.
// matchFindOutput judges the files find's -fprint, -fprint0, -fprintf and
// -fls write their list to: each is created or truncated first
// (find . -maxdepth 0 -fprint ~/.bashrc empties the start-up file).
func matchFindOutput(c *command, h *hits) {
	for i, a := range c.args[:max(0, len(c.args)-1)] {
		if !a.lit || a.val != "-fprint" && a.val != "-fprint0" && a.val != "-fprintf" && a.val != "-fls" {
			continue
		}
		for _, t := range c.targets(c.args[i+1]) {
			writeHits(t, writeTruncate, "find "+a.val+" to ", h)
		}
	}
}

// awkOutput is an awk print or printf statement redirected to a file
// named by a string literal: > truncates it at the first write, >> appends.
var awkOutput = regexp.MustCompile(`\bprintf?\b[^;{}\n]*?(>>?)\s*"([^"]+)"`)

// matchAwkOutput judges the files an awk program's output redirections
// write (awk 'BEGIN { printf "" > "/etc/hosts" }' empties the file).
func matchAwkOutput(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "fvF", long: []string{"file", "assign", "field-separator"}})
	if hasOpt(opts, "f", "file") || len(ops) == 0 || !ops[0].lit || !strings.Contains(ops[0].val, ">") {
		return
	}
	for _, m := range awkOutput.FindAllStringSubmatch(ops[0].val, -1) {
		kind := writeTruncate
		if m[1] == ">>" {
			kind = writeModify
		}
		name := m[2]
		if strings.HasPrefix(name, "~") {
			name = "./" + name // awk does not expand ~
		}
		for _, t := range c.targets(arg{val: name, lit: true, pos: ops[0].pos, end: ops[0].end, exact: -1}) {
			writeHits(t, kind, c.name+" output to ", h)
		}
	}
}

// matchEditorWrite judges ed and ex editing a file with a script that
// writes it (w, wq, x): a change to that file, as sed -i is.
func matchEditorWrite(c *command, h *hits) {
	ops, _ := operands(c.args, optSpec{short: "p"})
	if len(ops) == 0 {
		return
	}
	script := c.stdin.code()
	if script.known && !edWrites.MatchString(script.text) {
		return // no write command: the file is left as it was
	}
	for _, t := range c.targets(ops[len(ops)-1]) {
		writeHits(t, writeModify, c.name+" on ", h)
	}
}

// edWrites is an ed or ex script line that writes the buffer.
var edWrites = regexp.MustCompile(`(?m)^\s*[0-9,.$]*\s*(w|wq|x|W|up|update)\b`)

func matchInPlace(c *command, h *hits) {
	var files []arg
	switch c.name {
	case "sed":
		ops, opts := operands(c.args, optSpec{short: "efl", long: []string{"expression", "file", "line-length"}})
		inPlace := hasOpt(opts, "i", "in-place")
		for _, a := range c.args {
			inPlace = inPlace || a.lit && strings.HasPrefix(a.val, "--in-place")
		}
		if !inPlace {
			return
		}
		if !hasOpt(opts, "e", "f", "expression", "file") && len(ops) > 0 {
			ops = ops[1:] // the script
		}
		files = ops
	case "yq":
		// yq -i EXPR FILE: the file rewritten with the expression applied
		ops, opts := operands(c.args, optSpec{short: "pofIe", long: []string{"input-format", "output-format", "front-matter", "indent", "expression", "from-file"}})
		if !hasOpt(opts, "i", "inplace") {
			return
		}
		if len(ops) > 1 {
			ops = ops[1:]
		}
		files = ops
	default:
		files = perlInPlaceFiles(c.args)
	}
	for _, f := range files {
		for _, t := range c.targets(f) {
			writeHits(t, writeModify, c.name+" -i on ", h)
		}
	}
}

// perlInPlaceFiles returns the files perl -i edits, or nil without -i.
func perlInPlaceFiles(args []arg) []arg {
	inPlace, hasCode := false, false
	i := 0
loop:
	for ; i < len(args); i++ {
		v := args[i].val
		switch {
		case !args[i].lit || len(v) < 2 || v[0] != '-':
			break loop
		case v == "--":
			i++
			break loop
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'e', 'E':
				hasCode = true
				if j+1 == len(v) {
					i++
				}
				break cluster
			case 'i':
				inPlace = true
				break cluster
			case 'I', 'M', 'm', 'x', 'l', '0', 'C', 'd', 'D':
				break cluster
			}
		}
	}
	if !inPlace {
		return nil
	}
	ops := args[min(i, len(args)):]
	if !hasCode && len(ops) > 0 {
		ops = ops[1:]
	}
	return ops
}

// matchTouch judges touch and truncate by their files.
func matchTouch(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "sdrtoA", long: []string{"size", "reference", "date", "time", "io-blocks"}})
	kind := writeModify
	if c.name == "truncate" && truncateShrinks(opts) {
		kind = writeTruncate
	}
	for _, o := range ops {
		for _, t := range c.targets(o) {
			writeHits(t, kind, c.name+" ", h)
		}
	}
}

// truncateShrinks reports whether truncate's size can empty or shrink a
// file: any size but one that only grows it (GNU truncate: +N extends,
// >N sets at least N, %N rounds up). An absolute size (1G, 0) shrinks a
// larger file; -N, <N and /N shrink; so does a reference file.
func truncateShrinks(opts []option) bool {
	for _, o := range opts {
		if o.name == "s" || o.name == "size" {
			v := strings.TrimSpace(o.value.val)
			return !o.value.lit || v == "" || !strings.ContainsAny(v[:1], "+>%")
		}
	}
	return true
}

// matchTar judges tar extracting into a directory given with -C.
func matchTar(c *command, h *hits) {
	extract := false
	var dirs []arg
	for i, a := range c.args {
		v := a.val
		switch {
		case !a.lit:
		case v == "--extract" || v == "--get":
			extract = true
		case strings.HasPrefix(v, "--directory="):
			dirs = append(dirs, arg{val: v[len("--directory="):], lit: true})
		case v == "--directory" || v == "-C":
			if i+1 < len(c.args) {
				dirs = append(dirs, c.args[i+1])
			}
		case strings.HasPrefix(v, "--"):
		case strings.HasPrefix(v, "-") || i == 0: // -xzf, or old style xzf
			if strings.HasPrefix(v, "-C") && len(v) > 2 {
				dirs = append(dirs, arg{val: v[2:], lit: true})
				continue
			}
			extract = extract || strings.ContainsRune(strings.TrimPrefix(v, "-"), 'x')
			if strings.HasSuffix(v, "C") && i+1 < len(c.args) {
				dirs = append(dirs, c.args[i+1])
			}
		}
	}
	if !extract {
		tarRemoveFiles(c, h)
		return
	}
	for _, d := range dirs {
		for _, t := range c.targets(d) {
			if clean, ok := cleanAbs(t.path); ok && clean == "/" {
				h.add(ruleWriteSystem, "tar -x into "+t.show+": the archive's files replace the system's")
				continue
			}
			writeHits(t, writeModify, "tar -x into ", h)
		}
	}
}

// tarRemoveFiles judges tar --remove-files, which deletes each file (and
// directory) it has archived: its operands are deleted as rm -r would.
func tarRemoveFiles(c *command, h *hits) {
	if !slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && a.val == "--remove-files" }) {
		return
	}
	for _, o := range tarOperandList(tarOperands(c.args)) {
		for _, t := range c.targets(o) {
			deleteHits("tar --remove-files", t, true, h)
		}
	}
}

// tarValueOpts are tar's long options that take the next word as their value.
var tarValueOpts = []string{"--file", "--directory", "--files-from", "--exclude-from", "--exclude", "--use-compress-program",
	"--format", "--label", "--owner", "--group", "--mode", "--newer", "--listed-incremental", "--blocking-factor", "--transform"}

// tarOperandList returns the operands of tar's arguments: the words that
// are not options or their values (-czf ARCHIVE, -C DIR, --file ARCHIVE).
func tarOperandList(args []arg) []arg {
	var ops []arg
	for i := 0; i < len(args); i++ {
		a := args[i]
		v := a.val
		switch {
		case !a.lit:
			ops = append(ops, a)
		case strings.HasPrefix(v, "--"):
			if !strings.Contains(v, "=") && slices.Contains(tarValueOpts, v) {
				i++
			}
		case strings.HasPrefix(v, "-") && len(v) > 1, i == 0 && !strings.Contains(v, "/") && strings.ContainsAny(v, "cru") && shortCluster("-"+v):
			// -czf ARCHIVE (or old style czf ARCHIVE): each of f, C, T, X, b, L, N, g, I, H, V takes a word
			for _, r := range strings.TrimPrefix(v, "-") {
				if strings.ContainsRune("fCTXbLNgIHV", r) {
					i++
				}
			}
		default:
			ops = append(ops, a)
		}
	}
	return ops
}

// matchDownloadOutput judges curl -o FILE and wget -O FILE / -P DIR.
func matchDownloadOutput(c *command, h *hits) {
	for _, out := range outputOptions(c) {
		for _, t := range c.targets(out) {
			writeHits(t, writeTruncate, c.name+" output to ", h)
		}
	}
}

// outputOptions returns the values of curl's -o/--output and wget's
// -O/--output-document/-P/--directory-prefix (not "-", standard output).
func outputOptions(c *command) []arg {
	short, long := "o", "output"
	wget := strings.TrimSuffix(c.name, ".exe") == "wget"
	if wget {
		short, long = "OP", "output-document"
	}
	var outs []arg
	for i, a := range c.args {
		v := a.val
		var out arg
		switch {
		case !a.lit:
			continue
		case v == "--"+long || wget && v == "--directory-prefix":
			if i+1 < len(c.args) {
				out = c.args[i+1]
			}
		case strings.HasPrefix(v, "--"+long+"=") || wget && strings.HasPrefix(v, "--directory-prefix="):
			_, val, _ := strings.Cut(v, "=")
			out = arg{val: val, lit: true, pos: a.pos, end: a.end, exact: -1}
		case len(v) > 1 && v[0] == '-' && v[1] != '-':
			j := strings.IndexAny(v[1:], short)
			if j < 0 {
				continue
			}
			if rest := v[j+2:]; rest != "" {
				out = arg{val: rest, lit: true, pos: a.pos, end: a.end, exact: -1}
			} else if i+1 < len(c.args) {
				out = c.args[i+1]
			}
		default:
			continue
		}
		if out.val != "-" && out.val != "" {
			outs = append(outs, out)
		}
	}
	return outs
}

// matchCrontab judges crontab: anything but listing replaces or removes the
// user's crontab.
func matchCrontab(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "uc"})
	switch {
	case hasOpt(opts, "r"):
		h.add(ruleWriteSystem, "crontab -r removes the crontab")
	case hasOpt(opts, "e"):
		h.add(ruleWriteSystem, "crontab -e edits the crontab")
	case hasOpt(opts, "l", "V", "h", "help", "version", "T"):
	case len(ops) > 0 && ops[0].val != "-":
		h.add(ruleWriteSystem, "crontab FILE replaces the crontab")
	default:
		h.add(ruleWriteSystem, "crontab - replaces the crontab from stdin")
	}
}

// matchSysctl judges sysctl writes (-w, NAME=VALUE, -p FILE/--load FILE):
// a kernel parameter changed is write-system, unless it is one of the
// capacity tunables services ask for (vm.max_map_count for Elasticsearch,
// fs.inotify.max_user_watches for file watchers). Reloading the system's
// own configuration (--system, -p without a file) changes nothing its
// administrator did not write.
func matchSysctl(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "p", long: []string{"load"}})
	for _, o := range opts {
		if (o.name == "p" || o.name == "load") && o.value.val != "" && o.value.val != "/etc/sysctl.conf" {
			h.add(ruleWriteSystem, "sysctl loads kernel parameters from "+quoteDetail(o.value.src))
			return
		}
	}
	for _, o := range ops {
		name, val, ok := strings.Cut(o.val, "=")
		key := strings.ReplaceAll(strings.TrimSpace(name), "/", ".")
		if ok && o.lit && slices.Contains(sysctlHardening[key], strings.TrimSpace(val)) {
			continue // kernel.randomize_va_space=2: a protection switched on
		}
		if ok && (!o.lit || !sysctlTunables[key]) {
			h.add(ruleWriteSystem, "sysctl changes kernel parameter "+quoteDetail(o.src))
			return
		}
	}
}

// sysctlHardening are kernel parameters with the values that switch a
// protection on (the settings hardening guides ask for).
var sysctlHardening = map[string][]string{
	"kernel.randomize_va_space": {"2"}, "kernel.yama.ptrace_scope": {"1", "2", "3"}, "kernel.kptr_restrict": {"1", "2"},
	"kernel.dmesg_restrict": {"1"}, "kernel.unprivileged_bpf_disabled": {"1", "2"}, "net.core.bpf_jit_harden": {"1", "2"},
	"fs.protected_hardlinks": {"1"}, "fs.protected_symlinks": {"1"}, "fs.protected_fifos": {"1", "2"}, "fs.protected_regular": {"1", "2"},
	"fs.suid_dumpable": {"0"}, "kernel.sysrq": {"0"}, "net.ipv4.tcp_syncookies": {"1"}, "net.ipv4.conf.all.rp_filter": {"1"},
	"net.ipv4.conf.default.rp_filter": {"1"}, "net.ipv4.conf.all.accept_redirects": {"0"}, "net.ipv4.conf.default.accept_redirects": {"0"},
	"net.ipv4.conf.all.send_redirects": {"0"}, "net.ipv4.conf.all.accept_source_route": {"0"}, "net.ipv6.conf.all.accept_redirects": {"0"},
	"net.ipv4.icmp_echo_ignore_broadcasts": {"1"}, "net.ipv4.conf.all.log_martians": {"1"}}

// sysctlTunables are kernel parameters that size a resource (map counts,
// watches, queues, buffers, port ranges): raising one is routine service
// set-up, not a change to the host's security or routing.
var sysctlTunables = map[string]bool{
	"vm.max_map_count": true, "vm.swappiness": true, "vm.overcommit_memory": true, "vm.dirty_ratio": true,
	"vm.dirty_background_ratio": true, "fs.inotify.max_user_watches": true, "fs.inotify.max_user_instances": true,
	"fs.inotify.max_queued_events": true, "fs.file-max": true, "fs.nr_open": true, "fs.aio-max-nr": true,
	"net.core.somaxconn": true, "net.core.rmem_max": true, "net.core.wmem_max": true, "net.core.rmem_default": true,
	"net.core.wmem_default": true, "net.core.netdev_max_backlog": true, "net.ipv4.tcp_max_syn_backlog": true,
	"net.ipv4.ip_local_port_range": true, "net.ipv4.tcp_fin_timeout": true, "net.ipv4.tcp_tw_reuse": true,
	"net.ipv4.tcp_keepalive_time": true, "kernel.pid_max": true, "kernel.threads-max": true,
}

// matchSudoedit judges sudoedit: a privileged edit of its files.
func matchSudoedit(c *command, h *hits) {
	h.add(rulePrivilege, "sudoedit")
	ops, _ := operands(c.args, optSpec{short: "ugCDhpRrT"})
	for _, o := range ops {
		for _, t := range c.targets(o) {
			writeHits(t, writeModify, "sudoedit ", h)
		}
	}
}

// matchAccounts judges programs that change users, groups or passwords
// (/etc/passwd, /etc/shadow, /etc/group, /etc/sudoers).
// serviceAccount reports a useradd that makes an account no one logs in
// to (a nologin or false shell) with no special id or group: a service's.
func serviceAccount(c *command) bool {
	nologin := false
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if !a.lit {
			return false
		}
		v, next := a.val, ""
		if i+1 < len(c.args) {
			next = c.args[i+1].val
		}
		switch {
		case v == "-s" || v == "--shell":
			nologin = strings.HasSuffix(next, "/nologin") || strings.HasSuffix(next, "/false")
			i++
		case strings.HasPrefix(v, "--shell="):
			nologin = strings.HasSuffix(v, "/nologin") || strings.HasSuffix(v, "/false")
		case v == "-o" || v == "--non-unique" || v == "-G" || v == "--groups" || v == "-g" || v == "--gid" || v == "-u" || v == "--uid" ||
			v == "-p" || v == "--password" || strings.HasPrefix(v, "--groups=") || strings.HasPrefix(v, "--gid=") || strings.HasPrefix(v, "--uid=") ||
			v == "-R" || v == "--root" || v == "-P" || v == "--prefix":
			return false
		}
	}
	return nologin
}

func matchAccounts(c *command, h *hits) {
	if c.name == "passwd" {
		if _, opts := operands(c.args, optSpec{}); hasOpt(opts, "S", "status") {
			return
		}
	}
	if c.name == "visudo" && readOnlyCommand(c) {
		return // visudo -c checks the sudoers files and changes nothing
	}
	if _, opts := operands(c.args, optSpec{short: "bcdefgGkKpsuU", long: []string{"base-dir", "comment", "home-dir", "expiredate",
		"inactive", "gid", "groups", "skel", "key", "password", "shell", "uid", "root", "prefix", "selinux-user"}}); len(c.args) > 0 &&
		(onlyOpts(opts, "h", "help", "V", "version") || c.name == "useradd" && len(c.args) == 1 && c.args[0].val == "-D") {
		return // --help, useradd -D: print, change nothing
	}
	if c.name == "useradd" && serviceAccount(c) {
		return
	}
	h.add(ruleWriteSystem, c.name+" changes system accounts")
}
