package policy

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// finding is one rule firing on one place in a command.
type finding struct {
	rule     string
	detail   string // what matched, safe to log: no variable values
	text     string // the matched text as written (in the nested script for nested ones)
	pos      int    // byte offset in the top-level command
	hostOnly bool
	via      string   // nesting path, "" at top level
	hosts    []string // see hit.hosts
}

// Bounds on detector work. Past them the command is refused too-complex
// (fail closed) rather than judged partly; see budget.go.
const (
	maxNesting = 8       // sh -c / eval / heredoc scripts within scripts
	maxScripts = 1000    // scripts parsed for one command
	maxParsed  = 1 << 19 // bytes of nested scripts parsed for one command
)

// internalError is the detail of the finding a detector panic turns into.
const internalError = "internal detector error"

// detect parses cmd as /bin/sh reads it (ShellSh) and returns every
// finding; see detectIn.
func detect(cmd string) []finding { return detectIn(cmd, ShellSh, nil) }

// detectIn parses cmd as a program of shell sh (ShellSh or ShellBash) and
// returns every finding, sorted by position and without duplicates. It
// never panics: a parser failure, a too-deep nesting or an internal error
// yields an "unparsable" finding. seen, when not nil, is called with every
// command line the detector judges (tests compare them with what real
// shells run).
func detectIn(cmd string, sh Shell, seen func([]arg)) (out []finding) {
	return detectWith(cmd, sh, newEnv(), seen)
}

// detectWith is detectIn with the shell state the command starts in: the
// job's working directory and environment (see jobEnv).
func detectWith(cmd string, sh Shell, start *env, seen func([]arg)) (out []finding) {
	return detectBudget(cmd, sh, start, seen, defaultBudget())
}

