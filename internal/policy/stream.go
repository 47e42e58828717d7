package policy

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// stream is what the detector knows about data flowing into a command's
// standard input or out of a command substitution: its text when that is a
// literal (echo, printf, a heredoc), or where it comes from.
type stream struct {
	present bool   // something is connected (a pipe, a heredoc, a redirection)
	known   bool   // text is the exact content
	text    string // the content, when known
	alt     string // a second reading of the content (echo with and without -e), or ""
	shape   string // for unknown content built from a literal template (a jq filter), the template: text rules may read it
	taint   taint  // where unknown content comes from (download, decoder, run time)
	file    bool   // the content of files the detector does not read (cat FILE, < FILE)
	paths   []arg  // roots whose whole trees are listed on the stream (find ROOT, ls ROOT)
	cwd     bool   // unknown content that is the working directory's path (pwd, git rev-parse --show-toplevel)
	via     string // how it reaches the command: "pipe", "heredoc", "here-string"
	start   int    // offset in the frame's source where the producing pipeline starts, or -1
	base    int    // offset where text appears verbatim in the frame's source, or -1
	anchor  int    // offset of the word or command that holds text
	f       *frame // the frame start, base and anchor refer to; nil for the current one
}

// generated is the output of a program the detector cannot predict.
func generated() stream {
	return stream{present: true, taint: taintUnknown, start: -1, base: -1}
}

// literal is a stream whose content is the literal text a.
func literal(text string, a arg, via string) stream {
	return stream{present: true, known: true, text: text, via: via, start: -1, base: a.exact, anchor: a.pos}
}

// merge combines the outputs of commands that write to one stream.
func (s stream) merge(o stream) stream {
	switch {
	case !o.present:
		return s
	case !s.present:
		return o
	}
	out := stream{present: true, taint: s.taint | o.taint, file: s.file || o.file, start: s.start, base: -1, anchor: s.anchor, via: s.via, f: s.f}
	out.paths = append(append([]arg(nil), s.paths...), o.paths...)
	out.shape = strings.TrimSpace(s.shape + "\n" + o.shape)
	if s.known && o.known {
		out.known, out.text = true, s.text+o.text
	} else if !out.file || out.taint != 0 {
		out.taint |= taintUnknown
	}
	return out
}

// code returns the stream as code to run.
func (s stream) code() code {
	return code{text: s.text, alt: s.alt, known: s.known, taint: s.taint, file: s.file, base: s.base, anchor: s.anchor, f: s.f}
}

// output returns what the statements of a $(...) or <(...) write, without
// judging them (subst does that).
func (w *walker) output(list []*syntax.Stmt) stream {
	if w.out++; w.out > maxOutDepth {
		w.out--
		if len(list) > 0 {
			w.limit(fmt.Sprintf("$(...) outputs nested more than %d levels", maxOutDepth), stmtSpan(list[0]))
		}
		return generated()
	}
	w.d.charge(1, 0)
	defer func() { w.out-- }()
	if len(list) != 1 {
		out := stream{present: true, known: len(list) == 0, start: -1, base: -1}
		for _, s := range list {
			out = out.merge(w.outputOf(s, stream{}))
		}
		return out
	}
	return w.outputOf(list[0], stream{})
}

func (w *walker) outputOf(s *syntax.Stmt, in stream) stream {
	in = w.inputRedirects(s, in)
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		lists := w.argListsOf(s)
		if len(lists) == 0 {
			return stream{present: true, known: true, start: -1, base: -1}
		}
		var out stream
		for i, words := range lists {
			cmd, _, st := unwrap(words)
			o := generated()
			if len(words) > 0 && w.shadowed(words[0]) {
				st = runsNothing // a function or alias of that name prints what it likes
			}
			if st == runsProgram {
				// the frame is the job's whole script: what it configured anywhere
				cmd.stdin, cmd.cwd, cmd.vars, cmd.frame, cmd.sp = in, w.env.cwd, w.env.vars, w.f.root().src, stmtSpan(s)
				o = produce(&cmd)
				if printsSecret(&cmd) {
					o.taint |= taintStored // x=$(vault kv get -field=password secret/db): x holds it
				}
			}
			if dumpsEnvironment(words) {
				o.taint |= taintSecret
			}
			if printsToken(words) {
				o.taint |= taintToken
			}
			if i == 0 {
				out = o
			} else {
				out = out.merge(o)
			}
		}
		return out
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			for _, st := range flattenPipe(s, nil) {
				in = w.outputOf(st, in)
			}
			return in
		}
		return w.outputOf(c.X, in).merge(w.outputOf(c.Y, stream{}))
	case *syntax.Subshell:
		return w.outputList(c.Stmts, in)
	case *syntax.Block:
		return w.outputList(c.Stmts, in)
	}
	return generated()
}

