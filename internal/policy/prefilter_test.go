package policy

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode"
)

// TestPrefilterCases checks the prefilter's words on the forms that make
// a match possible without a known word, and its judgement of texts.
func TestPrefilterCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		need []string // nil: no prefilter
	}{
		{`(?i)rmtree|rm_rf`, []string{"tree", "_rf"}}, // parsed as rm(?:tree|_rf)
		{`(?i)\bDROP\s+TABLE\b`, []string{"table"}},
		{`drop|x*`, nil}, // a branch matches the empty text
		{`(?i)(delete)?\s+--all`, []string{"--all"}}, // an optional part is not needed
		{`(?i)a(bc){0,3}d`, nil},                     // one-letter words rule nothing out
		{`(?i)(purge){1,2}`, []string{"purge"}},
		{`[Dd]rop|truncate`, []string{"rop", "truncate"}},
		{`[a-z]+|truncate`, nil},                          // a class: no word known for that branch
		{`(?i)ſecret|token`, []string{"secret", "token"}}, // read as a folded s
		{`é+|token`, nil},                                 // not ASCII
		{`^\s*$`, nil},
	} {
		re, err := compileText(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if strings.Join(re.need, ",") != strings.Join(tc.need, ",") || (re.need == nil) != (tc.need == nil) {
			t.Errorf("%s: need %q, want %q", tc.expr, re.need, tc.need)
		}
	}
	re, _ := compileText(`(?i)secret|\btoken\b`)
	for s, want := range map[string]bool{
		"SECRET":         true,
		"my Token":       true,
		"nothing here":   false,
		"TOK EN":         false,
		"\u212Aey token": true, // not ASCII: judged by the engine, which matches
		"\u017Fecret":    true, // ſ folds to s
	} {
		if got := re.MatchString(s); got != want {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
}

// TestPrefilterSound checks that the prefilter never rules out a text the
// expression matches, for every expression of the packs: each one is
// given texts generated from its own syntax tree (random branches,
// repetitions and letter cases, Unicode case folds such as the Kelvin
// sign, noise around), and wherever the engine matches one the
// prefiltered expression must match it too.
func TestPrefilterSound(t *testing.T) {
	t.Parallel()
	packs, err := loadPacks(packFiles)
	if err != nil {
		t.Fatal(err)
	}
	var all []*textRe
	for _, p := range packs {
		for _, tool := range p.Tools {
			all = append(all, tool.scriptRe, tool.scriptDyn)
			for _, r := range tool.Rules {
				all = append(all, r.match, r.unlessM, r.exceptM)
				all = append(all, r.matchAll...)
				for _, re := range r.unlessE {
					all = append(all, re)
				}
			}
		}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	exprs, filtered, matched := 0, 0, 0
	for _, re := range all {
		if re == nil {
			continue
		}
		exprs++
		if re.need == nil {
			continue
		}
		filtered++
		tree, err := syntax.Parse(re.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		tree = tree.Simplify()
		for range 40 {
			var b strings.Builder
			if rnd.IntN(3) == 0 {
				b.WriteString("x ")
			}
			generate(tree, rnd, &b)
			if rnd.IntN(3) == 0 {
				b.WriteString(" y")
			}
			s := b.String()
			if !re.Regexp.MatchString(s) {
				continue // an anchor or \b the generator did not honour
			}
			matched++
			if !re.MatchString(s) {
				t.Errorf("%s: the prefilter %q rules out %q, which matches", re, re.need, s)
			}
		}
	}
	t.Logf("%d expressions, %d with a prefilter, %d generated matches checked", exprs, filtered, matched)
	if filtered == 0 || matched < filtered*10 {
		t.Fatalf("too few checks: %d expressions prefiltered, %d matches", filtered, matched)
	}
}

// generate writes a text re matches, or tries to (anchors and word
// boundaries are not honoured).
func generate(re *syntax.Regexp, rnd *rand.Rand, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				r = foldRandomly(r, rnd)
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return
		}
		i := rnd.IntN(len(re.Rune)/2) * 2
		lo, hi := re.Rune[i], re.Rune[i+1]
		if hi > lo+200 {
			hi = lo + 200
		}
		b.WriteRune(lo + rune(rnd.IntN(int(hi-lo)+1)))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte(byte('a' + rnd.IntN(26)))
	case syntax.OpCapture:
		generate(re.Sub[0], rnd, b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 2
		switch re.Op {
		case syntax.OpPlus:
			lo, hi = 1, 3
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Min+2
			if re.Max >= 0 && hi > re.Max {
				hi = re.Max
			}
		}
		for range lo + rnd.IntN(hi-lo+1) {
			generate(re.Sub[0], rnd, b)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			generate(sub, rnd, b)
		}
	case syntax.OpAlternate:
		generate(re.Sub[rnd.IntN(len(re.Sub))], rnd, b)
	}
}

// foldRandomly returns r or one of the runes it folds to.
func foldRandomly(r rune, rnd *rand.Rand) rune {
	orbit := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		orbit = append(orbit, f)
	}
	return orbit[rnd.IntN(len(orbit))]
}
