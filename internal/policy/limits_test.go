package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// generousBudget is a budget no bound test reaches, so that each test sees
// the bound it is about, not the clock (the race detector is slow).
func generousBudget() budget {
	return budget{steps: budgetSteps, bytes: budgetBytes, timeout: time.Hour, now: time.Now}
}

// rulesOf runs the detector on cmd within b and returns the distinct rules.
func rulesOf(cmd string, b budget) []string {
	var ids []string
	for _, f := range detectBudget(cmd, ShellSh, newEnv(), nil, b) {
		if !slices.Contains(ids, f.rule) {
			ids = append(ids, f.rule)
		}
	}
	return ids
}

// words returns n words made by f(i), joined by spaces.
func words(n int, f func(i int) string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return strings.Join(out, " ")
}

// condValues assigns a variable n distinct values, the first for sure and
// the others in branches (last: /usr), then deletes it.
func condValues(n int) string {
	var sb strings.Builder
	sb.WriteString("a=/tmp/0; ")
	for i := 1; i < n; i++ {
		v := fmt.Sprintf("/tmp/%d", i)
		if i == n-1 {
			v = "/usr"
		}
		fmt.Fprintf(&sb, "if test -e %d; then a=%s; fi; ", i, v)
	}
	sb.WriteString(`rm -rf "$a"`)
	return sb.String()
}

// limitCase is one bound of the detector: under is a command just within
// it, judged as before (want among its rules, never too-complex); over is
// the same just past it (too-complex). small says over is cheap enough to
// Decide under the default budget even with the race detector.
type limitCase struct {
	name        string
	under, over string
	want        string // a rule under must fire; "" for none
	small       bool
}

