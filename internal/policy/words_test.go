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
		{`${HOME:-/}`, homeMarker, true},
		{`$(echo rm)`, "rm", true},
		{`"$(printf '\x72m')"`, "rm", true},
		{`$(cat f)`, "", false},
		{`${!v}`, "", false},
		{`${#v}`, "", false},
		{`${v/x/y}`, "", false},
		{`a$((1))`, "a", false},
		{`"$x"`, "", false},
	}
	for _, tc := range tests {
		src := "cmd " + tc.src
		f, err := parse(src)
		if err != nil {
			t.Fatalf("parse %q: %v", tc.src, err)
		}
		w := &walker{d: &detector{}, f: &frame{src: src}, env: newEnv()}
		alts := w.fields(f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1])
		if len(alts) != 1 || len(alts[0]) != 1 {
			t.Errorf("fields(%s) = %+v, want one field", tc.src, alts)
			continue
		}
		got := alts[0][0]
		if got.lit != tc.lit || (tc.lit && got.val != tc.val) {
			t.Errorf("resolveWord(%s) = %q lit=%v, want %q lit=%v", tc.src, got.val, got.lit, tc.val, tc.lit)
		}
	}
}
