package policy

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestZZDumpCorpus(t *testing.T) {
	out := os.Getenv("DUMP_CORPUS")
	if out == "" {
		t.Skip()
	}
	e := newEngine(t, DefaultConfig())
	var sb strings.Builder
	for _, sh := range []Shell{"", ShellBash} {
		for _, c := range readCorpus(t) {
			d := e.Decide(Request{Command: c.command, Origin: "manual", Mode: ModeDeny, Shell: sh})
			var rules []string
			for _, m := range d.Matches {
				rules = append(rules, m.Rule)
			}
			fmt.Fprintf(&sb, "%q\t%s\t%v\t%v\n", c.command, sh, d.Allow, rules)
		}
	}
	if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestZZProbe(t *testing.T) {
	p := os.Getenv("PROBE")
	if p == "" {
		t.Skip()
	}
	e := newEngine(t, DefaultConfig())
	for _, c := range strings.Split(p, "\n") {
		d := e.Decide(Request{Command: c, Origin: "manual", Mode: ModeDeny})
		t.Logf("%q => allow=%v %s", c, d.Allow, d.Reason)
	}
}