func limitCases() []limitCase {
	forLoop := func(n int) string {
		return "for d in " + words(n, func(i int) string {
			if i == n-1 {
				return "/usr"
			}
			return fmt.Sprintf("t%d", i)
		}) + `; do rm -rf "$d"; done`
	}
	braces := func(n int) string { return "rm -rf /usr/x" + strings.Repeat("{a,b}", n) }
	xargsIn := func(n int, replace bool) string {
		last, cmd, echo := "/usr", "xargs rm -rf", "echo "
		if replace { // xargs -I reads lines
			last, cmd, echo = "usr", "xargs -I{} rm -rf /{}", `printf '%s\n' `
		}
		return echo + words(n, func(i int) string {
			if i == n-1 {
				return last
			}
			return fmt.Sprintf("t%d", i)
		}) + " | " + cmd
	}
	findRoots := func(n int) string {
		return "find " + words(n, func(i int) string {
			if i == n-1 {
				return "/usr"
			}
			return fmt.Sprintf("t%d", i)
		}) + ` -exec rm -rf {} \;`
	}
	calls := func(n int) string {
		return `f(){ rm -rf "$1"; }; ` + words(n, func(i int) string {
			if i == n-1 {
				return "f /usr;"
			}
			return fmt.Sprintf("f t%d;", i)
		})
	}
	outputs := func(n int) string {
		return "rm -rf " + strings.Repeat("$(echo ", n) + "/usr" + strings.Repeat(")", n)
	}
	arith := func(n int) string { // v0 names v1 names ... names a payload
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "v%d=v%d; ", i, i+1)
		}
		fmt.Fprintf(&sb, "v%d='x[$(rm -rf /usr)]'; echo $((v0))", n)
		return sb.String()
	}
	blocks := func(n int) string { return strings.Repeat("{ ", n) + "rm -rf /usr;" + strings.Repeat(" }", n) }
	shc := func(n int) string {
		cmd := "rm -rf /usr"
		for range n {
			cmd = "sh -c " + shellQuote(cmd)
		}
		return cmd
	}
	brackets := func(n int) string { return "echo " + strings.Repeat("[", n) + "; rm -rf /usr" }
	evals := func(n int) string { return strings.Repeat("eval true; ", n-1) + "eval 'rm -rf /usr'" }
	parsed := func(n int) string { // n evals of a 60 KB script
		return "x='#" + strings.Repeat("x", 60000) + "\nrm -rf /usr'; " + strings.Repeat(`eval "$x"; `, n)
	}
	valueLen := func(n int) string { return "x=/usr" + strings.Repeat("/", n-len("/usr")) + `; rm -rf "$x"` }
	alts := func(a, b int) string { // a word with a*b expansions
		v := func(name string, n int) string {
			out := name + "=x0; "
			for i := 1; i < n; i++ {
				out += fmt.Sprintf("if test -e %d; then %s=x%d; fi; ", i, name, i)
			}
			return out
		}
		return v("a", a) + v("b", b) + `echo "$a$b"`
	}
	combos := func(a, b int) string { // a command with a*b argument lists
		return strings.TrimSuffix(condValues(a), `rm -rf "$a"`) + strings.ReplaceAll(strings.TrimSuffix(condValues(b), `rm -rf "$a"`), "a=", "b=") +
			`rm -rf "$a" "$b"`
	}
	return []limitCase{
		{"for-loop-values", forLoop(maxValues), forLoop(maxValues + 1), ruleRmRoot, true},
		{"variable-values", condValues(maxValues), condValues(maxValues + 1), ruleRmRoot, true},
		{"value-length", valueLen(maxValueLen), valueLen(maxValueLen + 1), ruleRmRoot, true},
		{"brace-words", braces(6), braces(7), ruleWriteSystem, true},
		{"word-expansions", alts(3, 3), alts(2, 5), "", true},
		{"argument-lists", combos(4, 4), combos(4, 5), ruleRmRoot, true},
		{"xargs-appended", xargsIn(maxInputs*4, false), xargsIn(maxInputs*4+1, false), ruleRmRoot, true},
		{"xargs-replace", xargsIn(maxInputs, true), xargsIn(maxInputs+1, true), ruleRmRoot, true},
		{"find-roots", findRoots(maxInputs), findRoots(maxInputs + 1), ruleRmRoot, true},
		{"function-calls", calls(maxCalls), calls(maxCalls + 1), ruleRmRoot, true},
		{"output-depth", outputs(maxOutDepth), outputs(maxOutDepth + 1), ruleRmRoot, true},
		{"arith-hops", arith(maxArithHops), arith(maxArithHops + 1), ruleRmRoot, true},
		{"statement-depth", blocks(maxDepth - 1), blocks(maxDepth), ruleRmRoot, true},
		{"script-nesting", shc(maxNesting), shc(maxNesting + 1), ruleRmRoot, true},
		{"parse-depth", brackets(maxParseDepth), brackets(maxParseDepth + 1), ruleRmRoot, true},
		{"scripts", evals(maxScripts - 1), evals(maxScripts), ruleRmRoot, false},
		{"parsed-bytes", parsed(maxParsed / 60002), parsed(maxParsed/60002 + 1), ruleRmRoot, false},
	}
}

// TestLimits checks every bound of the detector: just within it a command
// is judged as before; just past it, it is refused too-complex, which no
// allowlist admits and approve records (like unparsable).
func TestLimits(t *testing.T) {
	t.Parallel()
	var all []string
	for _, r := range rules {
		if r.allowlistable() {
			all = append(all, r.id)
		}
	}
	e := newEngine(t, Config{Allowlist: all, Ceiling: map[string]Mode{"manual": ModeApprove}})
	for _, tc := range limitCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			under := rulesOf(tc.under, generousBudget())
			if slices.Contains(under, ruleTooComplex) || tc.want != "" && !slices.Contains(under, tc.want) {
				t.Errorf("within the bound: fired %q, want %q and no too-complex", under, tc.want)
			}
			if over := rulesOf(tc.over, generousBudget()); !slices.Contains(over, ruleTooComplex) {
				t.Errorf("past the bound: fired %q, want too-complex", over)
			}
			if !tc.small {
				return
			}
			d := e.Decide(Request{Command: tc.over, Origin: "manual", Mode: ModeAllowlist})
			if d.Allow || !strings.Contains(d.Reason, "not allowlisted: too-complex") {
				t.Errorf("allowlist mode, every rule allowlisted: got allow=%v %s", d.Allow, d.Reason)
			}
			d = e.Decide(Request{Command: tc.over, Origin: "manual", Mode: ModeApprove})
			if !d.Allow || !d.Dangerous || !slices.ContainsFunc(d.Matches, func(m Match) bool { return m.Rule == ruleTooComplex }) {
				t.Errorf("approve mode: got allow=%v dangerous=%v %s", d.Allow, d.Dangerous, d.Reason)
			}
			if d = e.Decide(Request{Command: tc.under, Origin: "manual", Mode: ModeAllowlist}); tc.want != "" && !d.Allow {
				t.Errorf("allowlist mode within the bound: denied: %s", d.Reason)
			}
		})
	}
}

