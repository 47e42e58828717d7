package policy

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

// corpusEntry is one line of testdata/corpus.txt.
type corpusEntry struct {
	line    int
	deny    bool
	shOnly  bool   // deny-sh: denied as sh, allowed as bash
	rule    string // expected among the matches when deny
	command string
	cwd     string            // the job's cwd, from an @job prefix
	env     map[string]string // the job's env, from an @job prefix
}

// request is the entry's job as a Request, judged in ModeDeny.
func (c corpusEntry) request(sh Shell) Request {
	return Request{Command: c.command, Origin: "manual", Mode: ModeDeny, Shell: sh, Cwd: c.cwd, Env: c.env}
}

// jobPrefix reads the job settings a command may start with:
// "@job cwd=DIR NAME=VALUE ... -- COMMAND" (values without blanks).
func jobPrefix(e *corpusEntry) bool {
	rest, ok := strings.CutPrefix(e.command, "@job ")
	if !ok {
		return true
	}
	settings, cmd, ok := strings.Cut(rest, " -- ")
	if !ok {
		return false
	}
	for _, kv := range strings.Fields(settings) {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return false
		case k == "cwd":
			e.cwd = v
		default:
			if e.env == nil {
				e.env = map[string]string{}
			}
			e.env[k] = v
		}
	}
	e.command = cmd
	return true
}

// denies reports whether the entry is denied when judged as sh.
func (c corpusEntry) denies(sh Shell) bool { return c.deny && (!c.shOnly || sh == ShellSh) }

// readCorpus parses testdata/corpus.txt: <verdict>\t<rule-or-dash>\t<command>,
// # comments, \n for a newline and \\n for a literal backslash-n. The
// verdict is allow, deny, or deny-sh (denied as sh, allowed as bash). A
// command may start with the job's settings: @job cwd=DIR NAME=VALUE -- .
func readCorpus(t *testing.T) []corpusEntry {
	t.Helper()
	f, err := os.Open("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []corpusEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		deny := len(fields) == 3 && (fields[0] == "deny" || fields[0] == "deny-sh")
		if len(fields) != 3 || !deny && fields[0] != "allow" || deny == (fields[1] == "-") {
			t.Fatalf("corpus.txt:%d: malformed line %q", n, line)
		}
		e := corpusEntry{line: n, deny: deny, shOnly: fields[0] == "deny-sh", rule: fields[1], command: decodeCorpus(fields[2])}
		if !jobPrefix(&e) {
			t.Fatalf("corpus.txt:%d: malformed @job prefix in %q", n, line)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeCorpus turns \n into a newline and \\n into a literal \n.
func decodeCorpus(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], `\\n`):
			sb.WriteString(`\n`)
			i += 2
		case strings.HasPrefix(s[i:], `\n`):
			sb.WriteByte('\n')
			i++
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String()
}

// TestCorpus checks every command of the corpus under ModeDeny with host
// access, judged as sh (the default) and as bash: no false negatives (each
// dangerous command is denied with its expected rule among the matches)
// and no false positives.
func TestCorpus(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	entries := readCorpus(t)
	var dangerous, benign, falseNeg, falsePos int
	rulesSeen := map[string]bool{}
	for _, sh := range []Shell{"", ShellBash} {
		for _, c := range entries {
			d := e.Decide(c.request(sh))
			got := make([]string, len(d.Matches))
			for i, m := range d.Matches {
				got[i] = m.Rule
			}
			if c.denies(d.Shell) {
				dangerous++
				rulesSeen[c.rule] = true
				if d.Allow || !slices.Contains(got, c.rule) {
					falseNeg++
					t.Errorf("corpus.txt:%d: false negative as %s: %q: allow=%v matches=%q, want deny with %s",
						c.line, d.Shell, c.command, d.Allow, got, c.rule)
				}
				continue
			}
			benign++
			if !d.Allow || d.Dangerous {
				falsePos++
				t.Errorf("corpus.txt:%d: false positive as %s: %q: %s", c.line, d.Shell, c.command, d.Reason)
			}
		}
	}
	for _, r := range Rules() {
		if !rulesSeen[r.ID] && r.Pack == "" { // pack rules: TestPackExamples
			t.Errorf("corpus has no dangerous command for rule %s", r.ID)
		}
	}
	if len(entries) < 300 {
		t.Errorf("corpus has %d commands, want at least 300", len(entries))
	}
	fpRate := 0.0
	if benign > 0 {
		fpRate = float64(falsePos) / float64(benign)
	}
	t.Logf("corpus: %d commands judged as sh and as bash: %d dangerous (%d false negatives), %d benign (%d false positives, rate %.2f%%)",
		len(entries), dangerous, falseNeg, benign, falsePos, 100*fpRate)
}