// detectBudget is detectWith within budget b (see budget.go).
func detectBudget(cmd string, sh Shell, start *env, seen func([]arg), b budget) (out []finding) {
	if b.lockThread {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	d := &detector{seen: seen, meter: newMeter(b)}
	defer func() {
		if r := recover(); r != nil {
			d.findings = append(d.findings, recovered(r, cmd))
			out = d.result()
		}
	}()
	d.script(&frame{src: cmd, shell: sh}, start, 0, stream{})
	return d.result()
}

// detector collects the findings of one command.
type detector struct {
	// captures numbers the captures of creates' output (created.capture)
	captures int
	findings []finding
	scripts  int // scripts parsed so far
	parsed   int // bytes of nested scripts parsed so far
	calls    int // function bodies walked again at a call
	// secondary > 0 while a script is walked in the reading of the other
	// dialect than its shell's: its fail-closed findings are dropped.
	secondary int
	seen      func([]arg)
	meter     meter           // the work done against the budget
	limits    map[string]bool // bounds reported (too-complex), by detail
	// decls are the functions whose body's findings at the definition
	// are set aside until the script is walked (see settleDecls).
	decls []*declFindings
	// sourcedUnread: the script sources a file it did not write, whose
	// calls of its functions the walk cannot see.
	sourcedUnread bool
}

func (d *detector) result() []finding {
	d.settleDecls()
	slices.SortStableFunc(d.findings, func(a, b finding) int { return cmp.Compare(a.pos, b.pos) })
	return slices.CompactFunc(d.findings, func(a, b finding) bool {
		return a.rule == b.rule && a.pos == b.pos && a.text == b.text
	})
}

// frame is one script being walked: the top-level command or a script nested
// in it (sh -c, eval, a heredoc fed to a shell, a string in python -c code).
type frame struct {
	src    string
	shell  Shell  // the dialect the script is read in: ShellSh or ShellBash
	via    string // nesting path, e.g. "sh -c > eval"; "" at top level
	parent *frame
	base   int // offset in parent.src where src begins verbatim, or -1
	anchor int // offset in parent.src of the word that holds src
	depth  int
}

// child returns the frame of a script nested in f, read in f's dialect.
func (f *frame) child(src, via string, base, anchor int) *frame {
	if f.via != "" {
		via = f.via + " > " + via
	}
	return &frame{src: src, shell: f.shell, via: via, parent: f, base: base, anchor: anchor, depth: f.depth + 1}
}

// childIn returns the frame of a script nested in f that shell sh runs.
func (f *frame) childIn(sh Shell, src, via string, base, anchor int) *frame {
	c := f.child(src, via, base, anchor)
	c.shell = sh
	return c
}

// root is the job's whole script, the frame every nested one is part of.
func (f *frame) root() *frame {
	for f.parent != nil {
		f = f.parent
	}
	return f
}

// outer maps an offset in f.src to the top-level command: exactly through
// verbatim nesting, else to the start of the outermost word that holds it.
func (f *frame) outer(off int) int {
	for ; f.parent != nil; f = f.parent {
		if f.base >= 0 {
			off += f.base
		} else {
			off = f.anchor
		}
	}
	return off
}

// viaOf joins a frame's nesting path with a command-level one ("xargs").
func (f *frame) viaOf(via string) string {
	switch {
	case f.via == "":
		return via
	case via == "":
		return f.via
	}
	return f.via + " > " + via
}

// script parses f.src and walks it with the variables of e; in is the
// standard input its commands share.
func (d *detector) script(f *frame, e *env, cond int, in stream) {
	d.charge(envSize(e), envBytes*envSize(e)) // the copy of e the caller made
	if f.depth > maxNesting {
		d.limit(f, fmt.Sprintf("scripts nested more than %d levels", maxNesting), span{0, len(f.src)})
		return
	}
	d.scripts++
	if f.parent != nil {
		d.parsed += len(f.src)
	}
	switch {
	case d.scripts > maxScripts:
		d.stop(fmt.Sprintf("more than %d nested scripts", maxScripts))
	case d.parsed > maxParsed:
		d.stop(fmt.Sprintf("more than %d KiB of nested scripts", maxParsed>>10))
	}
	d.charge(1, parseBytes*len(f.src))
	clock := d.clock
	if len(f.src) < parseClockMin {
		// a short script parses in microseconds: reading the thread's CPU
		// clock (a system call) would cost more than the parse; the steps
		// it leads to read the clock as they go
		clock = func() {}
	}
	trees, issue, err := readScript(f.src, f.shell, clock)
	if errors.Is(err, errTooDeep) {
		d.limit(f, describeParseError(err), errorLine(f.src, err))
		return
	}
	if err != nil {
		d.add(f, ruleUnparsable, describeParseError(err), "", errorLine(f.src, err))
		return
	}
	// The first tree is the script's own reading, walked with e; another
	// one gets a copy, so that what only it assigns or defines stays in
	// it, and the same budget of function calls. It is a second opinion:
	// what it runs counts, but not that it cannot resolve something (a
	// bash script's `(( $# > 0 ))` runs a program named $# in the POSIX
	// reading), since its own dialect's reading is what the shell runs.
	envs := []*env{e}
	for range trees[1:] {
		envs = append(envs, e.clone())
	}
	calls, spent := d.calls, d.calls
	for i, t := range trees {
		d.calls = calls
		if i > 0 {
			d.secondary++
		}
		w := &walker{d: d, f: f, tree: t.shell, env: envs[i], cond: cond, argsCond: cond}
		w.stmts(t.file.Stmts, in)
		if i > 0 {
			d.secondary--
		}
		spent = max(spent, d.calls)
	}
	d.calls = spent
	if issue != nil { // after the walk: at one position, a rule that names the harm comes first
		d.add(f, ruleShellDialect, issue.detail, "", issue.sp)
	}
}

// span is a byte range in a frame's source.
type span struct{ start, end int }

// add records a finding at sp in frame f; via is the command-level nesting
// (xargs, find -exec) on top of the frame's.
func (d *detector) add(f *frame, ruleID, detail, via string, sp span) {
	r, _ := lookupRule(ruleID)
	d.addHost(f, ruleID, detail, via, sp, r.hostOnly)
}

// addHit is add for a matcher's hit, keeping the hosts it names.
func (d *detector) addHit(f *frame, x hit, via string, sp span) {
	n := len(d.findings)
	d.add(f, x.rule, x.detail, via, sp)
	if len(d.findings) > n {
		d.findings[n].hosts = x.hosts
	}
}

func (d *detector) addHost(f *frame, ruleID, detail, via string, sp span, hostOnly bool) {
	// A bound reached in the other reading still leaves it judged in part.
	if r, _ := lookupRule(ruleID); d.secondary > 0 && r.fixed && ruleID != ruleTooComplex {
		return
	}
	d.charge(1, findingBytes+len(detail)+len(f.via)+len(via))
	sp.start = max(0, min(sp.start, len(f.src)))
	sp.end = max(sp.start, min(sp.end, len(f.src)))
	via = f.viaOf(via)
	if via != "" {
		detail = via + ": " + detail
	}
	d.findings = append(d.findings, finding{
		rule: ruleID, detail: detail, text: f.src[sp.start:sp.end],
		pos: f.outer(sp.start), hostOnly: hostOnly, via: via,
	})
}

// maxParseDepth bounds the nesting of brackets and compound commands in a
// script handed to the parser, whose recursion would otherwise exhaust the
// stack on hostile input (a fatal error, not a panic).
const maxParseDepth = 1000

// errTooDeep is the parse error of a script nested past maxParseDepth.
var errTooDeep = errors.New("nested too deeply to parse")

// parse parses src as bash, for splitting words the way a shell would
// (env -S).
func parse(src string) (*syntax.File, error) { return parseAs(src, syntax.LangBash) }

// nestingDepth over-approximates how deep src nests: brackets, and the
// keywords that open (if, while, until, for, case, select) and close (fi,
// done, esac) compound commands, quotes ignored.
func nestingDepth(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' || c == '}' || c == ']':
			depth = max(depth-1, 0)
		case c >= 'a' && c <= 'z' && (i == 0 || !isIdentByte(src[i-1])):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			switch src[i:j] {
			case "if", "while", "until", "for", "case", "select":
				depth++
			case "fi", "done", "esac":
				depth = max(depth-1, 0)
			}
			i = j - 1
		}
		deepest = max(deepest, depth)
	}
	return deepest
}

// errorLine returns the line of src where parsing failed.
func errorLine(src string, err error) span {
	var pe syntax.ParseError
	off := 0
	if errors.As(err, &pe) {
		off = min(int(pe.Pos.Offset()), len(src))
	}
	start := strings.LastIndexByte(src[:off], '\n') + 1
	end := strings.IndexByte(src[start:], '\n')
	if end < 0 {
		return span{start, len(src)}
	}
	return span{start, start + end}
}

// describeParseError names where parsing failed without echoing the
// command text, which may hold secrets.
func describeParseError(err error) string {
	if errors.Is(err, errTooDeep) {
		return fmt.Sprintf("nested more than %d levels: too deep to parse", maxParseDepth)
	}
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("does not parse as shell (error at %s)", pe.Pos)
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return fmt.Sprintf("does not parse as %s (error at %s)", le.LangUsed, le.Pos)
	}
	return "does not parse as shell"
}

// quoteDetail quotes a word for a Decision reason: $HOME shown unexpanded,
// long words cut.
func quoteDetail(s string) string {
	s = strings.ReplaceAll(s, homeMarker, "$HOME")
	const maxLen = 64
	if len(s) > maxLen {
		s = s[:maxLen] + "..."
	}
	return fmt.Sprintf("%q", s)
}