// TestLimitsForLoopExample is the example: a loop over ten values
// was judged on the first eight only.
func TestLimitsForLoopExample(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	d := e.Decide(Request{Command: `for d in a b c d e f g h i /usr; do rm -rf "$d"; done`, Origin: "manual", Mode: ModeDeny})
	if d.Allow || !strings.Contains(d.Reason, "too-complex (a for loop over more than 8 values)") {
		t.Errorf("got allow=%v %s", d.Allow, d.Reason)
	}
	d = e.Decide(Request{Command: `for d in a b; do rm -rf "$d"; done`, Origin: "manual", Mode: ModeDeny})
	if !d.Allow {
		t.Errorf("loop over two harmless values denied: %s", d.Reason)
	}
	d = e.Decide(Request{Command: `for d in a /usr; do rm -rf "$d"; done`, Origin: "manual", Mode: ModeDeny})
	if d.Allow || d.Rule != ruleRmRoot {
		t.Errorf("loop over /usr: got allow=%v %s", d.Allow, d.Reason)
	}
}

// TestLimitsRecursion checks that a recursive call with other arguments
// is judged with them (it used to be skipped), and that one with the same
// arguments ends the walk.
func TestLimitsRecursion(t *testing.T) {
	t.Parallel()
	if got := rulesOf(`f(){ rm -rf "$1"; f /usr; }; f x`, generousBudget()); !slices.Equal(got, []string{ruleRmRoot}) {
		t.Errorf("recursion with other arguments fired %q, want [rm-root]", got)
	}
	if got := rulesOf(`f(){ echo "$1"; f "$1"; }; f x`, generousBudget()); len(got) != 0 {
		t.Errorf("recursion with the same arguments fired %q", got)
	}
}

// TestBudget checks the work budget: past its steps, bytes or deadline
// the detector stops and refuses too-complex; the counters never pass the
// budget; within it nothing changes.
func TestBudget(t *testing.T) {
	t.Parallel()
	cmd := strings.Repeat("echo hello world; ", 2000) + "rm -rf /usr"
	if got := rulesOf(cmd, generousBudget()); !slices.Equal(got, []string{ruleRmRoot}) {
		t.Errorf("within the budget: fired %q, want [rm-root]", got)
	}
	steps := generousBudget()
	steps.steps = 1000
	bytes := generousBudget()
	bytes.bytes = 1 << 10
	clock := generousBudget()
	var now time.Time
	clock.timeout = time.Second
	clock.now = func() time.Time { now = now.Add(time.Second / 4); return now } // each read: 250ms later
	for name, b := range map[string]budget{"steps": steps, "bytes": bytes, "deadline": clock} {
		out, m := metered(cmd, b)
		if len(out) == 0 || out[len(out)-1].rule != ruleTooComplex {
			t.Errorf("%s: last finding %+v, want too-complex", name, out)
			continue
		}
		if m.steps > b.steps || m.bytes > b.bytes {
			t.Errorf("%s: counters %d steps, %d bytes past the budget %d, %d", name, m.steps, m.bytes, b.steps, b.bytes)
		}
		t.Logf("%s: %s", name, out[len(out)-1].detail)
	}
}

// metered is detectBudget that also returns the work counted.
func metered(cmd string, b budget) (out []finding, m meter) {
	d := &detector{meter: newMeter(b)}
	defer func() {
		if r := recover(); r != nil {
			out, m = append(d.findings, recovered(r, cmd)), d.meter
		}
	}()
	d.script(&frame{src: cmd, shell: ShellSh}, newEnv(), 0, stream{})
	return d.findings, d.meter
}
