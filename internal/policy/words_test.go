package policy

import (
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

func TestResolveWord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src string
		val string
		lit bool
	}{
		{`rm`, "rm", true},
		{`r"m"`, "rm", true},
		{`'r'm`, "rm", true},
		{`r\m`, "rm", true},
		{`"a\b\$c\"d"`, `a\b$c"d`, true},
		{`$'\x72\155\u0041\n'`, "rmA\n", true},
		{`$'a\'b'`, "a'b", true},
		{`$'ab\x00cd'`, "ab", true},
		{`$'ab\cd'`, "ab", true},
		{`$HOME/x`, homeMarker + "/x", true},
		{`"${HOME}"`, homeMarker, true},
		{`'$HOME'`, "$HOME", true},
		{`$HOMEX`, "", false},
		{`${HOME:-/}`, "", false},
		{`$(echo rm)`, "", false},
		{`a$((1))`, "a", false},
		{`"$x"`, "", false},
	}
	for _, tc := range tests {
		f, err := parse("cmd " + tc.src)
		if err != nil {
			t.Fatalf("parse %q: %v", tc.src, err)
		}
		w := f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1]
		got := resolveWord(w)
		if got.lit != tc.lit || (tc.lit && got.val != tc.val) {
			t.Errorf("resolveWord(%s) = %q lit=%v, want %q lit=%v", tc.src, got.val, got.lit, tc.val, tc.lit)
		}
	}
}