func (w *walker) outputList(list []*syntax.Stmt, in stream) stream {
	var out stream
	for _, s := range list {
		out = out.merge(w.outputOf(s, in))
	}
	return out
}

// inputRedirects returns the standard input a statement's redirections
// give it (heredoc, here-string, < FILE, < <(...)), else in.
func (w *walker) inputRedirects(s *syntax.Stmt, in stream) stream {
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			in = w.heredoc(r)
		case syntax.WordHdoc:
			in = stream{}
			for i, a := range w.value(r.Word) {
				s := literal(a.val, a, "here-string")
				if !a.lit {
					s = stream{present: true, taint: a.taint | taintUnknown, start: -1, base: -1, anchor: a.pos, via: "here-string"}
				}
				if i == 0 {
					in = s
				} else {
					in = in.merge(s)
				}
			}
		case syntax.RdrIn:
			a := w.value(r.Word)[0]
			switch {
			case a.taint&taintProc != 0:
				in = stream{present: true, taint: a.taint &^ taintProc, start: -1, base: -1, anchor: a.pos, via: "<(...)"}
			case a.lit && (a.val == "/dev/null"):
				in = stream{present: true, known: true, start: -1, base: -1}
			default:
				if f, ok := w.writtenScript(a); ok {
					// a file the script wrote: what it reads is what was written
					// (printf CMD > /tmp/s; sh < /tmp/s)
					in = f.s
					in.present = true
					continue
				}
				in = stream{present: true, file: true, start: -1, base: -1, anchor: a.pos}
				if a.lit && isProjectEnvFile(a.val) {
					in.taint |= taintEnvFile
				}
				if a.lit && procEnviron.MatchString(a.val) {
					in.taint |= taintSecret // tr '\0' '\n' < /proc/1/environ: a process's environment
				}
			}
		}
	}
	return in
}

// heredoc returns the body of a here-document as a stream. An unquoted
// body is expanded by the outer shell, so backslashes before $ ` \ are
// removed; its $(...) commands are judged where they appear.
func (w *walker) heredoc(r *syntax.Redirect) stream {
	if r.Hdoc == nil || len(r.Hdoc.Parts) == 0 {
		return stream{present: true, known: true, start: -1, base: -1}
	}
	start := int(r.Hdoc.Pos().Offset())
	end := int(r.Hdoc.End().Offset())
	src := w.f.src
	if start < 0 || end > len(src) || start > end {
		return generated()
	}
	raw := src[start:end]
	raw = raw[:strings.LastIndexByte(raw, '\n')+1] // drop the delimiter line
	out := stream{present: true, known: true, text: raw, start: -1, base: start, anchor: start, via: "heredoc"}
	if !quotedDelimiter(r.Word) && strings.Contains(raw, `\`) {
		out.text, out.base = unescapeHeredoc(raw), -1
	}
	return out
}

// quotedDelimiter reports whether a heredoc delimiter is quoted (<<'EOF',
// <<"EOF", <<\EOF), which leaves the body unexpanded.
func quotedDelimiter(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); !ok || strings.Contains(lit.Value, `\`) {
			return true
		}
	}
	return false
}

// unescapeHeredoc removes the backslashes an unquoted heredoc body drops.
func unescapeHeredoc(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// shadowed reports a command word that names a function the script
// defined, or any word once the script defined an alias: what it prints
// is not what the program of that name would.
func (w *walker) shadowed(word arg) bool {
	if w.env.aliased {
		return true
	}
	_, fn := w.env.funcs[word.val]
	return fn
}
