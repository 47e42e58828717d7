package policy

import (
	"strconv"
	"strings"
)

// maxCommandLen is the spec's limit on a job's command text (128 KiB).
const maxCommandLen = 128 << 10

// adversarialFamily generates hostile commands of about n bytes, each
// aimed at a path of the detector whose cost could grow faster than its
// input.
type adversarialFamily struct {
	name string
	gen  func(n int) string
}

// repeatTo repeats unit between prefix and suffix until the command is
// about n bytes long.
func repeatTo(n int, prefix, unit, suffix string) string {
	k := max((n-len(prefix)-len(suffix))/len(unit), 1)
	return prefix + strings.Repeat(unit, k) + suffix
}

// adversarialFamilies are the known blowups of the detector.
var adversarialFamilies = []adversarialFamily{
	{"awk-pipes", func(n int) string { // a program with many print … | "sh"
		return repeatTo(n, "awk 'BEGIN { ", `print "rm -rf /tmp/x" | "sh"; `, "}'")
	}},
	{"awk-getline", func(n int) string {
		return repeatTo(n, "awk 'BEGIN { ", `"ls" | getline x; `, "}'")
	}},
	{"sh-pipe-chain", func(n int) string { return repeatTo(n, "echo x", " | sh", "") }},
	{"nested-cmdsubst", func(n int) string { // $( $( $( … ) ) ), as deep as fits
		k := max((n-4)/12, 1)
		return strings.Repeat("echo $(", k) + "x" + strings.Repeat(")", k)
	}},
	{"nested-sh-c", func(n int) string { // sh -c 'sh -c …' with escalating quotes
		cmd := "true"
		for len(cmd) < n/2 {
			cmd = "sh -c " + shellQuote(cmd)
		}
		return cmd
	}},
	{"nested-blocks", func(n int) string { k := n / 6; return strings.Repeat("{ ", k) + "true;" + strings.Repeat(" }", k) }},
	{"brace-product", func(n int) string { return repeatTo(n, "echo ", "{a,b}", "") }},
	{"brace-wide", func(n int) string { return repeatTo(n, "echo {", "a,", "b}") }},
	{"brace-product-cmdsubst", func(n int) string { // brace products at every level of $(…)
		k := max(n/60, 1)
		return strings.Repeat("echo {a,b}{c,d}{e,f}{g,h} $(", k) + "x" + strings.Repeat(")", k)
	}},
	{"many-functions", func(n int) string {
		var sb strings.Builder
		for i := 0; sb.Len() < n-64; i++ {
			sb.WriteString("f" + strconv.Itoa(i) + "(){ g $1 $1; }; ")
		}
		return sb.String()
	}},
	{"functions-with-nested-sh", func(n int) string { // every sh -c copies the functions
		var sb strings.Builder
		for i := 0; sb.Len() < n/2; i++ {
			sb.WriteString("f" + strconv.Itoa(i) + "(){ :; }; ")
		}
		for sb.Len() < n-16 {
			sb.WriteString("sh -c f0; ")
		}
		return sb.String()
	}},
	{"call-tree", func(n int) string { // each function calls the next twice
		var sb strings.Builder
		for i := 0; sb.Len() < n-64; i++ {
			sb.WriteString("f" + strconv.Itoa(i) + "(){ f" + strconv.Itoa(i+1) + " $1 $1; f" + strconv.Itoa(i+1) + " $1; }; ")
		}
		sb.WriteString("f0 x")
		return sb.String()
	}},
	{"semicolon-list", func(n int) string { return repeatTo(n, "", "rm -rf /; ", "") }},
	{"variable-doubling", func(n int) string { return repeatTo(n, "a=xxxxxxxxxxxxxxxx; ", `a="$a$a"; `, `echo "$a"`) }},
	{"variable-values", func(n int) string { // many conditional values, then used everywhere
		return repeatTo(n, "", `[ -e x ] && a=$a.x; b="$a$a$a$a"; `, "rm -rf $b")
	}},
	{"eval-chain", func(n int) string { return repeatTo(n, "", "eval 'eval \"true\"'; ", "") }},
	{"heredoc-shells", func(n int) string { return repeatTo(n, "", "sh <<EOF\nsh -c 'true'\nEOF\n", "") }},
	{"python-exec", func(n int) string {
		return repeatTo(n, "python3 -c '", `exec("import os; os.system(\"true\")"); `, "'")
	}},
	{"xargs-find", func(n int) string { return repeatTo(n, "find", " /tmp/a", " -exec rm -rf {} +") }},
	{"arith-chain", func(n int) string {
		var sb strings.Builder
		for i := 0; sb.Len() < n-32; i++ {
			sb.WriteString("v" + strconv.Itoa(i) + "=v" + strconv.Itoa(i+1) + "; ")
		}
		sb.WriteString("echo $((v0))")
		return sb.String()
	}},
}
