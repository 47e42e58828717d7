package policy

import (
	"slices"
	"strings"
	"testing"
)

// jobCase is a job (command, cwd, env) and the verdict it must get under
// ModeDeny with host access: the rule that must be among the matches, or
// "" for a clean allow.
type jobCase struct {
	name   string
	cmd    string
	cwd    string
	env    map[string]string
	secret []string
	want   string
}

func runJobCases(t *testing.T, cases []jobCase) {
	t.Helper()
	e := newEngine(t, DefaultConfig())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, sh := range []Shell{ShellSh, ShellBash} {
				d := e.Decide(Request{Command: tc.cmd, Origin: "manual", Mode: ModeDeny, Shell: sh,
					Cwd: tc.cwd, Env: tc.env, SecretEnv: tc.secret})
				got := make([]string, len(d.Matches))
				for i, m := range d.Matches {
					got[i] = m.Rule
				}
				switch {
				case tc.want == "" && (!d.Allow || d.Dangerous):
					t.Errorf("as %s: %q cwd=%q env=%v: want allowed, got %s", sh, tc.cmd, tc.cwd, tc.env, d.Reason)
				case tc.want != "" && (d.Allow || !slices.Contains(got, tc.want)):
					t.Errorf("as %s: %q cwd=%q env=%v: allow=%v matches=%q, want deny with %s", sh, tc.cmd, tc.cwd, tc.env, d.Allow, got, tc.want)
				}
			}
		})
	}
}

// TestJobCwd checks that relative paths are judged in the job's directory.
func TestJobCwd(t *testing.T) {
	t.Parallel()
	runJobCases(t, []jobCase{
		{name: "root star", cmd: "rm -rf *", cwd: "/", want: ruleRmRoot},
		{name: "root dot", cmd: "rm -rf .", cwd: "/", want: ruleRmRoot},
		{name: "root dot star", cmd: "rm -rf ./*", cwd: "/", want: ruleRmRoot},
		{name: "root relative", cmd: "rm -rf etc", cwd: "/", want: ruleRmRoot},
		{name: "etc star", cmd: "rm -rf *", cwd: "/etc", want: ruleRmRoot},
		{name: "up to root", cmd: "rm -rf ../..", cwd: "/tmp/x", want: ruleRmRoot},
		{name: "unclean cwd", cmd: "rm -rf *", cwd: "/tmp/../usr//./", want: ruleRmRoot},
		{name: "proc root cwd", cmd: "rm -rf ./*", cwd: "/proc/self/root", want: ruleRmRoot},
		{name: "home dir", cmd: "rm -rf *", cwd: "/home/alice", want: ruleRmRoot},
		{name: "cd up", cmd: "cd .. && rm -rf *", cwd: "/usr", want: ruleRmRoot},
		{name: "pwd", cmd: `rm -rf "$PWD"`, cwd: "/var", want: ruleRmRoot},
		{name: "find delete", cmd: "find . -delete", cwd: "/", want: ruleRmRoot},
		{name: "find delete by name", cmd: "find . -name x -delete", cwd: "/", want: ruleWriteSystem},
		{name: "find delete by name in a project", cmd: "find . -name x -delete", cwd: "/srv/app"},
		{name: "redirect", cmd: "echo x > passwd", cwd: "/etc", want: ruleWriteSystem},
		{name: "chmod", cmd: "chmod -R 777 .", cwd: "/", want: ruleChmodSystem},
		{name: "nested sh", cmd: "sh -c 'rm -rf *'", cwd: "/", want: ruleRmRoot},
		{name: "proc self cwd", cmd: "rm -rf /proc/self/cwd/*", cwd: "/", want: ruleRmRoot},
		// Benign.
		{name: "scratch star", cmd: "rm -rf *", cwd: "/tmp/x"},
		{name: "build dir", cmd: "rm -rf build", cwd: "/tmp/work"},
		{name: "project", cmd: "rm -rf ./node_modules dist", cwd: "/home/alice/proj"},
		{name: "no cwd", cmd: "rm -rf *"},
		{name: "relative cwd", cmd: "rm -rf *", cwd: "work"},
		{name: "cd away", cmd: "cd /tmp/x && rm -rf *", cwd: "/"},
	})
}

