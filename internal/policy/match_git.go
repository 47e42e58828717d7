package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// gitGlobalSpec lists git's global options that take a separate value.
var gitGlobalSpec = optSpec{short: "Cc", long: []string{"git-dir", "work-tree", "namespace", "exec-path", "config-env", "super-prefix", "list-cmds", "attr-source"}}

// Long options of the git subcommands matchGit reads. git takes any
// unambiguous prefix of a long option (--force-w is --force-with-lease);
// see longMeanings.
var (
	gitPushLong = []string{"verbose", "quiet", "repo", "all", "branches", "mirror", "delete", "tags", "dry-run",
		"porcelain", "force", "force-with-lease", "no-force-with-lease", "force-if-includes", "no-force-if-includes",
		"recurse-submodules", "no-recurse-submodules", "thin", "no-thin", "receive-pack", "exec", "set-upstream",
		"progress", "prune", "no-verify", "verify", "follow-tags", "no-follow-tags", "signed", "no-signed",
		"atomic", "no-atomic", "push-option", "ipv4", "ipv6"}
	gitResetLong = []string{"quiet", "no-quiet", "refresh", "no-refresh", "mixed", "soft", "hard", "merge", "keep",
		"recurse-submodules", "no-recurse-submodules", "patch", "intent-to-add", "pathspec-from-file", "pathspec-file-nul"}
	gitCleanLong = []string{"quiet", "dry-run", "interactive", "force", "exclude"}
)

// optName is the name of a long option written NAME=VALUE.
func optName(long string) string {
	name, _, _ := strings.Cut(long, "=")
	return name
}

// matchGit judges git operations that destroy work or shared history.
//
// Decisions: --force-with-lease is flagged like --force (it still rewrites
// the remote branch); deleting remote branches (push --delete, push origin
// :branch) and --mirror/--prune are flagged; git clean is flagged whenever
// it is forced and not a dry run; checkout/restore of paths is not flagged.
// gitElsewhere is script text that can point git at another repository
// or work tree (core.worktree, GIT_WORK_TREE, --git-dir) or set variables
// unseen (. FILE, source FILE).
var gitElsewhere = regexp.MustCompile(`(?i)worktree|GIT_[A-Z_]*|git-dir|work-tree|includeif|include\.path|(^|[;&|(\n])\s*(\.|source)\s`)

// worktreeOnly are the git subcommands whose harm stays in the work tree
// and the local repository.
var worktreeOnly = map[string]bool{"reset": true, "clean": true, "checkout": true, "restore": true, "switch": true, "stash": true}

// scratchRepo reports a git call whose repository (the working directory,
// or -C DIR) is known to be, every value of it, a clone the same && chain
// made (git clone URL /tmp/x && cd /tmp/x && git reset --hard).
func scratchRepo(c *command) bool {
	if gitElsewhere.MatchString(c.frame) {
		return false // the script points git at another tree or sources what may
	}
	if _, ok := c.vars["GIT_DIR"]; ok {
		return false
	}
	if _, ok := c.vars["GIT_WORK_TREE"]; ok {
		return false
	}
	var dirs []string
	if !c.cwd.unknown {
		dirs = c.cwd.vals
	}
	cloned := func(d string) bool { // by git clone URL DIR, DIR absolute, earlier on the chain
		return slices.ContainsFunc(c.scratch, func(r created) bool {
			return r.prog == "git" && path.IsAbs(r.name) && path.Clean(r.name) == d
		})
	}
	for i, a := range c.args {
		if !a.lit || strings.HasPrefix(a.val, "--git-dir") || strings.HasPrefix(a.val, "--work-tree") {
			return false // a repository or work tree named elsewhere
		}
		if a.lit && a.val == "-C" && i+1 < len(c.args) {
			d := c.args[i+1]
			if !d.lit {
				return false
			}
			var joined []string
			for _, cwd := range dirs {
				joined = append(joined, path.Join(cwd, d.val))
			}
			if path.IsAbs(d.val) {
				joined = []string{d.val}
			}
			dirs = joined
		}
	}
	for _, d := range dirs {
		d = path.Clean(d)
		if !cloned(d) || len(c.links.follow(d+"/")) > 0 {
			return false // not the script's own clone, or one reached through a link the script made
		}
	}
	return len(dirs) > 0
}

