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
// benign ones refused. The later collections (packs2/*.tsv, packs3/*.tsv
// and packs4/*.tsv, gathered after the packs were written, split by the
// same hash) are reported on their own lines and totals ("packs2
// dev/heldout", ...); the "all" lines stay computed over the original
// files only, so they remain comparable.
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
	later := []string{"packs2", "packs3", "packs4", "packs5", "packs6", "packs7", "packs8", "packs9", "packs10", "packs11", "packs12", "packs13", "packs14", "packs15", "packs16"} // collections reported apart, in order
	laterTotal := map[string]map[string]*tally{}
	for _, dir := range later {
		more, err := filepath.Glob("testdata/independent/" + dir + "/*.tsv")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
		laterTotal[dir] = map[string]*tally{}
	}
	show := os.Getenv("SANDRUN_CORPUS_MISSES") != ""
	total := map[string]*tally{}
	for _, path := range files {
		name := strings.TrimPrefix(path, "testdata/independent/")
		sum := total
		if dir, _, ok := strings.Cut(name, "/"); ok && laterTotal[dir] != nil {
			sum = laterTotal[dir]
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
	for _, dir := range later {
		for _, split := range []string{"dev", "heldout"} {
			t.Log(corpusLine(dir, split, laterTotal[dir]))
		}
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
