package policy

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// A script is read in two dialects: POSIX sh (dash, busybox ash) and bash.
// Where they disagree, a payload can hide in the reading the detector does
// not judge: `true &>/dev/null rm -rf /usr` is one harmless command to bash
// and `true &` then `rm -rf /usr` to dash. readScript decides which trees
// the walker judges and whether the disagreement itself is a finding
// (shell-dialect, fail closed):
//
//   - The script does not parse in its own dialect but does in the other:
//     shell-dialect, naming the construct. The other tree is walked too, so
//     the Decision lists what it would run.
//   - Under sh, it parses as POSIX sh but not as bash: shell-dialect, since
//     /bin/sh may be bash (Fedora, RHEL) and would refuse or misread it.
//   - Both parse and the trees have the same structure (same statements,
//     commands, words, quoting and substitutions; export/local/readonly and
//     time normalized, as POSIX parses them as plain commands): one tree is
//     walked, in the script's own dialect. Brace expansion, the one
//     remaining difference in what such a tree runs, is judged both ways
//     under sh (see walker.fields).
//   - Both parse and the structures differ: both trees are walked and any
//     denial stands. Under sh the difference is also a shell-dialect
//     finding, so the command is refused even when both trees look
//     harmless: "sh" names several shells (dash, busybox ash, which has
//     some bash syntax, bash in POSIX mode), which may mix the two readings
//     into a third that neither tree shows. Under bash only bash runs the
//     script and mvdan.cc/sh reads it as bash does, so the bash tree is what
//     runs; judging the POSIX tree as well costs nothing but refusing a
//     command with a payload hidden from the bash reading, and `[[ ]]`,
//     `(( ))` and `$'…'` stay usable.
//
// Judging both trees and denying if either denies is the simpler rule and
// needs no list of constructs; the structure comparison only decides when
// the second walk is needed and, under sh, when to refuse outright.

// tree is one reading of a script.
type tree struct {
	file  *syntax.File
	shell Shell // the dialect it was read in: ShellSh (POSIX) or ShellBash
}

// dialectIssue is a shell-dialect finding in a script.
type dialectIssue struct {
	detail string
	sp     span
}

// readScript parses src as sh reads it and in the other dialect. It returns
// the trees to walk, the first being src's own reading when it parses, and
// the disagreement to report, if any. When src parses in neither dialect
// it returns the parse error of its own.
func readScript(src string, sh Shell, clock func()) ([]tree, *dialectIssue, error) {
	alt := sh.other()
	clock() // the first reading may start the clock (see newMeter)
	own, ownErr := parseAs(src, sh.lang())
	clock()
	other, otherErr := parseAs(src, alt.lang())
	clock()
	switch {
	case ownErr != nil && otherErr != nil:
		return nil, nil, ownErr
	case ownErr != nil:
		return []tree{{other, alt}}, parseIssue(src, sh, ownErr, other), nil
	case otherErr != nil:
		if sh == ShellSh {
			return []tree{{own, sh}}, &dialectIssue{
				detail: "parses as POSIX sh but not as bash, and /bin/sh may be bash (Fedora, RHEL)",
				sp:     errorLine(src, otherErr),
			}, nil
		}
		return []tree{{own, sh}}, nil, nil
	}
	ownTokens, otherTokens := structure(own, clock), structure(other, clock)
	at, same := firstDifference(ownTokens, otherTokens)
	if same {
		if sh == ShellSh {
			if c, ok := dupToFile(own); ok {
				return []tree{{own, sh}}, &dialectIssue{detail: c.detail, sp: c.sp}, nil
			}
		}
		return []tree{{own, sh}}, nil, nil
	}
	trees := []tree{{own, sh}, {other, alt}}
	if sh != ShellSh {
		return trees, nil, nil
	}
	bashTree := other
	if c, ok := firstBashConstruct(bashTree); ok {
		return trees, &dialectIssue{detail: c.detail, sp: c.sp}, nil
	}
	return trees, &dialectIssue{
		detail: fmt.Sprintf("POSIX sh and bash read this differently (from byte %d)", at),
		sp:     span{at, at},
	}, nil
}

