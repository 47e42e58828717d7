package policy

import (
	"path"
	"strings"
)

// matchChmod judges chmod, chown, chgrp and setfacl on /, /* or a system
// directory (home directories of users are left out: chown -R me ~ is a
// routine fix), and a chmod -R that makes a home, a service's data or a
// system directory's child writable by every user (see opensTree).
func matchChmod(c *command, h *hits) {
	spec := optSpec{long: []string{"reference", "from"}}
	if c.name == "setfacl" {
		spec = optSpec{short: "mMxX", long: []string{"modify", "modify-file", "remove", "remove-file", "set", "set-file"}}
	}
	ops, opts := operands(c.args, spec)
	if c.name == "chmod" && len(ops) > 1 && setuidMode(ops[0]) {
		for _, o := range ops[1:] {
			for _, t := range c.targets(o) {
				if systemProgram(t.path) {
					h.add(ruleChmodSystem, "chmod "+ops[0].val+" (set-user-ID) on "+t.show+": anyone runs it as its owner")
					return
				}
			}
		}
	}
	var mode []arg
	if c.name != "setfacl" && !hasOpt(opts, "reference") && len(ops) > 0 {
		mode, ops = ops[:1], ops[1:] // the mode or owner
	}
	recursive := c.tree || hasOpt(opts, "R", "recursive")
	for _, o := range ops {
		if recursive && c.unresolvedRoot(o) {
			h.add(ruleChmodSystem, c.name+" -R on "+unresolvedShow(o))
		}
		for _, t := range c.targets(o) {
			if isAccountFile(t.path) && (c.name != "setfacl" || hasOpt(opts, "m", "M", "modify", "modify-file", "set", "set-file")) {
				h.add(ruleChmodSystem, c.name+" on "+t.show)
				continue
			}
			if protectedRoot(t.path, false) {
				detail := c.name + " on "
				if recursive {
					detail = c.name + " -R on "
				}
				h.add(ruleChmodSystem, detail+t.show)
				continue
			}
			if c.name == "chmod" && len(mode) > 0 && othersMayRead(mode[0]) && isCredentialPath(t.path) {
				h.add(ruleChmodSystem, "chmod "+mode[0].val+" on "+t.show+": every user of the machine may read the credentials")
				continue
			}
			if recursive && c.name == "chmod" && len(mode) > 0 && worldWritable(mode[0]) && opensTree(t.path) {
				h.add(ruleChmodSystem, "chmod -R "+mode[0].val+" on "+t.show+": anyone may write every file in it")
			}
			if recursive && c.name == "chmod" && len(mode) > 0 && locksOwnerOut(mode[0]) && protectedRoot(t.path, true) {
				h.add(ruleChmodSystem, "chmod -R "+mode[0].val+" on "+t.show+": not even its owner may read it")
			}
		}
	}
}

// opensTree reports a tree whose files a world-writable chmod -R opens
// to every user of the machine: the home directory (its keys with it), a
// service's or a mounted disk's data, a system directory's child
// (/etc/app, /var/www/html).
func opensTree(p string) bool {
	if protectedRoot(p, true) || serviceDataDir(p) {
		return true
	}
	c, ok := deletedTree(p)
	return ok && c != "/" && isSystemDir(path.Dir(c), false) && !strings.HasPrefix(c, "/tmp") && !strings.HasPrefix(c, "/var/tmp") && !strings.HasPrefix(c, "/dev/shm")
}

// locksOwnerOut reports a chmod mode that takes read access from the
// owner: octal whose owner digit lacks the read bit (000, 0311), or
// symbolic a-r, u-r, -r, a=, u=.
func locksOwnerOut(a arg) bool {
	if !a.lit || a.val == "" {
		return false
	}
	v := a.val
	if strings.Trim(v, "01234567") == "" {
		if len(v) < 3 {
			return false // 0, 44: a short octal is read with leading zeros; rare, left alone
		}
		return (v[len(v)-3]-'0')&4 == 0
	}
	for _, clause := range strings.Split(v, ",") {
		who, rest, ok := strings.Cut(clause, "-")
		if ok && strings.Trim(who, "ua") == "" && strings.Contains(rest, "r") {
			return true
		}
		who, rest, ok = strings.Cut(clause, "=")
		if ok && strings.Trim(who, "ua") == "" && !strings.Contains(rest, "r") {
			return true
		}
	}
	return false
}

