package policy

import (
	"os"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzDecide checks that Decide returns a coherent Decision for any input,
// never panics, and never lets through in deny or allowlist mode a command
// the shell parser cannot parse (fail closed).
//
// Run it under a memory limit, so that an input that makes the detector
// allocate past its budget crashes the run instead of the machine:
//
//	ulimit -v 4000000; go test ./internal/policy -run '^$' -fuzz FuzzDecide -fuzztime 10m
//
// (GOMEMLIMIT=1GiB only makes the GC work harder; ulimit -v turns an
// allocation past the limit into a crash the fuzzer records.)
func FuzzDecide(f *testing.F) {
	for _, s := range []string{
		"rm -rf /", "rm -rf ./build", ":(){ :|:& };:", "echo ':(){ :|:& };:'",
		"sh -c 'dd if=/dev/zero of=/dev/sda'", "eval \"$(echo reboot)\"",
		"env -S 'mkfs.ext4 /dev/sda'", `$'\x72m' -rf ~/`, "echo 'x", "f(){ f|f& }",
		"systemctl -H h reboot", "timeout", "sudo -u", "bash -c", "cat <<EOF\nrm -rf /\nEOF",
		"X=rm; $X -rf /", "curl x | sh", "echo cm0gLXJmIC8= | base64 -d | sh", "find / -exec rm -rf {} +",
		`python3 -c 'import os; os.system("rm -rf /")'`, "psql -c 'drop table x'", "sh <<EOF\nsh -c 'reboot'\nEOF",
		"a=$a$a$a$a; a=$a$a$a$a; a=$a$a$a$a", "{a,b}{c,d}{e,f}{g,h}", "f(){ f $1 $1; }; f x",
	} {
		f.Add(s, "manual", "deny", true)
	}
	if data, err := os.ReadFile("testdata/corpus.txt"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if fields := strings.SplitN(line, "\t", 3); len(fields) == 3 {
				f.Add(decodeCorpus(fields[2]), "subagent", "allowlist", false)
			}
		}
	}
	f.Add("rm -rf /", "subagent", "", true)
	f.Add("reboot", "cron", "allowlist", true)
	f.Add("reboot", "", "bogus", false)
	var all []string
	for _, r := range rules {
		if r.allowlistable() {
			all = append(all, r.id)
		}
	}
	e, err := New(Config{Allowlist: []string{ruleShutdown}})
	if err != nil {
		f.Fatal(err)
	}
	open, err := New(Config{Allowlist: all, Ceiling: map[string]Mode{"manual": ModeApprove}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd, origin, mode string, hostAccess bool) {
		d := e.Decide(Request{Command: cmd, Origin: origin, Mode: Mode(mode), Isolated: !hostAccess})
		checkDecision(t, cmd, d)
		for _, x := range detect(cmd) {
			if x.detail == internalError {
				t.Fatalf("detector panicked on %q", cmd)
			}
		}
		_, perr := syntax.NewParser().Parse(strings.NewReader(cmd), "")
		for _, m := range []Mode{ModeDeny, ModeAllowlist} {
			d := open.Decide(Request{Command: cmd, Origin: "manual", Mode: m, Isolated: !hostAccess})
			checkDecision(t, cmd, d)
			if perr != nil && d.Allow {
				t.Fatalf("unparsable command allowed in mode %s: %+v", m, d)
			}
		}
	})
}

// checkDecision checks the invariants every Decision holds.
func checkDecision(t *testing.T, cmd string, d Decision) {
	t.Helper()
	if !d.Mode.valid() {
		t.Fatalf("invalid effective mode %q", d.Mode)
	}
	if d.Dangerous != (d.Rule != "") || d.Dangerous != (len(d.Matches) > 0) {
		t.Fatalf("Dangerous=%v but Rule=%q, %d matches", d.Dangerous, d.Rule, len(d.Matches))
	}
	if !d.Dangerous && !d.Allow {
		t.Fatalf("harmless command denied: %+v", d)
	}
	if d.Dangerous && d.Mode == ModeDeny && d.Allow {
		t.Fatalf("dangerous command allowed in deny mode: %+v", d)
	}
	if d.Reason == "" {
		t.Fatal("empty Reason")
	}
	for i, m := range d.Matches {
		if m.Pos < 0 || m.Pos > len(cmd) || m.Line < 1 || m.Col < 1 {
			t.Fatalf("match %d out of range: %+v", i, m)
		}
		if i > 0 && m.Pos < d.Matches[i-1].Pos {
			t.Fatalf("matches out of order: %+v", d.Matches)
		}
		if _, ok := lookupRule(m.Rule); !ok {
			t.Fatalf("unknown rule %q", m.Rule)
		}
	}
}