// TestJobEnvValues checks that the job's variables hold their values for
// the detector, and a secret's value is unknown.
func TestJobEnvValues(t *testing.T) {
	t.Parallel()
	runJobCases(t, []jobCase{
		{name: "quoted", cmd: `rm -rf "$T"`, env: map[string]string{"T": "/usr"}, want: ruleRmRoot},
		{name: "braced", cmd: `rm -rf ${T}/*`, env: map[string]string{"T": "/etc"}, want: ruleRmRoot},
		{name: "program", cmd: `$RM -rf /`, env: map[string]string{"RM": "rm"}, want: ruleRmRoot},
		{name: "nested", cmd: `sh -c 'rm -rf "$T"'`, env: map[string]string{"T": "/"}, want: ruleRmRoot},
		{name: "dd", cmd: `dd if=/dev/zero of=$DISK`, env: map[string]string{"DISK": "/dev/sda"}, want: ruleDDDevice},
		{name: "split", cmd: `rm -rf $DIRS`, env: map[string]string{"DIRS": "/tmp/a /"}, want: ruleRmRoot},
		{name: "cd var", cmd: `cd "$D" && rm -rf *`, env: map[string]string{"D": "/"}, want: ruleRmRoot},
		{name: "home value", cmd: `rm -rf "$HOME"`, env: map[string]string{"HOME": "/usr"}, want: ruleRmRoot},
		{name: "home still home", cmd: `rm -rf "$HOME"`, env: map[string]string{"HOME": "/tmp/h"}, want: ruleRmRoot},
		{name: "tilde is job home", cmd: `rm -rf ~/etc`, env: map[string]string{"HOME": "/"}, want: ruleRmRoot},
		{name: "program unknown secret", cmd: `$RM -rf /tmp/x`, env: map[string]string{"RM": "sealed"}, secret: []string{"RM"}, want: ruleUnresolved},
		// Benign.
		{name: "home cache", cmd: `rm -rf ~/cache`, env: map[string]string{"HOME": "/tmp/h"}},
		{name: "home var cache", cmd: `rm -rf "$HOME/cache"`, env: map[string]string{"HOME": "/tmp/h"}},
		{name: "scratch", cmd: `rm -rf "$T"`, env: map[string]string{"T": "/tmp/scratch"}},
		{name: "reassigned", cmd: `T=/tmp/x; rm -rf "$T"`, env: map[string]string{"T": "/"}},
		// The submitter chose the sealed value: it may be /usr.
		{name: "secret value", cmd: `rm -rf "$TOKEN"`, env: map[string]string{"TOKEN": "sealed"}, secret: []string{"TOKEN"}, want: ruleRmRoot},
		{name: "secret value below a fixed name", cmd: `rm -rf "$TOKEN/build"`, env: map[string]string{"TOKEN": "sealed"}, secret: []string{"TOKEN"}},
		{name: "pwd ignored", cmd: `rm -rf "$PWD"`, cwd: "/tmp/w", env: map[string]string{"PWD": "/"}},
		{name: "plain vars", cmd: `echo "$A" && make -j"$JOBS"`, env: map[string]string{"A": "x", "JOBS": "4", "PATH": "/usr/bin:/bin"}},
	})
}

