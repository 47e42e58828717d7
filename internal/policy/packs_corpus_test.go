package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackCorpus judges the beyond-host corpus (testdata/independent/
// packs/*.tsv and beyond-host.tsv: commands from public sources, split
// dev/heldout by a hash before the packs were written) in deny mode, as
// sh, and reports per split the share of dangerous commands caught and of
// benign ones refused. The second collection (packs2/*.tsv, gathered after
// the packs were written, split by the same hash) is reported on its own
// lines and totals ("packs2 dev/heldout"); the "all" lines stay computed
// over the original files only, so they remain comparable.
// SANDRUN_CORPUS_MISSES=1 lists the dev split's misses and false positives
// (the heldout split's are never printed: it is the measurement, not
// material to tune on).
func TestPackCorpus(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	files, err := filepath.Glob("testdata/independent/packs/*.tsv")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "testdata/independent/beyond-host.tsv")
	second, err := filepath.Glob("testdata/independent/packs2/*.tsv")
	if err != nil {
		t.Fatal(err)
	}
	show := os.Getenv("SANDRUN_CORPUS_MISSES") != ""
	total, total2 := map[string]*tally{}, map[string]*tally{}
	for _, path := range append(files, second...) {
		name := strings.TrimPrefix(path, "testdata/independent/")
		sum := total
		if strings.HasPrefix(name, "packs2/") {
			sum = total2
		}
		groups := map[string]*tally{}
		for _, c := range readIndependent(t, name) {
			d := e.Decide(c.request(ShellSh))
			label := "benign"
			if c.deny {
				label = "dangerous"
			}
			for _, key := range []string{label + " " + c.split} {
				for _, m := range []map[string]*tally{groups, sum} {
					if m[key] == nil {
						m[key] = &tally{}
					}
					m[key].n++
					if !d.Allow {
						m[key].denied++
					}
				}
			}
			if show && c.split == "dev" && c.deny == d.Allow {
				t.Logf("MISS %s:%d %s: %s | %s", name, c.line, label, c.command, d.Reason)
			}
		}
		for _, split := range []string{"dev", "heldout"} {
			t.Log(corpusLine(name, split, groups))
		}
	}
	for _, split := range []string{"dev", "heldout"} {
		t.Log(corpusLine("all", split, total))
	}
	for _, split := range []string{"dev", "heldout"} {
		t.Log(corpusLine("packs2", split, total2))
	}
}

func corpusLine(name, split string, groups map[string]*tally) string {
	b, dg := groups["benign "+split], groups["dangerous "+split]
	if b == nil {
		b = &tally{}
	}
	if dg == nil {
		dg = &tally{}
	}
	return fmt.Sprintf("%s %s: benign %d, refused %d (%.2f%%); dangerous %d, caught %d (%.1f%%)",
		name, split, b.n, b.denied, b.rate(), dg.n, dg.denied, dg.rate())
}
