package policy

import (
	"testing"
)

// TestMatchPositions checks that Match.Pos, Line and Col point at Text in
// the command, exactly where the nesting allows and at the outer word
// otherwise.
func TestMatchPositions(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	tests := []struct {
		cmd       string
		rule      string
		text      string
		pos       int
		line, col int
		via       string
		exact     bool // Text appears at Pos verbatim
	}{
		{"rm -rf /", ruleRmRoot, "rm -rf /", 0, 1, 1, "", true},
		{"echo hi; rm -rf /", ruleRmRoot, "rm -rf /", 9, 1, 10, "", true},
		{"echo hi\n  rm -rf ~", ruleRmRoot, "rm -rf ~", 10, 2, 3, "", true},
		{"sh -c 'rm -rf /'", ruleRmRoot, "rm -rf /", 7, 1, 8, "sh -c", true},
		{`bash -c "echo; reboot"`, ruleShutdown, "reboot", 15, 1, 16, "bash -c", true},
		{"sh -c 'bash -c \"reboot\"'", ruleShutdown, "reboot", 16, 1, 17, "sh -c > bash -c", true},
		{"eval 'mkfs.ext4 /dev/sda'", ruleMkfs, "mkfs.ext4 /dev/sda", 6, 1, 7, "eval", true},
		{"sh <<EOF\necho ok\nrm -rf /\nEOF", ruleRmRoot, "rm -rf /", 17, 3, 1, "sh <<", true},
		{"cat x > /dev/sda", ruleDDDevice, "cat x > /dev/sda", 0, 1, 1, "", true},
		{"ls\ncurl -s x | sh", rulePipeToShell, "curl -s x | sh", 3, 2, 1, "| sh", true},
		{`python3 -c 'import os; os.system("rm -rf /")'`, ruleRmRoot, "rm -rf /", 34, 1, 35, "python3 -c > os.system", true},
		{`python3 -c 'import os; os.system("rm -rf /")'`, ruleInlineCode, `os.system("rm -rf /")`, 23, 1, 24, "python3 -c", true},
		{"psql -c 'select 1; DROP TABLE x'", ruleSQLDestructive, "DROP TABLE x", 19, 1, 20, "psql", true},
		{":(){ :|:& };:", ruleForkBomb, ":(){ :|:& }", 0, 1, 1, "", true},
		{"find / | xargs rm -rf", ruleRmRoot, "xargs rm -rf", 9, 1, 10, "xargs", true},
		// Not verbatim: $'...' escapes; the match points at the outer word.
		{`sh -c $'rm -rf \x2f'`, ruleRmRoot, "rm -rf /", 6, 1, 7, "sh -c", false},
		// Decoded payloads point at the literal that was decoded.
		{"echo cm0gLXJmIC8= | base64 -d | sh", ruleRmRoot, "rm -rf /", 5, 1, 6, "| sh", false},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Parallel()
			d := e.Decide(Request{Command: tc.cmd, Origin: "manual"})
			var m *Match
			for i := range d.Matches {
				if d.Matches[i].Rule == tc.rule {
					m = &d.Matches[i]
					break
				}
			}
			if m == nil {
				t.Fatalf("no %s match in %+v", tc.rule, d.Matches)
			}
			if m.Text != tc.text || m.Pos != tc.pos || m.Line != tc.line || m.Col != tc.col || m.Via != tc.via {
				t.Errorf("match = %+v\nwant Text=%q Pos=%d Line=%d Col=%d Via=%q", *m, tc.text, tc.pos, tc.line, tc.col, tc.via)
			}
			if tc.exact && tc.cmd[m.Pos:m.Pos+len(m.Text)] != m.Text {
				t.Errorf("command at Pos %d is %q, want %q", m.Pos, tc.cmd[m.Pos:], m.Text)
			}
		})
	}
}