// TestJobEnvCode checks the variables that make something run code: each
// is refused with env-code, which no allowlist admits, and the reason
// names the variable but never its value.
func TestJobEnvCode(t *testing.T) {
	t.Parallel()
	refused := []string{"BASH_ENV", "ENV", "PS4", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "LD_PRELOAD",
		"LD_LIBRARY_PATH", "LD_AUDIT", "IFS", "PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "PERL5LIB", "RUBYOPT",
		"NODE_OPTIONS", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GCONV_PATH", "MALLOC_CHECK_", "BASH_FUNC_ls%%",
		"GIT_CONFIG_COUNT", "CDPATH", "GLIBC_TUNABLES", "JAVA_TOOL_OPTIONS", "DYLD_INSERT_LIBRARIES"}
	var cases []jobCase
	for _, k := range refused {
		cases = append(cases,
			jobCase{name: k, cmd: "true", env: map[string]string{k: "s3cr3t-value"}, want: ruleEnvCode},
			jobCase{name: k + " secret", cmd: "true", env: map[string]string{k: "sealed"}, secret: []string{k}, want: ruleEnvCode})
	}
	cases = append(cases,
		jobCase{name: "PATH cwd first", cmd: "ls", env: map[string]string{"PATH": ".:/usr/bin"}, want: ruleEnvCode},
		jobCase{name: "PATH empty entry", cmd: "ls", env: map[string]string{"PATH": "/usr/bin::/bin"}, want: ruleEnvCode},
		jobCase{name: "PATH other dir", cmd: "ls", env: map[string]string{"PATH": "/tmp/bin:/usr/bin"}, want: ruleEnvCode},
		jobCase{name: "PATH secret", cmd: "ls", env: map[string]string{"PATH": "sealed"}, secret: []string{"PATH"}, want: ruleEnvCode},
		jobCase{name: "function value", cmd: "ls", env: map[string]string{"X": "() { rm -rf /; }"}, want: ruleEnvCode},
		jobCase{name: "pager program", cmd: "git log", env: map[string]string{"GIT_PAGER": "sh -c 'rm -rf /'"}, want: ruleEnvCode},
		jobCase{name: "warnings module", cmd: "python3 x.py", env: map[string]string{"PYTHONWARNINGS": "ignore::evil.W"}, want: ruleEnvCode},
		// Benign.
		jobCase{name: "PATH standard", cmd: "ls", env: map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin/"}},
		jobCase{name: "pager cat", cmd: "git log", env: map[string]string{"GIT_PAGER": "cat", "PAGER": "cat"}},
		jobCase{name: "editor true", cmd: "git rebase --continue", env: map[string]string{"GIT_EDITOR": "true"}},
		jobCase{name: "warnings ignore", cmd: "python3 x.py", env: map[string]string{"PYTHONWARNINGS": "ignore"}},
		jobCase{name: "python plain", cmd: "python3 x.py", env: map[string]string{"PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8"}},
	)
	runJobCases(t, cases)

	all := make([]string, 0, len(Rules()))
	for _, r := range Rules() {
		if r.ID != ruleEnvCode {
			all = append(all, r.ID)
		}
	}
	all = slices.DeleteFunc(all, func(id string) bool { r, _ := lookupRule(id); return !r.allowlistable() })
	e := newEngine(t, Config{Allowlist: all, Ceiling: map[string]Mode{"manual": ModeApprove}})
	d := e.Decide(Request{Command: "true", Origin: "manual", Mode: ModeAllowlist, Env: map[string]string{"LD_PRELOAD": "/tmp/evil.so"}})
	if d.Allow || d.Rule != ruleEnvCode {
		t.Errorf("allowlist mode with every allowlistable rule: %+v, want env-code denied", d)
	}
	if strings.Contains(d.Reason, "evil") || len(d.Matches) != 1 || d.Matches[0].Text != "LD_PRELOAD" || d.Matches[0].Pos != 0 {
		t.Errorf("reason %q matches %+v: want the name, not the value", d.Reason, d.Matches)
	}
	if d := e.Decide(Request{Command: "true", Origin: "manual", Mode: ModeApprove, Env: map[string]string{"BASH_ENV": "/tmp/x"}}); !d.Allow || !d.Dangerous {
		t.Errorf("approve mode: %+v, want allowed as dangerous", d)
	}
}

// TestJobEnvTable checks that every table entry has a reason and that no
// name is listed twice.
func TestJobEnvTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range envCodes {
		if c.reason == "" || strings.Contains(c.reason, "\n") {
			t.Errorf("%s: want a one-line reason, got %q", c.name, c.reason)
		}
		if seen[c.name] {
			t.Errorf("%s listed twice", c.name)
		}
		seen[c.name] = true
	}
}

// TestJobBenignDecisions checks the decisions on the everyday commands the
// issue names.
func TestJobBenignDecisions(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	tests := []struct {
		req   Request
		allow bool
		rule  string
	}{
		{Request{Command: "rm -rf build", Cwd: "/tmp/work"}, true, ""},
		{Request{Command: "rm -rf ~/cache", Env: map[string]string{"HOME": "/tmp/h"}}, true, ""},
		{Request{Command: "git push --force-with-lease", Mode: ModeApprove}, true, ruleGitDestructive},
		{Request{Command: "find ~ -name '*.tmp' -delete"}, true, ""},
		{Request{Command: "find ~ -delete"}, false, ruleRmRoot},
		{Request{Command: "kill -HUP 1"}, true, ""},
		{Request{Command: "kill -TERM 1"}, false, ruleKillAll},
	}
	for _, tc := range tests {
		tc.req.Origin = "manual"
		d := e.Decide(tc.req)
		if d.Allow != tc.allow || d.Rule != tc.rule {
			t.Errorf("%q: allow=%v rule=%q (%s), want allow=%v rule=%q", tc.req.Command, d.Allow, d.Rule, d.Reason, tc.allow, tc.rule)
		}
	}
}
