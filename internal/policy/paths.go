package policy

import (
	"path"
	"slices"
	"strings"
)

// systemDirs are the directories whose recursive deletion or permission
// change breaks the machine. /lib* and any /home/NAME or /Users/NAME are
// matched separately.
var systemDirs = []string{
	"/", "/bin", "/boot", "/dev", "/etc", "/home", "/mnt", "/media", "/opt", "/proc", "/root",
	"/sbin", "/snap", "/srv", "/sys", "/usr", "/var", "/Users", "/System", "/Library",
	"/Applications", "/private", "/Volumes",
	"/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/libexec", "/usr/local",
	"/usr/share", "/usr/include", "/usr/src", "/var/lib", "/var/log", "/var/spool", "/var/cache", "/var/mail",
}

// cleanAbs cleans an absolute path (see canonicalPath: //, /./, .. and
// /proc/self/root resolved); home forms (~, ~user, $HOME) become "~" so
// they compare equal.
func cleanAbs(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, homeMarker):
		p = "~" + p[len(homeMarker):]
	case strings.HasPrefix(p, "~"):
		if user, rest, _ := strings.Cut(p[1:], "/"); user != "" {
			p = "~/" + rest // ~user is a home directory too
		}
	case !strings.HasPrefix(p, "/"):
		return "", false
	}
	if strings.HasPrefix(p, "~") {
		rest := path.Clean("/" + strings.TrimPrefix(p[1:], "/"))
		if rest == "/" {
			return "~", true
		}
		return "~" + rest, true
	}
	return canonicalPath(p), true
}

// isSystemDir reports whether a cleaned path is a system directory or a
// home directory (/home/NAME, /Users/NAME, ~).
func isSystemDir(p string, home bool) bool {
	if slices.Contains(systemDirs, p) {
		return true
	}
	dir, file := path.Split(p)
	if dir == "/" && strings.HasPrefix(file, "lib") {
		return true
	}
	return home && (p == "~" || (dir == "/home/" || dir == "/Users/") && file != "")
}

// protectedRoot reports whether deleting p recursively would delete the
// root, a system directory or a home directory: p is one of them, or all
// entries of one (a last component of only '*'), or a glob matching one.
// home says whether home directories count.
func protectedRoot(p string, home bool) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	if isSystemDir(c, home) {
		return true
	}
	dir, file := path.Split(c)
	if dir != "/" && dir != "" {
		dir = strings.TrimSuffix(dir, "/")
	}
	if strings.Trim(file, "*") == "" && isSystemDir(dir, home) {
		return true // /*, /etc/*, ~/*
	}
	if !strings.ContainsAny(c, "*?[") {
		return false
	}
	for _, d := range systemDirs {
		if ok, _ := path.Match(c, d); ok {
			return true
		}
		if ok, _ := path.Match(dir, d); ok && strings.Trim(file, "*") == "" {
			return true // /ho?e/*: the entries of a system directory a pattern names
		}
	}
	return false
}

// blockDevices are /dev entries that are whole disks, partitions or memory.
var blockDevices = []string{
	"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "md", "dm-", "loop", "mapper/", "disk", "rdisk",
	"nbd", "zd", "mem", "kmem", "port", "fd0", "sr", "bcache", "rbd",
}