// parseIssue describes a script that does not parse as sh reads it but
// does in the other dialect (otherFile).
func parseIssue(src string, sh Shell, err error, otherFile *syntax.File) *dialectIssue {
	if sh == ShellBash {
		return &dialectIssue{detail: "does not parse as bash but does as POSIX sh", sp: errorLine(src, err)}
	}
	if c, ok := firstBashConstruct(otherFile); ok {
		return &dialectIssue{detail: c.detail, sp: c.sp}
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return &dialectIssue{
			detail: fmt.Sprintf("%s: bash syntax that POSIX sh (dash) reads differently or not at all", le.Feature),
			sp:     errorLine(src, err),
		}
	}
	return &dialectIssue{detail: "parses as bash but not as POSIX sh (dash)", sp: errorLine(src, err)}
}

// parseAs parses src in one dialect. A new parser per call keeps detect
// safe for concurrent use.
func parseAs(src string, lang syntax.LangVariant) (*syntax.File, error) {
	if len(src) > maxParseDepth && nestingDepth(src) > maxParseDepth {
		return nil, errTooDeep
	}
	pool, _ := parsers.LoadOrStore(lang, &sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(lang)) }})
	p := pool.(*sync.Pool).Get().(*syntax.Parser)
	defer pool.(*sync.Pool).Put(p)
	return p.Parse(strings.NewReader(src), "")
}

// parsers pools a parser per dialect (syntax.LangVariant to *sync.Pool): a
// parser is a large value with a read buffer, and Parse starts it afresh
// (its node batches too, so a tree it returned is never written again).
var parsers sync.Map

// token is one node of a tree's structure, at its offset in the source, or
// at -1 when it stands for a node the other dialect has and this one does
// not (a normalized form).
type token struct {
	kind string
	off  int
}

// structure lists the nodes of a tree that decide what it runs: statements,
// commands and their operators, redirections, words and how they are quoted
// and substituted. Literal text is left out: in two trees with the same
// structure it is the same source text. export, local and readonly (which
// bash parses as declarations and POSIX as plain commands) and `time CMD`
// (a keyword in bash, a program in POSIX sh) are listed as POSIX parses
// them, so that they do not count as a disagreement.
// clock is called every clockEvery nodes (the walk stops past the deadline).
func structure(f *syntax.File, clock func()) []token {
	var out []token
	nodes := 0
	var visit func(syntax.Node) bool
	// binary lists a tree of binary commands (a | b | c, a && b || c)
	// with a stack of its own instead of recursion: a 128 KiB chain nests
	// tens of thousands deep, and walking it recursively spent most of a
	// decision growing and scanning the goroutine's stack. A statement
	// whose command is itself binary is listed with its redirections, then
	// its command, in the same order for both dialects.
	binary := func(root *syntax.BinaryCmd) {
		out = append(out, token{kindOf(root), offset(root)})
		stack := []*syntax.Stmt{root.Y, root.X}
		for len(stack) > 0 {
			st := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if nodes++; nodes%clockEvery == 0 {
				clock()
			}
			b, ok := st.Cmd.(*syntax.BinaryCmd)
			if !ok || len(st.Comments) > 0 {
				syntax.Walk(st, visit)
				continue
			}
			out = append(out, token{kindOf(st), offset(st)})
			for _, r := range st.Redirs {
				syntax.Walk(r, visit)
			}
			out = append(out, token{kindOf(b), offset(b)})
			stack = append(stack, b.Y, b.X)
		}
	}
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case nil, *syntax.Lit, *syntax.Comment:
			return true
		case *syntax.DeclClause:
			if v := n.Variant.Value; v == "export" || v == "local" || v == "readonly" {
				out = append(out, token{kindCall, offset(n)}, token{kindWord, offset(n.Variant)})
				for _, a := range n.Args {
					out = append(out, token{kindWord, offset(a)})
					if a.Index != nil || a.Array != nil || a.Append {
						out = append(out, token{"array or +=", offset(a)})
					}
					if a.Value != nil {
						for _, p := range a.Value.Parts {
							syntax.Walk(p, visit)
						}
					}
				}
				return false
			}
		case *syntax.TimeClause:
			if inner, ok := plainCall(n.Stmt); ok || n.Stmt == nil {
				out = append(out, token{kindCall, offset(n)}, token{kindWord, int(n.Time.Offset())})
				if n.PosixFormat {
					out = append(out, token{kindWord, -1})
				}
				if inner != nil {
					for _, w := range inner.Args {
						syntax.Walk(w, visit)
					}
					for _, r := range n.Stmt.Redirs { // POSIX: the redirections of the time command
						syntax.Walk(r, visit)
					}
				}
				return false
			}
		}
		if b, ok := n.(*syntax.BinaryCmd); ok {
			binary(b)
			return false
		}
		if nodes++; nodes%clockEvery == 0 {
			clock()
		}
		out = append(out, token{kindOf(n), offset(n)})
		return true
	}
	syntax.Walk(f, visit)
	return out
}

