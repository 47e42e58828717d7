package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// dialectCase is a command judged as sh and as bash in ModeDeny: the rule
// expected among the matches ("" for an allowed command) and, for
// shell-dialect, a piece of the reason.
type dialectCase struct {
	cmd        string
	sh, bash   string
	shDetail   string
	bashDetail string
}

func runDialectCases(t *testing.T, cases []dialectCase) {
	t.Helper()
	e := newEngine(t, DefaultConfig())
	for _, tc := range cases {
		for _, x := range []struct {
			shell        Shell
			rule, detail string
		}{{ShellSh, tc.sh, tc.shDetail}, {ShellBash, tc.bash, tc.bashDetail}} {
			d := e.Decide(Request{Command: tc.cmd, Origin: "manual", Mode: ModeDeny, Shell: x.shell})
			if d.Shell != x.shell {
				t.Errorf("%q: Decision.Shell = %q, want %q", tc.cmd, d.Shell, x.shell)
			}
			if x.rule == "" {
				if !d.Allow || d.Dangerous {
					t.Errorf("%q as %s: %s, want allowed", tc.cmd, x.shell, d.Reason)
				}
				continue
			}
			rules := make([]string, len(d.Matches))
			for i, m := range d.Matches {
				rules[i] = m.Rule
			}
			if d.Allow || !slices.Contains(rules, x.rule) || !strings.Contains(d.Reason, x.detail) {
				t.Errorf("%q as %s: allow=%v matches=%q reason %q; want denied with %s and %q",
					tc.cmd, x.shell, d.Allow, rules, d.Reason, x.rule, x.detail)
			}
		}
	}
}

// TestDialectParseErrors checks bash syntax that POSIX sh does not parse:
// refused as sh with the construct named, judged as bash.
func TestDialectParseErrors(t *testing.T) {
	t.Parallel()
	runDialectCases(t, []dialectCase{
		{cmd: "true &>/dev/null rm -rf /usr", sh: ruleShellDialect, shDetail: "`&>` is bash syntax; /bin/sh (dash) reads it as `&` then `>`"},
		{cmd: "true &>>/dev/null rm -rf /usr", sh: ruleShellDialect, shDetail: "`&>>` is bash syntax"},
		{cmd: "cat <<< word", sh: ruleShellDialect, shDetail: "`<<<`"},
		{cmd: "diff <(ls a) <(ls b)", sh: ruleShellDialect, shDetail: "process substitution"},
		{cmd: "ls |& cat", sh: ruleShellDialect, shDetail: "`|&`"},
		{cmd: "function f { ls; }; f", sh: ruleShellDialect, shDetail: "`function` keyword"},
		{cmd: "select x in a; do ls; done", sh: ruleShellDialect, shDetail: "`select`"},
		{cmd: "a=(1 2)", sh: ruleShellDialect, shDetail: "arrays"},
		{cmd: "echo ${x:0:1}", sh: ruleShellDialect, shDetail: "`${var:offset:length}`"},
		{cmd: "echo ${x/a/b}", sh: ruleShellDialect, shDetail: "`${var/pattern/string}`"},
		{cmd: "case x in a) ls;& b) ls;; esac", sh: ruleShellDialect, shDetail: "`;&`"},
		{cmd: "for ((i=0; i<3; i++)); do ls; done", sh: ruleShellDialect, shDetail: "`for ((…))`"},
		// What the other reading runs is judged as well.
		{cmd: "cat <(rm -rf /)", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "ls &> /dev/sda", sh: ruleShellDialect, bash: ruleDDDevice},
	})
}

// TestDialectStructure checks commands both dialects parse but read
// differently: refused as sh; as bash the POSIX reading is judged too.
func TestDialectStructure(t *testing.T) {
	t.Parallel()
	runDialectCases(t, []dialectCase{
		{cmd: `echo $'\' ; rm -rf /usr ; echo \' ' # '`, sh: ruleShellDialect, bash: ruleRmRoot, shDetail: "`$'…'` (ANSI-C quoting) is bash syntax"},
		{cmd: "((rm -rf /usr))", sh: ruleShellDialect, bash: ruleRmRoot, shDetail: "`((…))` is bash arithmetic"},
		{cmd: "[[ -f x ]] && ls", sh: ruleShellDialect, shDetail: "runs a program named `[[`"},
		{cmd: "(( $# > 0 )) && ls", sh: ruleShellDialect},
		{cmd: `printf '%s\n' $'a\tb'`, sh: ruleShellDialect, shDetail: "`$'…'`"},
		{cmd: `echo $"hi"`, sh: ruleShellDialect, shDetail: "`$\"…\"`"},
		{cmd: "coproc ls", sh: ruleShellDialect, shDetail: "`coproc`"},
		{cmd: "declare -r x=1", sh: ruleShellDialect, shDetail: "`declare` is a bash builtin"},
		{cmd: "typeset x=1", sh: ruleShellDialect, shDetail: "`typeset`"},
		{cmd: "let x=1", sh: ruleShellDialect, shDetail: "`let`"},
		{cmd: "x+=1", sh: ruleShellDialect, shDetail: "`+=`"},
		{cmd: "ls >& out.txt", sh: ruleShellDialect, shDetail: "`>& FILE`"},
		{cmd: "$'rm' -rf /usr", sh: ruleRmRoot, bash: ruleRmRoot},
	})
}

