package policy

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxArithHops bounds how far a variable naming another variable is
// followed in an arithmetic context.
const maxArithHops = 4

// arithContext reports whether n evaluates arithmetic, and so the values of
// the variables it names: $((…)), ((…)), let, for ((…)), ${a[i]},
// ${a:off:len} and the -eq family of [[ ]].
func arithContext(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop:
		return true
	case *syntax.ParamExp:
		return n.Index != nil || n.Slice != nil
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			return true
		}
	}
	return false
}

// arith judges what bash runs when it evaluates the arithmetic in n: the
// value of a variable used there is itself evaluated as arithmetic, and a
// command substitution in an array subscript of it runs
// (x='a[$(rm -rf /usr)]'; echo $((x)) runs rm in bash, also as /bin/sh).
// A known value holding $(…) or `…` is judged as the words of a command;
// one naming another variable is followed. Values the detector does not
// know (read from input, computed) are not judged.
func (w *walker) arith(n syntax.Node) {
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.Lit:
			if isName(m.Value) {
				w.arithValue(m.Value, int(m.Pos().Offset()), 0)
			}
		case *syntax.ParamExp:
			if m.Param != nil {
				w.arithValue(m.Param.Value, int(m.Pos().Offset()), 0)
			}
		case *syntax.BinaryArithm:
			switch m.Op {
			case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
				syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn, syntax.AndBoolAssgn,
				syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
				w.arithAssign(m.X)
			}
		case *syntax.UnaryArithm:
			if m.Op == syntax.Inc || m.Op == syntax.Dec {
				w.arithAssign(m.X)
			}
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return false // walked by subst
		}
		return true
	})
}

// arithAssign records an assignment arithmetic makes (let U=4711,
// $((U+=1)), ((U++))): the variable holds a number the detector does not
// compute, and no longer anything it held before (an ID a create printed).
func (w *walker) arithAssign(x syntax.ArithmExpr) {
	if word, ok := x.(*syntax.Word); ok && isName(word.Lit()) {
		w.setVar(word.Lit(), unknownValue, false)
	}
}

func (w *walker) arithValue(name string, pos, hops int) {
	if hops > maxArithHops {
		w.limit(fmt.Sprintf("arithmetic following more than %d variables naming variables", maxArithHops), span{pos, pos})
		return
	}
	for _, v := range w.env.get(name).vals {
		switch {
		case strings.Contains(v, "$(") || strings.Contains(v, "`"):
			f := w.f.child(": "+v, "arithmetic", -1, pos)
			w.d.script(f, w.env.clone(), w.cond, stream{})
		case isName(v) && v != name:
			w.arithValue(v, pos, hops+1)
		}
	}
}