// offset is where a node begins, or -1 for one without a position (the
// syntax package panics on some nodes of unusual trees).
func offset(n syntax.Node) (off int) {
	defer func() {
		if recover() != nil {
			off = -1
		}
	}()
	return int(n.Pos().Offset())
}

// nodeSpan is the source range of a node; an empty span where it has none.
func nodeSpan(n syntax.Node) (sp span) {
	defer func() {
		if recover() != nil {
			sp = span{}
		}
	}()
	return span{int(n.Pos().Offset()), int(n.End().Offset())}
}

// The kinds of the nodes a normalized form stands for.
var (
	kindCall = kindOf(&syntax.CallExpr{})
	kindWord = kindOf(&syntax.Word{})
)

// plainCall returns the simple command a statement is, when it is nothing
// more but its redirections (no assignments, negation or background).
func plainCall(s *syntax.Stmt) (*syntax.CallExpr, bool) {
	if s == nil || s.Negated || s.Background || s.Coprocess || s.Disown {
		return nil, false
	}
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Assigns) > 0 {
		return nil, false
	}
	return c, true
}

// kindOf names a node with the flags that change what it runs.
// binaryKinds are kindOf's strings for the binary operators, made once.
var binaryKinds = map[syntax.BinCmdOperator]string{
	syntax.AndStmt: "BinaryCmd" + syntax.AndStmt.String(), syntax.OrStmt: "BinaryCmd" + syntax.OrStmt.String(),
	syntax.Pipe: "BinaryCmd" + syntax.Pipe.String(), syntax.PipeAll: "BinaryCmd" + syntax.PipeAll.String(),
}

func kindOf(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.File:
		return "File"
	case *syntax.Stmt:
		return stmtKind(n)
	case *syntax.BinaryCmd:
		if k, ok := binaryKinds[n.Op]; ok {
			return k
		}
		return "BinaryCmd" + n.Op.String()
	case *syntax.Redirect:
		k := "Redirect" + n.Op.String()
		if n.N != nil {
			k += "N" + n.N.Value
		}
		return k
	case *syntax.CaseItem:
		return "CaseItem" + n.Op.String()
	case *syntax.SglQuoted:
		return fmt.Sprintf("SglQuoted$%t", n.Dollar)
	case *syntax.DblQuoted:
		return fmt.Sprintf("DblQuoted$%t", n.Dollar)
	case *syntax.CmdSubst:
		return fmt.Sprintf("CmdSubst`%t%t%t", n.Backquotes, n.TempFile, n.ReplyVar)
	case *syntax.ForClause:
		return fmt.Sprintf("ForClause%t%t", n.Select, n.Braces)
	case *syntax.FuncDecl:
		return fmt.Sprintf("FuncDecl%t%t", n.RsrvWord, n.Parens)
	case *syntax.Assign:
		return fmt.Sprintf("Assign+%t%t", n.Append, n.Naked)
	case *syntax.ArithmExp:
		return fmt.Sprintf("ArithmExp%t%t", n.Bracket, n.Unsigned)
	case *syntax.ProcSubst:
		return "ProcSubst" + n.Op.String()
	case *syntax.ParamExp:
		k := fmt.Sprintf("ParamExp%t%t%t%t%t%t%t%d", n.Short, n.Excl, n.Length, n.Width,
			n.Index != nil, n.Slice != nil, n.Repl != nil, n.Names)
		if n.Exp != nil {
			k += n.Exp.Op.String()
		}
		return k
	}
	return reflect.TypeOf(n).String() // "*syntax.CallExpr", without fmt's cost
}