// TestMatchesOrderAndFields checks Matches lists every hit in command order
// with HostOnly set from the rule table.
func TestMatchesOrderAndFields(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	d := e.Decide(Request{Command: "git push -f; reboot; curl x | sh; rm -rf ~", Origin: "manual"})
	want := []struct {
		rule     string
		hostOnly bool
	}{{ruleGitDestructive, false}, {ruleShutdown, true}, {rulePipeToShell, false}, {ruleRmRoot, true}}
	if len(d.Matches) != len(want) {
		t.Fatalf("Matches = %+v, want %d", d.Matches, len(want))
	}
	for i, w := range want {
		if m := d.Matches[i]; m.Rule != w.rule || m.HostOnly != w.hostOnly {
			t.Errorf("Matches[%d] = %+v, want rule %s host-only %v", i, m, w.rule, w.hostOnly)
		}
		if i > 0 && d.Matches[i].Pos < d.Matches[i-1].Pos {
			t.Errorf("Matches out of order: %+v", d.Matches)
		}
	}
	if d.Rule != ruleGitDestructive {
		t.Errorf("Rule = %q, want the first match", d.Rule)
	}
}

// TestIsolated checks that an isolated backend skips host-only rules and
// only them.
func TestIsolated(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	tests := []struct {
		cmd   string
		allow bool   // without host access, in deny mode
		rule  string // first remaining match
	}{
		{"rm -rf /", true, ""},
		{"sudo reboot", true, ""},
		{"mkfs.ext4 /dev/sda; kill -9 -1; apt-get remove -y x", true, ""},
		{"curl x | sh", false, rulePipeToShell},
		{"rm -rf /; curl x | sh", false, rulePipeToShell},
		{"echo cm0gLXJmIC8= | base64 -d | sh", true, ""}, // decoded: rm -rf /, harm to the host only
		{"base64 -d payload.b64 | sh", false, ruleDecodedExec},
		{"git push --force", false, ruleGitDestructive},
		{"psql -c 'drop table x'", false, ruleSQLDestructive},
		{"docker run --privileged alpine", false, ruleDockerHost},
		{":(){ :|:& };:", false, ruleForkBomb},
		{"echo 'x", false, ruleUnparsable},
		{"$X -rf /", false, ruleUnresolved},
		{`python3 -c 'import os; os.system("rm -rf /")'`, true, ""},
		{`python3 -c 'import os; os.system("curl x | sh")'`, false, ruleInlineCode},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Parallel()
			d := e.Decide(Request{Command: tc.cmd, Origin: "manual", Mode: ModeDeny, Isolated: true})
			if d.Allow != tc.allow || d.Rule != tc.rule {
				t.Errorf("isolated: got Allow=%v Rule=%q (%s), want Allow=%v Rule=%q", d.Allow, d.Rule, d.Reason, tc.allow, tc.rule)
			}
			for _, m := range d.Matches {
				if m.HostOnly {
					t.Errorf("isolated: host-only match kept: %+v", m)
				}
			}
			if h := e.Decide(Request{Command: tc.cmd, Origin: "manual", Mode: ModeDeny}); h.Allow {
				t.Errorf("with host access: allowed: %+v", h)
			}
		})
	}
}

// TestDecideApproveRecordsMatches checks approve mode allows and records.
func TestDecideApproveRecordsMatches(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	d := e.Decide(Request{Command: "rm -rf ~; reboot", Origin: "manual", Mode: ModeApprove})
	if !d.Allow || !d.Dangerous || len(d.Matches) != 2 || d.Matches[0].Rule != ruleRmRoot || d.Matches[1].Rule != ruleShutdown {
		t.Errorf("approve: got %+v", d)
	}
	d = e.Decide(Request{Command: "ls -la", Origin: "manual", Mode: ModeApprove})
	if !d.Allow || d.Dangerous || d.Matches != nil {
		t.Errorf("approve harmless: got %+v", d)
	}
}

// TestDecideAllowlistFailClosed checks the fail-closed rules are never
// admitted, whatever else is allowlisted.
func TestDecideAllowlistFailClosed(t *testing.T) {
	t.Parallel()
	var all []string
	for _, r := range Rules() {
		if rl, _ := lookupRule(r.ID); rl.allowlistable() {
			all = append(all, r.ID)
		}
	}
	e := newEngine(t, Config{Allowlist: all})
	for _, cmd := range []string{"$X -rf /", "echo 'x", "sh -c \"$CMD\"", "reboot; ${!v}"} {
		if d := e.Decide(Request{Command: cmd, Origin: "manual", Mode: ModeAllowlist}); d.Allow {
			t.Errorf("allowlist admitted %q: %+v", cmd, d)
		}
	}
	if d := e.Decide(Request{Command: "rm -rf /; curl x | sh", Origin: "manual", Mode: ModeAllowlist}); !d.Allow {
		t.Errorf("allowlist refused allowlisted rules: %+v", d)
	}
}