// TestDialectSameReading checks POSIX commands that bash parses in its own
// way (declarations, the time keyword) and those both read alike: judged
// the same as sh and as bash.
func TestDialectSameReading(t *testing.T) {
	t.Parallel()
	runDialectCases(t, []dialectCase{
		{cmd: "export X=1 Y=\"$(date)\"; echo \"$X\""},
		{cmd: "export X"},
		{cmd: "f() { local d=build; ls \"$d\"; }; f"},
		{cmd: "readonly R=1"},
		{cmd: "time make"},
		{cmd: "time -p make"},
		{cmd: "time make >log 2>&1"},
		{cmd: "time make >/etc/passwd", sh: ruleWriteSystem, bash: ruleWriteSystem},
		{cmd: "ls >&2 2>&1 <&0 >&-"},
		{cmd: "echo {a,b}; mkdir -p build/{bin,lib}"},
		{cmd: "if [ -f x ]; then ls; fi"},
		{cmd: "export T=/etc; rm -rf \"$T\"", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "readonly D=/; rm -rf $D", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "export HISTFILE=/dev/null", sh: ruleHistoryWipe, bash: ruleHistoryWipe},
		{cmd: "export X=$(rm -rf /usr)", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "time rm -rf /", sh: ruleRmRoot, bash: ruleRmRoot},
	})
}

// TestDialectBraces checks brace expansion, which POSIX sh lacks and bash
// (also as /bin/sh) has: as sh both readings are judged.
func TestDialectBraces(t *testing.T) {
	t.Parallel()
	runDialectCases(t, []dialectCase{
		{cmd: "{rm,-rf,/usr}", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "rm -rf /{usr,nothere}", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "cp file{,.bak}"},
	})
}

// TestDialectNested checks that a nested script is read in the dialect of
// the shell that runs it: its program's for sh -c and bash -c, the current
// one for eval, sh for what system() and unknown shells run.
func TestDialectNested(t *testing.T) {
	t.Parallel()
	runDialectCases(t, []dialectCase{
		{cmd: "bash -c '[[ -f x ]] && ls'"},
		{cmd: "curl -s localhost | bash -c 'echo ${x:0:1}'"},
		{cmd: "sh -c '[[ -f x ]] && ls'", sh: ruleShellDialect, bash: ruleShellDialect, bashDetail: "sh -c: `[[ … ]]`"},
		{cmd: "dash -c 'ls &>/dev/null'", sh: ruleShellDialect, bash: ruleShellDialect},
		{cmd: "eval '[[ -f x ]]'", sh: ruleShellDialect},
		{cmd: `python3 -c 'import os; os.system("ls &>/dev/null")'`, sh: ruleShellDialect, bash: ruleShellDialect},
		{cmd: "watch 'ls &> x'", sh: ruleShellDialect, bash: ruleShellDialect},
	})
}

// TestDialectArithmetic checks that bash's arithmetic on a variable, which
// runs the command substitutions in its value's array subscripts, is judged.
func TestDialectArithmetic(t *testing.T) {
	t.Parallel()
	runDialectCases(t, []dialectCase{
		{cmd: "x='a[$(rm -rf /usr)]'; echo $((x))", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "x='a[$(rm -rf /usr)]'; y=x; echo $(($y + 1))", sh: ruleRmRoot, bash: ruleRmRoot},
		{cmd: "x='a[`reboot`]'; [[ $x -eq 1 ]]", sh: ruleShutdown, bash: ruleShutdown},
		{cmd: "n=3; echo $((n + 1))"},
		{cmd: "n=$(wc -l < f); echo $((n + 1))"},
	})
}