// firstDifference returns the offset where two structures first differ.
func firstDifference(a, b []token) (int, bool) {
	for i := range min(len(a), len(b)) {
		if a[i].kind != b[i].kind || a[i].off >= 0 && b[i].off >= 0 && a[i].off != b[i].off {
			return max(a[i].off, b[i].off, 0), false
		}
	}
	switch {
	case len(a) > len(b):
		return max(a[len(b)].off, 0), false
	case len(b) > len(a):
		return max(b[len(a)].off, 0), false
	}
	return 0, true
}

// bashConstruct is a piece of bash syntax POSIX sh lacks, found in a tree.
type bashConstruct struct {
	detail string
	sp     span
}

// firstBashConstruct returns the first construct of a bash tree that POSIX
// sh does not have, with how dash reads it.
func firstBashConstruct(f *syntax.File) (bashConstruct, bool) {
	var found bashConstruct
	ok := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if ok || n == nil {
			return false
		}
		if detail := bashOnly(n); detail != "" {
			found = bashConstruct{detail: detail, sp: nodeSpan(n)}
			ok = true
			return false
		}
		return true
	})
	return found, ok
}

// dupToFile finds `>& FILE` (bash: stdout and stderr to FILE), which both
// dialects parse alike but dash refuses: its `>&` takes a descriptor.
func dupToFile(f *syntax.File) (bashConstruct, bool) {
	var found bashConstruct
	ok := false
	syntax.Walk(f, func(n syntax.Node) bool {
		r, isRedir := n.(*syntax.Redirect)
		if ok || !isRedir || r.Op != syntax.DplOut && r.Op != syntax.DplIn || r.Word == nil {
			return !ok
		}
		if lit := r.Word.Lit(); lit != "" && lit != "-" && strings.Trim(lit, "0123456789") != "" {
			found = bashConstruct{
				detail: "`>& FILE` is bash syntax (standard output and error to FILE); " + dash + " refuses it: `>&` takes a file descriptor",
				sp:     nodeSpan(r),
			}
			ok = true
		}
		return !ok
	})
	return found, ok
}

// dash is how the details name what runs /bin/sh -c on Debian.
const dash = "/bin/sh (dash)"

