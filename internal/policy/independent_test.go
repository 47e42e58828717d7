package policy

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// independentEntry is one line of testdata/independent/*.tsv: commands
// taken from public sources this project did not write, labelled by the
// rules in testdata/independent/README.md, split dev/heldout by a hash of
// the command before the detector ever judged them.
type independentEntry struct {
	corpusEntry
	split, source string
}

func readIndependent(t *testing.T, name string) []independentEntry {
	t.Helper()
	f, err := os.Open("testdata/independent/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []independentEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.SplitN(line, "\t", 4)
		if len(fields) != 4 || fields[0] != "benign" && fields[0] != "dangerous" || fields[1] != "dev" && fields[1] != "heldout" {
			t.Fatalf("%s:%d: malformed line %q", name, n, line)
		}
		e := independentEntry{corpusEntry: corpusEntry{line: n, deny: fields[0] == "dangerous", command: decodeCorpus(fields[3])}, split: fields[1], source: fields[2]}
		if !jobPrefix(&e.corpusEntry) {
			t.Fatalf("%s:%d: malformed @job prefix", name, n)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tally counts one group's decisions.
type tally struct{ n, denied int }

func (t tally) rate() float64 {
	if t.n == 0 {
		return 0
	}
	return 100 * float64(t.denied) / float64(t.n)
}

// TestIndependentCorpus judges the independent corpus in deny mode, as sh,
// and prints the false-positive rate on its benign commands and the share
// of its dangerous ones caught, per split. The benign false-positive rate
// stays at or below 2% on each split; the catch rate of the dangerous
// commands inside the detector's scope (host damage; the "outside the
// project" tier is counted apart, see the README) stays at or above the
// floor recorded in docs/BENCHMARKS.md.
func TestIndependentCorpus(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	for _, file := range []string{"host.tsv", "beyond-host.tsv"} {
		groups := map[string]*tally{}
		for _, c := range readIndependent(t, file) {
			d := e.Decide(c.request(ShellSh))
			label := "benign"
			switch {
			case c.deny && strings.HasSuffix(c.source, ":rm-outside"):
				label = "dangerous outside the project"
			case c.deny:
				label = "dangerous"
			}
			key := label + " " + c.split
			if groups[key] == nil {
				groups[key] = &tally{}
			}
			g := groups[key]
			g.n++
			if !d.Allow {
				g.denied++
			}
			if file == "host.tsv" && testing.Verbose() && (c.deny == d.Allow) && label != "dangerous outside the project" {
				t.Logf("%s:%d %s %s: %s: %s", file, c.line, c.split, label, c.command, d.Reason)
			}
		}
		for _, split := range []string{"dev", "heldout"} {
			b, dg, out := groups["benign "+split], groups["dangerous "+split], groups["dangerous outside the project "+split]
			if b == nil {
				b = &tally{}
			}
			if dg == nil {
				dg = &tally{}
			}
			line := fmt.Sprintf("%s %s: benign %d, refused %d (false positives %.2f%%); dangerous %d, caught %d (%.1f%%)",
				file, split, b.n, b.denied, b.rate(), dg.n, dg.denied, dg.rate())
			if out != nil {
				line += fmt.Sprintf("; outside the project %d, caught %d", out.n, out.denied)
			}
			t.Log(line)
			if file != "host.tsv" {
				continue // the later issue's material: printed, not held to a floor yet
			}
			if b.rate() > 2 {
				t.Errorf("%s %s: benign false-positive rate %.2f%% is above 2%%", file, split, b.rate())
			}
			if dg.rate() < 95 {
				t.Errorf("%s %s: %.1f%% of the dangerous commands caught, below the 95%% floor", file, split, dg.rate())
			}
		}
	}
}
