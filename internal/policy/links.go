package policy

import (
	"path"
	"slices"
	"strings"
)

// links maps a symbolic link the command created (ln -s), by linkKey, to
// the targets it may point at: absolute, home-relative, or relative to the
// working directory when the link's own directory is not known. Every link
// adds its target to the ones the path may already have (a link made in a
// branch may not exist); both the path itself and what it points at are
// judged.
type links map[string][]string

// Bounds on link tracking. Past maxLinks new links are not recorded.
const (
	maxLinks    = 64
	maxLinkHops = 8 // links followed through links
)

// lnLong are ln's long options, for the unique prefixes getopt_long takes.
var lnLong = []string{"backup", "directory", "force", "interactive", "logical", "no-dereference", "physical",
	"relative", "symbolic", "suffix", "target-directory", "no-target-directory", "verbose", "help", "version"}

// linkKey is the form a link and the paths looked up against it share:
// canonical when absolute (see canonicalPath), "~/x" for home forms, else
// cleaned.
func linkKey(p string) string {
	if c, ok := cleanAbs(p); ok {
		return c
	}
	return path.Clean(p)
}

// paths returns the paths operand a may name (see namedPaths), with what
// they alias: ~ as the HOME the job or the script set, /proc/self/cwd as
// the working directory, and every path through a symbolic link the script
// created, followed the way the kernel follows it: a link is followed when
// more of the path comes after it ("x/", "x/etc"), not when the path ends
// at the link, which rm, mv and ln act on.
func (c *command) paths(a arg) []string {
	out := c.namedPaths(a)
	if len(out) == 0 {
		return out
	}
	v := a.val
	if v == "~" || strings.HasPrefix(v, "~/") {
		for _, h := range c.home.vals {
			if strings.HasPrefix(h, "/") {
				out = appendNew(out, h+v[1:])
			}
		}
	}
	if rest, ok := procCwd(canonicalPathKeepSlash(v)); ok {
		for _, dir := range c.cwd.vals {
			out = appendNew(out, joinPath(dir, strings.TrimPrefix(rest, "/")))
		}
	}
	if len(c.links) == 0 {
		return out
	}
	queue := slices.Clone(out)
	for hop := 0; hop < maxLinkHops && len(queue) > 0; hop++ {
		var next []string
		for _, p := range queue {
			for _, r := range c.links.follow(p) {
				if !slices.Contains(out, r) {
					out, next = append(out, r), append(next, r)
				}
			}
		}
		queue = next
	}
	return out
}

// canonicalPathKeepSlash canonicalises an absolute path and keeps a
// trailing slash; other paths are returned as they are.
func canonicalPathKeepSlash(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	c := canonicalPath(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// follow returns p with each leading part that names a known link, and is
// followed by a "/", replaced by that link's targets.
func (l links) follow(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		for _, t := range l[linkKey(p[:i])] {
			out = append(out, strings.TrimSuffix(t, "/")+p[i:])
		}
	}
	return out
}

// recordLink remembers the symbolic links ln -s creates: ln -s TARGET
// LINK, ln -s TARGET (in the working directory), ln -s TARGET... DIR and
// ln -s -t DIR TARGET.... LINK naming an existing directory puts the link
// inside it; both readings are recorded unless -T says which.
func (w *walker) recordLink(c *command) {
	if c.name != "ln" {
		return
	}
	ops, opts := operands(c.args, optSpec{short: "tS", long: []string{"target-directory", "suffix"}})
	var symbolic, relative, noDir bool
	var dirs []arg
	for _, o := range opts {
		switch {
		case optionIs(o, "s", "symbolic", lnLong):
			symbolic = true
		case optionIs(o, "r", "relative", lnLong):
			relative = true
		case optionIs(o, "T", "no-target-directory", lnLong):
			noDir = true
		case optionIs(o, "t", "target-directory", lnLong):
			dirs = append(dirs, o.value)
		}
	}
	if !symbolic || len(ops) == 0 {
		return
	}
	inDir := func(dir, target arg) arg {
		return arg{val: strings.TrimSuffix(dir.val, "/") + "/" + path.Base(target.val), lit: dir.lit && target.lit}
	}
	type pair struct{ target, link arg }
	var pairs []pair
	switch {
	case len(dirs) > 0:
		for _, d := range dirs {
			for _, t := range ops {
				pairs = append(pairs, pair{t, inDir(d, t)})
			}
		}
	case len(ops) == 1:
		pairs = append(pairs, pair{ops[0], arg{val: path.Base(ops[0].val), lit: ops[0].lit}})
	case len(ops) == 2:
		pairs = append(pairs, pair{ops[0], ops[1]})
		if !noDir {
			pairs = append(pairs, pair{ops[0], inDir(ops[1], ops[0])})
		}
	default:
		for _, t := range ops[:len(ops)-1] {
			pairs = append(pairs, pair{t, inDir(ops[len(ops)-1], t)})
		}
	}
	for _, p := range pairs {
		if !p.target.lit || !p.link.lit || p.target.val == "" {
			continue
		}
		for _, l := range c.namedPaths(p.link) {
			w.addLink(linkKey(l), c.linkTargets(p.target, l, relative))
		}
	}
}

// linkTargets returns where a link at l pointing at target leads: target
// itself when absolute; with -r, target as seen from the working
// directory; else target relative to the link's directory.
func (c *command) linkTargets(target arg, l string, relative bool) []string {
	if isAbsolute(target.val) {
		return []string{target.val}
	}
	if relative {
		var out []string
		for _, p := range c.namedPaths(target) {
			if isAbsolute(p) {
				out = append(out, p)
			}
		}
		return out
	}
	return []string{path.Join(path.Dir(l), target.val)}
}

// addLink records that the link key may point at targets. Links are file
// system state: one made in a subshell, a sh -c script or a branch stays
// for the rest of the command (the env's clones share the table).
func (w *walker) addLink(key string, targets []string) {
	l := w.env.links
	if l == nil || len(targets) == 0 || len(l) >= maxLinks && l[key] == nil {
		return
	}
	for _, t := range targets {
		if len(l[key]) < maxValues {
			l[key] = appendNew(l[key], t)
		}
	}
}

// appendNew appends s to list unless it holds it already.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