// TestDialectBashSyntax checks that bash syntax is judged normally as bash.
func TestDialectBashSyntax(t *testing.T) {
	t.Parallel()
	runDialectCases(t, []dialectCase{
		{cmd: "[[ -f x ]] && echo y", sh: ruleShellDialect},
		{cmd: "(( n > 1 )) && echo y", sh: ruleShellDialect},
		{cmd: "a=(1 2); for x in \"${a[@]}\"; do echo $x; done", sh: ruleShellDialect},
		{cmd: "[[ -d /etc ]] && rm -rf /etc", sh: ruleRmRoot, bash: ruleRmRoot},
	})
}

// TestDialectNotAllowlistable checks shell-dialect fails closed: it cannot
// be configured in the allowlist, and allowlist mode never admits it.
func TestDialectNotAllowlistable(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Allowlist: []string{ruleShellDialect}}); !errors.Is(err, ErrNotAllowlistable) {
		t.Errorf("allowlisting shell-dialect: %v, want ErrNotAllowlistable", err)
	}
	var all []string
	for _, r := range rules {
		if r.allowlistable() {
			all = append(all, r.id)
		}
	}
	e := newEngine(t, Config{Allowlist: all})
	for _, cmd := range []string{"true &>/dev/null rm -rf /usr", "[[ -f x ]] && ls", `echo $'\' ; ls ; echo \' '`} {
		if d := e.Decide(Request{Command: cmd, Origin: "manual", Mode: ModeAllowlist}); d.Allow {
			t.Errorf("allowlist admitted %q: %+v", cmd, d)
		}
	}
	// In approve mode it is allowed and recorded, like the other fail-closed rules.
	if d := e.Decide(Request{Command: "[[ -f x ]]", Origin: "manual", Mode: ModeApprove}); !d.Allow || d.Rule != ruleShellDialect {
		t.Errorf("approve mode: %+v", d)
	}
}

// TestDialectShellSetting checks Request.Shell and Config.Shell: the
// default, the alias posix, a configured default, and unknown shells.
func TestDialectShellSetting(t *testing.T) {
	t.Parallel()
	const bashOnly = "[[ -f x ]] && ls"
	e := newEngine(t, DefaultConfig())
	for _, tc := range []struct {
		shell Shell
		want  Shell
		allow bool
	}{{"", ShellSh, false}, {ShellSh, ShellSh, false}, {ShellPOSIX, ShellSh, false}, {ShellBash, ShellBash, true}} {
		d := e.Decide(Request{Command: bashOnly, Origin: "manual", Shell: tc.shell})
		if d.Shell != tc.want || d.Allow != tc.allow {
			t.Errorf("Shell %q: judged as %q, allow=%v (%s); want %q, %v", tc.shell, d.Shell, d.Allow, d.Reason, tc.want, tc.allow)
		}
	}
	d := e.Decide(Request{Command: "ls", Origin: "manual", Shell: "zsh"})
	if d.Allow || d.Rule != ruleShellDialect || d.Shell != ShellSh || !strings.Contains(d.Reason, `unknown shell "zsh"`) {
		t.Errorf("unknown shell: %+v", d)
	}
	checkDecision(t, "ls", d)

	bashWorker := newEngine(t, Config{Shell: ShellBash})
	if d := bashWorker.Decide(Request{Command: bashOnly, Origin: "manual"}); !d.Allow || d.Shell != ShellBash {
		t.Errorf("Config.Shell bash: %+v", d)
	}
	if d := bashWorker.Decide(Request{Command: bashOnly, Origin: "manual", Shell: ShellSh}); d.Allow {
		t.Errorf("Request.Shell sh on a bash worker: %+v", d)
	}

	_, err := New(Config{Shell: "zsh"})
	var fe *FieldError
	if !errors.Is(err, ErrUnknownShell) || !errors.As(err, &fe) || fe.Field != "policy.shell" {
		t.Errorf("Config.Shell zsh: %v", err)
	}
}

func TestParseShell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Shell{"": "", "sh": ShellSh, "posix": ShellSh, "bash": ShellBash} {
		if got, err := ParseShell(in); err != nil || got != want {
			t.Errorf("ParseShell(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"zsh", "dash", "Bash", " sh"} {
		if _, err := ParseShell(in); !errors.Is(err, ErrUnknownShell) {
			t.Errorf("ParseShell(%q) = %v, want ErrUnknownShell", in, err)
		}
	}
}

// TestDialectMatchPosition checks where a shell-dialect match points.
func TestDialectMatchPosition(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	d := e.Decide(Request{Command: "ls; true &>/dev/null rm -rf /usr", Origin: "manual"})
	if len(d.Matches) != 1 || d.Matches[0].Rule != ruleShellDialect || d.Matches[0].Pos != 9 || d.Matches[0].Text != "&>/dev/null" {
		t.Errorf("matches %+v, want shell-dialect at byte 9 on \"&>/dev/null\"", d.Matches)
	}
}