// isBlockDevice reports whether p is a disk, partition or memory device.
func isBlockDevice(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	name, ok := strings.CutPrefix(c, "/dev/")
	if !ok {
		return false
	}
	for _, prefix := range blockDevices {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// systemPrefixes are trees whose files configure or make up the system.
var systemPrefixes = []string{"/etc", "/boot", "/usr", "/bin", "/sbin", "/proc/sys", "/sys", "/var/spool/cron", "/var/spool/anacron", "/var/spool/at", "/Library/LaunchDaemons", "/Library/LaunchAgents", "/System",
	// macOS: kernel and system extensions, security settings, the management agent's and managed preferences
	"/Library/Extensions", "/Library/SystemExtensions", "/Library/Security", "/Library/Application Support/JAMF", "/Library/Managed Preferences"}

// homeFiles are files in a home directory that run code at login or grant
// access; a trailing slash means everything under that directory.
var homeFiles = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zprofile",
	".zshenv", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".mkshrc", ".inputrc",
	".config/fish/config.fish", ".config/fish/conf.d/", ".ssh/authorized_keys", ".ssh/authorized_keys2",
	".ssh/rc", ".ssh/environment", ".config/autostart/", ".config/systemd/user/", ".config/environment.d/",
	".pam_environment", ".xinitrc", ".xprofile", "Library/LaunchAgents/",
}

// isSystemFile reports whether writing p changes the system: a file under
// a system tree, or a login/startup or SSH access file in a home directory.
func isSystemFile(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	if top, _, _ := strings.Cut(strings.TrimPrefix(c, "/"), "/"); strings.HasPrefix(c, "/") && strings.HasPrefix(top, "lib") {
		return true
	}
	for _, prefix := range systemPrefixes {
		if c == prefix || strings.HasPrefix(c, prefix+"/") {
			return true
		}
	}
	rel, ok := homeRelative(c)
	if !ok {
		return false
	}
	for _, f := range homeFiles {
		if rel == f || strings.HasSuffix(f, "/") && (strings.HasPrefix(rel, f) || rel+"/" == f) {
			return true
		}
	}
	return false
}

// homePath returns p, cleaned, relative to the home directory it is in.
func homePath(p string) (string, bool) {
	c, ok := cleanAbs(p)
	if !ok {
		return "", false
	}
	return homeRelative(c)
}

// homeRelative returns p relative to the home directory it is in (~/x,
// /root/x, /home/NAME/x, /Users/NAME/x).
func homeRelative(c string) (string, bool) {
	if rest, ok := strings.CutPrefix(c, "~/"); ok {
		return rest, true
	}
	if rest, ok := strings.CutPrefix(c, "/root/"); ok {
		return rest, true
	}
	if len(c) > 13 && strings.HasPrefix(c, "/mnt/") && c[6] == '/' && strings.HasPrefix(c[7:], "Users/") {
		c = c[6:] // /mnt/c/Users/NAME: a Windows home, as WSL mounts it
	}
	for _, h := range []string{"/home/", "/Users/"} {
		if rest, ok := strings.CutPrefix(c, h); ok {
			if _, rel, ok := strings.Cut(rest, "/"); ok {
				return rel, true
			}
		}
	}
	return "", false
}

// shellHistoryFiles are the base names of shells' history files.
var shellHistoryFiles = []string{".bash_history", ".zsh_history", ".zhistory", ".history", ".sh_history", ".ksh_history", "fish_history"}

// historyFiles are the base names of shell and REPL history files.
var historyFiles = []string{
	".bash_history", ".zsh_history", ".zhistory", ".history", ".sh_history", ".ksh_history",
	".python_history", ".mysql_history", ".psql_history", ".sqlite_history", ".node_repl_history",
	".lesshst", ".viminfo", "fish_history", ".rediscli_history",
}

// isShellHistory reports a shell's history file (not a REPL's or an
// editor's), in any directory.
func isShellHistory(p string) bool {
	return slices.Contains(shellHistoryFiles, path.Base(p))
}

// isHistoryFile reports whether p names a history file, in any directory.
func isHistoryFile(p string) bool {
	return slices.Contains(historyFiles, path.Base(strings.ReplaceAll(p, homeMarker, "~")))
}

// systemBases are the last components of the protected roots: an operand
// whose known end is /NAME for one of them may name that root.
var systemBases = func() map[string]bool {
	m := map[string]bool{}
	for _, d := range systemDirs {
		if d != "/" {
			m[path.Base(d)] = true
		}
	}
	return m
}()

// unresolvedTail returns the last path component an operand that is not
// fully known is sure to end in, or "" when that component holds an
// unknown part itself ("$d", "/tmp/$x", "$X/", "$X/."). Whatever the
// unknown parts hold ("..", "/usr/", nothing), the path the operand names
// ends in that fixed name.
func unresolvedTail(a arg) string {
	t := strings.TrimRight(a.tail, "/")
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return ""
	}
	base := t[i+1:]
	if base == "." || base == ".." {
		return ""
	}
	return base
}

// unresolvedRoot reports whether an operand the detector cannot resolve
// may name a protected root. The submitter may choose what a command
// substitution, a read or a sealed secret holds: such an operand may name
// a protected root unless it ends in a fixed name of none ("$BUILD/out",
// "$(mktemp -d)/x"); whatever the unknown parts hold ("..", "/usr/",
// nothing), the path ends in that name. A home directory /home/NAME whose
// NAME is that fixed name is the one case this misses (docs/policy.md). A
// variable of the worker's own environment is the operator's value or
// empty: the operand may name a protected root when its empty reading
// does ("$DIR/"* is /*).
func (c *command) unresolvedRoot(a arg) bool {
	switch {
	case a.lit || a.taint&taintProc != 0:
		return false
	case a.taint&taintUnknown == 0:
		return c.emptyReading(a, func(t target) bool { return protectedRoot(t.path, true) })
	}
	base := unresolvedTail(a)
	switch {
	case base == "" || strings.Trim(base, "*") == "":
		return true
	case strings.HasPrefix(base, "lib"):
		return true
	case systemBases[base]:
		return true
	}
	if strings.ContainsAny(base, "*?[") {
		for name := range systemBases {
			if ok, _ := path.Match(base, name); ok {
				return true
			}
		}
		if ok, _ := path.Match(base, "lib"); ok {
			return true
		}
	}
	return false
}

// emptyReading reports whether the operand, with the worker environment's
// variables in it empty, names a target for which bad holds. Variables the
// environment must have set (${DIR:?}) are the operator's: trusted.
func (c *command) emptyReading(a arg, bad func(target) bool) bool {
	if a.taint&taintEnv == 0 {
		return false
	}
	for _, t := range c.targets(arg{val: a.val, lit: true}) {
		if bad(t) {
			return true
		}
	}
	return false
}

// unresolvedDevice reports whether an operand the detector cannot resolve
// may name a disk: its fixed last component is missing or is the name of a
// block device ("$DISK", "/dev/$x", "$X/sda"), or, for the worker
// environment's variables, its empty reading is one.
func (c *command) unresolvedDevice(a arg) bool {
	switch {
	case a.lit || a.taint&taintProc != 0:
		return false
	case a.taint&taintUnknown == 0:
		return c.emptyReading(a, func(t target) bool { return isBlockDevice(t.path) })
	}
	base := unresolvedTail(a)
	if base == "" {
		return true
	}
	return !strings.Contains(base, ".") && isBlockDevice("/dev/"+base) // disk.img is a file
}

// unresolvedShow is how a detail shows an operand the detector cannot
// resolve: the word as written, never a value.
func unresolvedShow(a arg) string {
	if a.src == "" {
		return "an input it cannot resolve"
	}
	return quoteDetail(a.src) + ", which it cannot resolve"
}
