package policy

// matchChmod judges chmod, chown, chgrp and setfacl on /, /* or a system
// directory (home directories of users are left out: chown -R me ~ is a
// routine fix).
func matchChmod(c *command, h *hits) {
	spec := optSpec{long: []string{"reference", "from"}}
	if c.name == "setfacl" {
		spec = optSpec{short: "mMxX", long: []string{"modify", "modify-file", "remove", "remove-file", "set", "set-file"}}
	}
	ops, opts := operands(c.args, spec)
	if c.name != "setfacl" && !hasOpt(opts, "reference") && len(ops) > 0 {
		ops = ops[1:] // the mode or owner
	}
	recursive := c.tree || hasOpt(opts, "R", "recursive")
	for _, o := range ops {
		for _, t := range c.targets(o) {
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
	h.add(rulePrivilege, c.name)
}
