package policy

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// matchForkBomb fires on a function that calls itself at least twice with at
// least one of those calls running concurrently: inside a pipeline (both
// sides run at once) or in a backgrounded statement. That covers the classic
// `:(){ :|:& };:` and its renamed variants (`b(){ b|b& };b`, `f(){ f & f; }`).
// Plain recursion (`f(){ f; }`) does not multiply processes and does not fire.
// literal resolves the program word of a call.
func matchForkBomb(f *syntax.FuncDecl, literal func(*syntax.Word) (string, bool)) (string, bool) {
	if f.Name == nil || f.Body == nil {
		return "", false
	}
	name := f.Name.Value
	total := countSelfCalls(f.Body, name, literal)
	if total < 2 {
		return "", false
	}
	concurrent := 0
	syntax.Walk(f.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Background || n.Coprocess {
				concurrent += countSelfCalls(n, name, literal)
				return false
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				concurrent += countSelfCalls(n, name, literal)
				return false
			}
		}
		return true
	})
	if concurrent == 0 {
		return "", false
	}
	return fmt.Sprintf("function %s calls itself %d times, concurrently", quoteDetail(name), total), true
}

// countSelfCalls counts the simple commands under n that run the function name.
func countSelfCalls(n syntax.Node, name string, literal func(*syntax.Word) (string, bool)) int {
	count := 0
	syntax.Walk(n, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			if prog, ok := literal(call.Args[0]); ok && prog == name {
				count++
			}
		}
		return true
	})
	return count
}
