package policy

import "strings"

// matchChmod judges chmod, chown, chgrp and setfacl on /, /* or a system
// directory (home directories of users are left out: chown -R me ~ is a
// routine fix).
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
	if c.name != "setfacl" && !hasOpt(opts, "reference") && len(ops) > 0 {
		ops = ops[1:] // the mode or owner
	}
	recursive := c.tree || hasOpt(opts, "R", "recursive")
	for _, o := range ops {
		if recursive && c.unresolvedRoot(o) {
			h.add(ruleChmodSystem, c.name+" -R on "+unresolvedShow(o))
		}
		for _, t := range c.targets(o) {
			if c.name != "setfacl" && isAccountFile(t.path) {
				h.add(ruleChmodSystem, c.name+" on "+t.show)
				continue
			}
			if protectedRoot(t.path, false) {
				detail := c.name + " on "
				if recursive {
					detail = c.name + " -R on "
				}
				h.add(ruleChmodSystem, detail+t.show)
			}
		}
	}
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
