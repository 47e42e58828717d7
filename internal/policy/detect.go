package policy

import (
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// finding is one rule firing on one place in a command.
type finding struct {
	rule   string
	detail string // what matched, safe to log: no variable values
}

// maxNesting bounds how deep sh -c / eval strings are parsed recursively.
// Deeper nesting is reported as unparsable (fail closed).
const maxNesting = 8

// detect parses cmd as a shell program and returns every finding, in source
// order. It never panics: a parser failure, a too-deep nesting or an
// internal error yields an "unparsable" finding.
func detect(cmd string) (out []finding) {
	d := &detector{}
	defer func() {
		if r := recover(); r != nil {
			out = append(d.findings, finding{ruleUnparsable, "internal detector error"})
		}
	}()
	d.script(cmd, "", 0)
	return d.findings
}

// detector walks one command line and collects findings.
type detector struct {
	findings []finding
}

func (d *detector) add(rule, detail string) {
	d.findings = append(d.findings, finding{rule, detail})
}

// script parses src and inspects every simple command and function in it,
// including those inside pipelines, lists, subshells, blocks, if/while/for/
// case bodies, functions, $(...), `...` and <(...). via prefixes details of
// findings inside a nested string ("bash -c: ").
func (d *detector) script(src, via string, depth int) {
	if depth > maxNesting {
		d.add(ruleUnparsable, via+fmt.Sprintf("sh -c / eval nested more than %d levels", maxNesting))
		return
	}
	f, err := parse(src)
	if err != nil {
		d.add(ruleUnparsable, via+describeParseError(err))
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			d.call(n, via, depth)
		case *syntax.FuncDecl:
			for _, r := range rules {
				if r.fn == nil {
					continue
				}
				if detail, ok := r.fn(n); ok {
					d.add(r.id, via+detail)
				}
			}
		}
		return true
	})
}

func (d *detector) call(n *syntax.CallExpr, via string, depth int) {
	c, ok := commandOf(n)
	if !ok {
		return
	}
	for _, r := range rules {
		if r.call == nil {
			continue
		}
		if detail, ok := r.call(c); ok {
			d.add(r.id, via+detail)
		}
	}
	if src, ok := nestedScript(c); ok {
		label := c.name + " -c: "
		if c.name == "eval" {
			label = "eval: "
		}
		d.script(src, via+label, depth+1)
	}
}

// shells are the programs whose -c operand is a shell command line.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true,
	"mksh": true, "ash": true, "yash": true, "posh": true,
}

// nestedScript returns the command line that c runs as shell code: the
// operand of `sh -c` (and other shells), or the joined arguments of eval.
// It reports false when there is none or its text is not a literal.
func nestedScript(c command) (string, bool) {
	if c.name == "eval" {
		parts := make([]string, len(c.args))
		for i, a := range c.args {
			if !a.lit {
				return "", false
			}
			parts[i] = a.val
		}
		return strings.ReplaceAll(strings.Join(parts, " "), homeMarker, "$HOME"), len(parts) > 0
	}
	if !shells[c.name] {
		return "", false
	}
	hasC := false
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if !a.lit {
			return "", false
		}
		v := a.val
		switch {
		case v == "--" || v == "-":
			i++
		case v == "-o" || v == "+o" || v == "-O" || v == "+O" || v == "--rcfile" || v == "--init-file":
			i++ // option with a value
			continue
		case strings.HasPrefix(v, "--") || (strings.HasPrefix(v, "+") && len(v) > 1):
			continue
		case strings.HasPrefix(v, "-") && len(v) > 1:
			hasC = hasC || strings.Contains(v[1:], "c")
			continue
		}
		if !hasC || i >= len(c.args) || !c.args[i].lit {
			return "", false
		}
		return strings.ReplaceAll(c.args[i].val, homeMarker, "$HOME"), true
	}
	return "", false
}

// parse parses src as bash, the most permissive dialect a job's sh -c may be.
// A new parser per call keeps detect safe for concurrent use.
func parse(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

// describeParseError names where parsing failed without echoing the
// command text, which may hold secrets.
func describeParseError(err error) string {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("does not parse as shell (error at %s)", pe.Pos)
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return fmt.Sprintf("does not parse as bash (error at %s)", le.Pos)
	}
	return "does not parse as shell"
}
