package policy

import (
	"path"
	"strings"
)

// progs records the programs the script copied under another name: cp
// /bin/rm /tmp/x makes /tmp/x rm. "" stands for a copy of a program the
// detector cannot name (cp "$(command -v rm)" x). Like links, it is file
// system state shared by every clone of the env.
type progs map[string]string

// bareKey is the key a copy is also known by for a bare-name call through
// PATH (x -rf /usr after PATH=~/bin:$PATH).
func bareKey(name string) string { return "\x00bare:" + name }

// recordProgramCopy remembers what cp, install, mv and hard ln copy to a
// new name: each destination (and the file named like the source inside
// it, when it may be a directory) runs the source's program.
func (w *walker) recordProgramCopy(c *command) {
	switch c.name {
	case "cp", "install", "mv", "ln":
	case "dd":
		// dd if=PROGRAM of=COPY: a copy like cp's
		var src, dst arg
		for _, a := range c.args {
			if v, ok := strings.CutPrefix(a.val, "if="); ok {
				src = a
				src.val = v
				src.src = strings.TrimPrefix(a.src, "if=")
			}
			if v, ok := strings.CutPrefix(a.val, "of="); ok && a.lit {
				dst = arg{val: v, lit: true, pos: a.pos, end: a.end, exact: -1}
			}
		}
		if w.env.progs == nil || dst.val == "" || src.val == "" && src.src == "" {
			return
		}
		name := ""
		if src.lit {
			name = path.Base(src.val)
		}
		for _, p := range c.namedPaths(dst) {
			w.addProg(p, name)
		}
		return
	default:
		return
	}
	if w.env.progs == nil {
		return
	}
	ops, opts := operands(c.args, optSpec{short: "tSmogeB", long: []string{"target-directory", "suffix", "mode", "owner", "group", "backup"}})
	var dests []arg
	for _, o := range opts {
		if o.name == "t" || o.name == "target-directory" {
			dests = append(dests, o.value)
		}
	}
	intoDir := len(dests) > 0 || len(ops) > 2
	if len(dests) == 0 {
		if len(ops) < 2 {
			return
		}
		dests, ops = ops[len(ops)-1:], ops[:len(ops)-1]
	}
	for _, src := range ops {
		name := ""
		if src.lit {
			name = path.Base(src.val)
		}
		for _, d := range dests {
			if !d.lit {
				continue
			}
			for _, p := range c.namedPaths(d) {
				if !intoDir {
					w.addProg(p, name)
				}
				if name != "" {
					w.addProg(joinPath(p, name), name)
				}
			}
		}
	}
}

func (w *walker) addProg(p, name string) {
	if len(w.env.progs) >= 2*maxLinks {
		return
	}
	w.env.progs[linkKey(p)] = name
	w.env.progs[bareKey(path.Base(p))] = name
}

// programAlias returns the program a command word runs when the script
// made it a copy of, or a symbolic link to, another one, and whether it
// did. An empty name is a copy of a program the detector cannot name.
func (w *walker) programAlias(c *command, word arg) (string, bool) {
	if !word.lit || len(w.env.progs) == 0 && len(c.links) == 0 {
		return "", false
	}
	if !strings.Contains(word.val, "/") {
		name, ok := w.env.progs[bareKey(word.val)]
		return name, ok && name != c.name
	}
	for i, p := range c.opened(word) {
		if name, ok := w.env.progs[linkKey(p)]; ok && name != c.name {
			return name, true
		}
		if base := path.Base(p); i > 0 && base != c.name && base != "." && base != "/" {
			return base, true // a symbolic link the script made
		}
	}
	return "", false
}
