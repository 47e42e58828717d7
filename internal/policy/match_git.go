package policy

import (
	"strings"
)

// gitGlobalSpec lists git's global options that take a separate value.
var gitGlobalSpec = optSpec{short: "Cc", long: []string{"git-dir", "work-tree", "namespace", "exec-path", "config-env", "super-prefix", "list-cmds", "attr-source"}}

// matchGit judges git operations that destroy work or shared history.
//
// Decisions: --force-with-lease is flagged like --force (it still rewrites
// the remote branch); deleting remote branches (push --delete, push origin
// :branch) and --mirror/--prune are flagged; git clean is flagged whenever
// it is forced and not a dry run; checkout/restore of paths is not flagged.
func matchGit(c *command, h *hits) {
	rest, _ := skipOptions(c.args, gitGlobalSpec)
	if len(rest) == 0 || !rest[0].lit {
		return
	}
	sub, args := rest[0].val, rest[1:]
	switch sub {
	case "push":
		if detail, ok := destructivePush(args); ok {
			h.add(ruleGitDestructive, "git push "+detail)
		}
	case "reset":
		for _, a := range args {
			if a.lit && a.val == "--hard" {
				h.add(ruleGitDestructive, "git reset --hard")
				return
			}
		}
	case "clean":
		_, opts := operands(args, optSpec{short: "e", long: []string{"exclude"}})
		force, dry := false, false
		for _, o := range opts {
			force = force || o.name == "f" || o.name == "force"
			dry = dry || o.name == "n" || o.name == "dry-run" || o.name == "i" || o.name == "interactive"
		}
		// -e takes a value, but "-fdx" must still count its x and f.
		for _, a := range args {
			if a.lit && len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' {
				force = force || strings.Contains(a.val, "f")
				dry = dry || strings.Contains(a.val, "n")
			}
		}
		if force && !dry {
			h.add(ruleGitDestructive, "git clean -f")
		}
	}
}

// destructivePush reports a git push that rewrites or deletes remote refs.
func destructivePush(args []arg) (string, bool) {
	ops, opts := operands(args, optSpec{short: "o", long: []string{"repo", "receive-pack", "exec", "push-option", "signed"}})
	for _, o := range opts {
		switch {
		case o.name == "f" || o.name == "force":
			return "--force", true
		case strings.HasPrefix(o.name, "force-with-lease"):
			return "--force-with-lease", true
		case o.name == "d" || o.name == "delete":
			return "--delete", true
		case o.name == "mirror" || o.name == "prune":
			return "--" + o.name, true
		}
	}
	if len(ops) > 1 {
		for _, ref := range ops[1:] {
			switch {
			case !ref.lit:
			case strings.HasPrefix(ref.val, "+"):
				return "+refspec (force)", true
			case strings.HasPrefix(ref.val, ":") && len(ref.val) > 1:
				return ":branch (delete)", true
			}
		}
	}
	return "", false
}