// bashOnly describes a node of bash syntax that POSIX sh lacks, or "".
func bashOnly(n syntax.Node) string {
	switch n := n.(type) {
	case *syntax.Redirect:
		switch n.Op {
		case syntax.RdrAll, syntax.RdrAllClob:
			return "`&>` is bash syntax; " + dash + " reads it as `&` then `>`: what comes before runs in the background and the rest is another command"
		case syntax.AppAll, syntax.AppAllClob:
			return "`&>>` is bash syntax; " + dash + " reads it as `&` then `>>`: what comes before runs in the background and the rest is another command"
		case syntax.WordHdoc:
			return "`<<<` (here-string) is bash syntax; " + dash + " has none"
		}
		if n.N != nil && len(n.N.Value) > 0 && n.N.Value[0] == '{' {
			return "`{var}>` redirection is bash syntax; " + dash + " reads `{var}` as a word"
		}
	case *syntax.SglQuoted:
		if n.Dollar {
			return "`$'…'` (ANSI-C quoting) is bash syntax; " + dash + " reads `$` and then a '…' string, so its quotes end elsewhere"
		}
	case *syntax.DblQuoted:
		if n.Dollar {
			return "`$\"…\"` (locale quoting) is bash syntax; " + dash + " reads `$` and then a \"…\" string"
		}
	case *syntax.ArithmCmd:
		return "`((…))` is bash arithmetic; " + dash + " reads nested subshells that run its text as commands"
	case *syntax.TestClause:
		return "`[[ … ]]` is bash syntax; " + dash + " runs a program named `[[`"
	case *syntax.FuncDecl:
		if n.RsrvWord {
			return "the `function` keyword is bash syntax; " + dash + " runs a program named `function`"
		}
	case *syntax.ProcSubst:
		return "`<(…)` and `>(…)` (process substitution) are bash syntax; " + dash + " reads a redirection and a subshell"
	case *syntax.BinaryCmd:
		if n.Op == syntax.PipeAll {
			return "`|&` is bash syntax; " + dash + " reads `|` and then `&`"
		}
	case *syntax.CaseItem:
		if n.Op == syntax.Fallthrough || n.Op == syntax.Resume {
			return "`;&` and `;;&` in case are bash syntax; " + dash + " has neither"
		}
	case *syntax.ForClause:
		switch {
		case n.Select:
			return "`select` is bash syntax; " + dash + " runs a program named `select`"
		case n.Braces:
			return "`for … { }` is bash syntax; " + dash + " has none"
		}
		if _, ok := n.Loop.(*syntax.CStyleLoop); ok {
			return "`for ((…))` is bash syntax; " + dash + " reads nested subshells"
		}
	case *syntax.ArrayExpr:
		return "arrays are bash syntax; " + dash + " has none"
	case *syntax.Assign:
		switch {
		case n.Index != nil:
			return "array assignment is bash syntax; " + dash + " has none"
		case n.Append:
			return "`+=` is bash syntax; " + dash + " runs a program named after the whole word"
		}
	case *syntax.ParamExp:
		switch {
		case n.Excl:
			return "`${!var}` is bash syntax; " + dash + " cannot expand it"
		case n.Index != nil:
			return "`${var[i]}` is bash syntax; " + dash + " cannot expand it"
		case n.Slice != nil:
			return "`${var:offset:length}` is bash syntax; " + dash + " cannot expand it"
		case n.Repl != nil:
			return "`${var/pattern/string}` is bash syntax; " + dash + " cannot expand it"
		case n.Names != 0:
			return "`${!prefix*}` is bash syntax; " + dash + " cannot expand it"
		case n.Exp != nil && n.Exp.Op >= syntax.UpperFirst && n.Exp.Op <= syntax.OtherParamOps:
			return "`${var^}`, `${var,}` and `${var@…}` are bash syntax; " + dash + " cannot expand them"
		}
	case *syntax.DeclClause:
		if v := n.Variant.Value; v != "export" && v != "local" && v != "readonly" {
			return fmt.Sprintf("`%s` is a bash builtin; %s runs a program named `%s`", v, dash, v)
		}
	case *syntax.LetClause:
		return "`let` is a bash builtin; " + dash + " runs a program named `let`"
	case *syntax.CoprocClause:
		return "`coproc` is bash syntax; " + dash + " runs a program named `coproc`"
	case *syntax.ExtGlob:
		return "extended globs such as `@(…)` are bash syntax; " + dash + " reads a subshell"
	case *syntax.CmdSubst:
		if n.TempFile || n.ReplyVar {
			return "`${ …;}` is bash syntax; " + dash + " cannot expand it"
		}
	case *syntax.ArithmExp:
		if n.Bracket {
			return "`$[…]` is bash syntax; " + dash + " reads `$` and a glob"
		}
	case *syntax.TimeClause:
		if _, plain := plainCall(n.Stmt); !plain && n.Stmt != nil {
			return "the `time` keyword before a compound command is bash syntax; " + dash + " runs a program named `time`"
		}
	}
	return ""
}
