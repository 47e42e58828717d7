package policy

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// textRe is a pack's regular expression with a literal prefilter: the
// words one of which every match contains. Most texts a rule meets hold
// none of them, and a substring search rules them out far faster than the
// regexp engine can (an unanchored, case-folded alternation of dozens of
// words is backtracked at every position).
//
// The prefilter only ever says "cannot match": a text it cannot judge
// (non-ASCII, where case folding reaches beyond ASCII) goes to the engine.
type textRe struct {
	*regexp.Regexp
	need []string // lower-case ASCII; nil: no prefilter
}

// compileText compiles expr with its prefilter.
func compileText(expr string) (*textRe, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	t := &textRe{Regexp: re}
	if p, err := syntax.Parse(expr, syntax.Perl); err == nil {
		if need, ok := required(p.Simplify()); ok && useful(need) {
			t.need = need
		}
	}
	return t, nil
}

// MatchString reports whether s contains a match of the expression.
func (t *textRe) MatchString(s string) bool {
	if t.need != nil && !mayContain(s, t.need) {
		return false
	}
	return t.Regexp.MatchString(s)
}

// mayContain reports whether s, folded to lower case, contains one of
// need, or is a text the prefilter cannot judge.
func mayContain(s string, need []string) bool {
	lower := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 {
			return true // K (the Kelvin sign) folds to k: leave it to the engine
		}
		if 'A' <= c && c <= 'Z' {
			lower = false
		}
	}
	if !lower {
		s = strings.ToLower(s)
	}
	for _, w := range need {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// useful reports whether a prefilter rules enough out to pay for itself:
// a one-letter word is in nearly every text.
func useful(need []string) bool {
	for _, w := range need {
		if len(w) < 2 {
			return false
		}
	}
	return len(need) > 0
}

// required returns words, lower-case ASCII, one of which every match of
// re contains; ok is false when no such set is known (a match may be made
// of classes, or be empty).
func required(re *syntax.Regexp) (words []string, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r >= 0x80 {
				return nil, false
			}
		}
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return required(re.Sub[0])
	case syntax.OpConcat:
		// every part is in a match: the part whose shortest word is
		// longest rules out the most
		var best []string
		bestLen := 0
		for _, sub := range re.Sub {
			w, ok := required(sub)
			if !ok {
				continue
			}
			if n := shortest(w); n > bestLen {
				best, bestLen = w, n
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			w, ok := required(sub)
			if !ok {
				return nil, false // this branch matches without a known word
			}
			all = append(all, w...)
		}
		return all, true
	}
	return nil, false
}

func shortest(words []string) int {
	n := -1
	for _, w := range words {
		if n < 0 || len(w) < n {
			n = len(w)
		}
	}
	return n
}