// othersMayRead reports a chmod mode that lets users other than the owner
// and group read or write: octal whose last digit has the read or write bit
// (644, 0666, 777), or symbolic o+r, a+rw, +r, a=r.
func othersMayRead(a arg) bool {
	if !a.lit || a.val == "" {
		return false
	}
	v := a.val
	if strings.Trim(v, "01234567") == "" {
		return len(v) >= 3 && (v[len(v)-1]-'0')&6 != 0
	}
	for _, clause := range strings.Split(v, ",") {
		i := strings.IndexAny(clause, "+=")
		if i < 0 {
			continue
		}
		who, perms := clause[:i], clause[i+1:]
		if (who == "" || strings.ContainsAny(who, "oa")) && strings.ContainsAny(perms, "rw") {
			return true
		}
	}
	return false
}

// worldWritable reports a chmod mode that lets every user write: octal
// with the others' write bit (777, 0666, 1777 excepted: /tmp's sticky
// mode), or symbolic o+w, a+w, a=rwx, ugo+w.
func worldWritable(a arg) bool {
	if !a.lit || a.val == "" {
		return false
	}
	v := a.val
	if strings.Trim(v, "01234567") == "" {
		if len(v) == 4 && v[0] == '1' {
			return false
		}
		d := v[len(v)-1] - '0'
		return d&2 != 0
	}
	for _, clause := range strings.Split(v, ",") {
		i := strings.IndexAny(clause, "+=")
		if i < 0 {
			continue
		}
		who, perms := clause[:i], clause[i+1:]
		if (strings.ContainsAny(who, "oa") || who == "") && strings.Contains(perms, "w") && (who != "" || clause[i] == '=') {
			return true
		}
	}
	return false
}

// matchPrivilege judges the privilege programs run on their own (sudo -s,
// su, doas with no command); wrapped commands are flagged by judge.
func matchPrivilege(c *command, h *hits) {
	if c.name == "sudo" && sudoOnlyReports(c.args) {
		return
	}
	h.add(rulePrivilege, c.name)
}

// sudoOnlyReports reports sudo run to list what the user may do (-l, -ll,
// -U USER -l), or to refresh (-v) or drop (-k, -K) its cached
// credentials: no command runs with privileges.
func sudoOnlyReports(args []arg) bool {
	rest, opts := skipOptions(args, optSpec{short: "Ugh", long: []string{"other-user", "host", "group"}})
	if len(opts) == 0 || len(rest) > 0 {
		return false
	}
	for _, o := range opts {
		switch o.name {
		case "l", "list", "v", "validate", "k", "K", "reset-timestamp", "remove-timestamp", "U", "other-user", "n", "non-interactive":
		default:
			return false
		}
	}
	return true
}

// isAccountFile reports whether p is a file that holds the accounts, their
// passwords or sudo rules: changing its mode or owner (chmod 777
// /etc/passwd) lets any user rewrite them or read the hashes.
func isAccountFile(p string) bool {
	c, ok := cleanAbs(p)
	return ok && (c == "/etc/passwd" || c == "/etc/group" || isCredentialFile(c) && strings.HasPrefix(c, "/etc/"))
}

// setuidMode reports a chmod mode that sets the set-user-ID or
// set-group-ID bit: u+s, g+s, +s, 4755, 6755.
func setuidMode(a arg) bool {
	v := a.val
	if !a.lit {
		return false
	}
	if len(v) == 4 && strings.Trim(v, "01234567") == "" {
		return v[0] == '4' || v[0] == '2' || v[0] == '6'
	}
	for _, clause := range strings.Split(v, ",") {
		if i := strings.IndexAny(clause, "+="); i >= 0 && strings.Contains(clause[i:], "s") && !strings.Contains(clause[:i], "o") {
			return true
		}
	}
	return false
}

// systemProgram reports a program of the system's own directories: a
// shell, an interpreter or a tool set-user-ID there runs as root for
// anyone.
func systemProgram(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	for _, d := range []string{"/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/", "/usr/libexec/"} {
		if strings.HasPrefix(c, d) {
			return true
		}
	}
	return false
}
