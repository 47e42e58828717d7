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
func matchForkBomb(f *syntax.FuncDecl) (string, bool) {
	if f.Name == nil || f.Body == nil {
		return "", false
	}
	name := f.Name.Value
	total := countSelfCalls(f.Body, name)
	if total < 2 {
		return "", false
	}
	concurrent := 0
	syntax.Walk(f.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Background || n.Coprocess {
				concurrent += countSelfCalls(n, name)
				return false
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				concurrent += countSelfCalls(n, name)
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
func countSelfCalls(n syntax.Node, name string) int {
	count := 0
	syntax.Walk(n, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok {
			if c, ok := commandOf(call); ok && c.name == name {
				count++
			}
		}
		return true
	})
	return count
}
