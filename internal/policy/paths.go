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
var systemPrefixes = []string{"/etc", "/boot", "/usr", "/bin", "/sbin", "/proc/sys", "/sys", "/var/spool/cron", "/var/spool/anacron", "/var/spool/at", "/Library/LaunchDaemons", "/Library/LaunchAgents", "/System"}

// homeFiles are files in a home directory that run code at login or grant
// access; a trailing slash means everything under that directory.
var homeFiles = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
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

// homeRelative returns p relative to the home directory it is in (~/x,
// /root/x, /home/NAME/x, /Users/NAME/x).
func homeRelative(c string) (string, bool) {
	if rest, ok := strings.CutPrefix(c, "~/"); ok {
		return rest, true
	}
	if rest, ok := strings.CutPrefix(c, "/root/"); ok {
		return rest, true
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

// historyFiles are the base names of shell and REPL history files.
var historyFiles = []string{
	".bash_history", ".zsh_history", ".zhistory", ".history", ".sh_history", ".ksh_history",
	".python_history", ".mysql_history", ".psql_history", ".sqlite_history", ".node_repl_history",
	".lesshst", ".viminfo", "fish_history", ".rediscli_history",
}

// isHistoryFile reports whether p names a history file, in any directory.
func isHistoryFile(p string) bool {
	return slices.Contains(historyFiles, path.Base(strings.ReplaceAll(p, homeMarker, "~")))
}
