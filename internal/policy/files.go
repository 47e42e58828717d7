package policy

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// written is what the script wrote to a file earlier.
type written struct {
	s stream // its content; s.f is the frame its offsets refer to
}

// fileKey names a file written or run by the script.
func fileKey(p string) string { return path.Clean(p) }

// recordWrite remembers that the script wrote s to the file a names, so
// that running the file later (sh x.sh, ./x.sh, source x.sh) is judged by
// its content: curl -o x.sh URL && sh x.sh is pipe-to-shell.
func (w *walker) recordWrite(a arg, s stream, appendTo bool) {
	if !a.lit || a.val == "" || strings.HasPrefix(a.val, "/dev/") {
		return
	}
	w.scriptSink(a, s)
	if w.env.files == nil {
		w.env.files = make(map[string]written)
	}
	k := fileKey(a.val)
	if old, ok := w.env.files[k]; ok && (appendTo || w.cond > 0) {
		s = old.s.merge(s)
	}
	s.start = -1
	if s.f == nil {
		s.f = w.f
	}
	w.env.files[k] = written{s: s}
}

// recordRedirects records the files a statement's output redirections write.
func (w *walker) recordRedirects(s *syntax.Stmt, out stream) {
	for _, r := range s.Redirs {
		if r.N != nil && r.N.Value != "1" {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll:
			for _, a := range w.value(r.Word) {
				w.recordWrite(a, out, false)
			}
		case syntax.AppOut, syntax.AppAll:
			for _, a := range w.value(r.Word) {
				w.recordWrite(a, out, true)
				if out.known && plainStartupText(out.text) && (out.alt == "" || plainStartupText(out.alt)) {
					continue
				}
				c := command{cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links}
				for _, t := range c.targets(a) {
					if isShellStartup(t.path) { // curl URL >> ~/.bashrc, alias ls=rm: changes what every login runs
						w.d.add(w.f, ruleWriteSystem, "redirection to "+t.show, "", stmtSpan(s))
					}
				}
			}
		}
	}
}

// recordCommandWrites records files commands write with known content:
// tee FILE, curl -o FILE, wget [-O FILE] URL, cp and mv of a known file.
func (w *walker) recordCommandWrites(c *command) {
	switch c.name {
	case "tee":
		ops, opts := operands(c.args, optSpec{long: []string{"output-error"}})
		for _, o := range ops {
			w.recordWrite(o, c.stdin, hasOpt(opts, "a", "append"))
		}
	case "curl", "wget":
		dl := generated()
		dl.taint |= taintDownload
		for _, p := range downloadOutputs(c) {
			w.recordWrite(p, dl, false)
		}
	case "cp", "mv":
		ops, _ := operands(c.args, optSpec{short: "tS", long: []string{"target-directory", "suffix"}})
		if len(ops) == 2 && ops[0].lit {
			if src, ok := w.env.files[fileKey(ops[0].val)]; ok {
				w.recordWrite(ops[1], src.s, false)
			}
		}
	}
}

// downloadOutputs returns the files curl or wget save to: -o/-O FILE, and
// for wget without -O (and curl -O) the last component of each URL.
func downloadOutputs(c *command) []arg {
	outs := outputOptions(c)
	remoteName := c.name == "wget"
	for _, a := range c.args {
		if c.name == "curl" && a.lit && (a.val == "-O" || a.val == "--remote-name" || strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.HasSuffix(a.val, "O")) {
			remoteName = true
		}
	}
	if len(outs) > 0 || !remoteName {
		return outs
	}
	for _, a := range c.args {
		if a.lit && strings.Contains(a.val, "://") {
			u := a.val
			if i := strings.IndexAny(u, "?#"); i >= 0 {
				u = u[:i]
			}
			if base := path.Base(u); base != "" && base != "." && base != "/" && !strings.Contains(base, ":") {
				outs = append(outs, arg{val: base, lit: true, pos: a.pos, end: a.end, exact: -1})
			}
		}
	}
	return outs
}

// writtenScript returns what the script wrote to the file a names.
func (w *walker) writtenScript(a arg) (written, bool) {
	if !a.lit {
		return written{}, false
	}
	f, ok := w.env.files[fileKey(a.val)]
	return f, ok
}