func matchGit(c *command, h *hits) {
	rest, _ := skipOptions(c.args, gitGlobalSpec)
	if len(rest) == 0 || !rest[0].lit {
		return
	}
	sub, args := rest[0].val, rest[1:]
	if worktreeOnly[sub] && scratchRepo(c) {
		return // a clone in a temporary directory: its work tree is the job's own
	}
	switch sub {
	case "push":
		if detail, ok := destructivePush(args); ok {
			h.add(ruleGitDestructive, "git push "+detail)
		} else if remote, ok := pushesEverything(args); ok {
			h.add(ruleDataSend, "git push --all to "+quoteDetail(remote)+", a remote other than origin or upstream: every branch of the repository leaves")
		}
	case "reset":
		for _, a := range args {
			if !a.lit || a.val == "--" {
				break
			}
			if long, ok := strings.CutPrefix(a.val, "--"); ok && slices.Contains(longMeanings(optName(long), gitResetLong), "hard") {
				h.add(ruleGitDestructive, "git reset --hard")
				return
			}
		}
	case "read-tree":
		// read-tree -u --reset rewrites the work tree from a tree (-m refuses to),
		// discarding uncommitted changes as reset --hard does
		_, opts := operands(args, optSpec{long: []string{"prefix", "exclude-per-directory", "index-output"}})
		if hasOpt(opts, "u") && hasOpt(opts, "reset") && !hasOpt(opts, "n", "dry-run") {
			h.add(ruleGitDestructive, "git read-tree -u --reset")
		}
	case "submodule":
		// submodule update --force throws away the submodules' local changes
		if len(args) > 0 && args[0].lit && args[0].val == "update" {
			if _, opts := operands(args[1:], optSpec{long: []string{"reference", "depth", "jobs", "filter"}}); hasOpt(opts, "f", "force") {
				h.add(ruleGitDestructive, "git submodule update --force")
			}
		}
	case "clean":
		paths, opts := operands(args, optSpec{short: "e", long: []string{"exclude"}})
		if len(paths) > 0 && !slices.ContainsFunc(paths, func(p arg) bool { return !p.lit || !buildOutput(p.val) }) {
			return // git clean -fdx -- node_modules/ dist/: only what a build makes
		}
		force, dry := false, false
		for _, o := range opts {
			force = force || optionIs(o, "f", "force", gitCleanLong)
			dry = dry || optionIs(o, "n", "dry-run", gitCleanLong) || optionIs(o, "i", "interactive", gitCleanLong)
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
		if optionIs(o, "n", "dry-run", gitPushLong) {
			return "", false // reports what it would do
		}
	}
	for _, o := range opts {
		switch {
		case optionIs(o, "f", "force", gitPushLong):
			return "--force", true
		case optionIs(o, "", "force-with-lease", gitPushLong):
			return "--force-with-lease", true
		case optionIs(o, "d", "delete", gitPushLong):
			return "--delete", true
		case optionIs(o, "", "mirror", gitPushLong):
			return "--mirror", true
		case optionIs(o, "", "prune", gitPushLong):
			return "--prune", true
		}
	}
	if len(ops) > 1 {
		for _, ref := range ops[1:] {
			v := ref.val
			if !ref.lit {
				v = strings.TrimLeft(ref.src, `"'`) // its written start: ":refs/tags/$T", +"$B"
				if !strings.HasPrefix(v, ":") && !strings.HasPrefix(v, "+") {
					continue
				}
			}
			switch {
			case strings.HasPrefix(v, "+"):
				return "+refspec (force)", true
			case strings.HasPrefix(v, ":") && len(v) > 1:
				return ":branch (delete)", true
			}
		}
	}
	return "", false
}

// pushesEverything reports a git push of every branch (--all, --branches)
// to a named remote other than origin and upstream, or to a URL: the whole
// repository copied to a place the project does not name as its own.
func pushesEverything(args []arg) (string, bool) {
	ops, opts := operands(args, optSpec{short: "o", long: []string{"repo", "receive-pack", "exec", "push-option", "signed"}})
	all := false
	for _, o := range opts {
		if optionIs(o, "n", "dry-run", gitPushLong) {
			return "", false
		}
		all = all || optionIs(o, "", "all", gitPushLong) || optionIs(o, "", "branches", gitPushLong)
	}
	if !all || len(ops) == 0 || !ops[0].lit {
		return "", false
	}
	switch ops[0].val {
	case "origin", "upstream":
		return "", false
	}
	return ops[0].val, true
}

// buildOutputDirs are the directories a build or an install makes and
// makes again: deleting them loses nothing.
var buildOutputDirs = []string{"node_modules", "dist", "build", "target", "out", "bin", "obj", ".next", ".nuxt", ".cache", "coverage",
	"__pycache__", ".pytest_cache", ".mypy_cache", ".tox", ".venv", "venv", ".gradle", ".terraform", "tmp", ".parcel-cache", ".turbo"}

// buildOutput reports a relative path (a pathspec) in the work tree that
// is a build's output directory or inside one.
func buildOutput(p string) bool {
	p = strings.TrimPrefix(p, "./")
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "-") || strings.ContainsAny(p, "*?[") || slices.Contains(strings.Split(p, "/"), "..") {
		return false
	}
	first, _, _ := strings.Cut(p, "/")
	return slices.Contains(buildOutputDirs, first)
}
