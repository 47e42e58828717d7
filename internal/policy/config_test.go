package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{ModeDeny, ModeAllowlist, ModeApprove} {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	for _, s := range []string{"", "x", "Deny", " deny", "allow"} {
		_, err := ParseMode(s)
		if !errors.Is(err, ErrUnknownMode) {
			t.Errorf("ParseMode(%q) err = %v, want ErrUnknownMode", s, err)
			continue
		}
		for _, want := range []string{`"` + s + `"`, "deny", "allowlist", "approve"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseMode(%q) err %q does not name %q", s, err, want)
			}
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	want := map[string]Mode{"manual": ModeApprove, "cron": ModeApprove, "batch": ModeApprove, "subagent": ModeAllowlist}
	if len(c.Ceiling) != len(want) {
		t.Errorf("DefaultConfig().Ceiling = %v, want %v", c.Ceiling, want)
	}
	for o, m := range want {
		if c.Ceiling[o] != m || DefaultCeiling(o) != m {
			t.Errorf("ceiling[%s] = %q, DefaultCeiling = %q, want %q", o, c.Ceiling[o], DefaultCeiling(o), m)
		}
	}
	if DefaultCeiling("martian") != ModeDeny {
		t.Errorf("DefaultCeiling(unknown) = %q, want deny", DefaultCeiling("martian"))
	}
	if len(c.Allowlist) != 0 {
		t.Errorf("DefaultConfig().Allowlist = %v, want empty", c.Allowlist)
	}
	if _, err := New(c); err != nil {
		t.Errorf("New(DefaultConfig()): %v", err)
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings, one per expected problem, in order
		is   []error
	}{
		{"unknown mode", Config{Ceiling: map[string]Mode{"subagent": "x"}},
			[]string{`policy.ceiling.subagent: unknown mode "x"`}, []error{ErrUnknownMode}},
		{"empty mode", Config{Ceiling: map[string]Mode{"cron": ""}},
			[]string{`policy.ceiling.cron: unknown mode ""`}, []error{ErrUnknownMode}},
		{"unknown origin", Config{Ceiling: map[string]Mode{"daemon": ModeDeny}},
			[]string{`policy.ceiling.daemon: unknown origin "daemon"`}, []error{ErrUnknownOrigin}},
		{"unknown rule", Config{Allowlist: []string{ruleMkfs, ruleShutdown, "foo"}},
			[]string{`policy.allowlist[2]: unknown rule "foo"`}, []error{ErrUnknownRule}},
		{"unparsable not allowlistable", Config{Allowlist: []string{ruleUnparsable}},
			[]string{`policy.allowlist[0]: rule cannot be allowlisted: "unparsable"`}, []error{ErrNotAllowlistable}},
		{"unresolved-command not allowlistable", Config{Allowlist: []string{ruleShutdown, ruleUnresolved}},
			[]string{`policy.allowlist[1]: rule cannot be allowlisted: "unresolved-command"`}, []error{ErrNotAllowlistable}},
		{"all problems, stable order",
			Config{Ceiling: map[string]Mode{"zz": ModeDeny, "batch": "nope", "aa": ModeDeny}, Allowlist: []string{"x", ruleRmRoot, "y"}},
			[]string{"policy.ceiling.aa:", "policy.ceiling.batch:", "policy.ceiling.zz:", "policy.allowlist[0]:", "policy.allowlist[2]:"},
			[]error{ErrUnknownOrigin, ErrUnknownMode, ErrUnknownRule}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := New(tc.cfg)
			if err == nil || e != nil {
				t.Fatalf("New(%+v) = %v, %v; want an error", tc.cfg, e, err)
			}
			msg := err.Error()
			last := -1
			for _, w := range tc.want {
				i := strings.Index(msg, w)
				if i < 0 {
					t.Errorf("error %q does not contain %q", msg, w)
				} else if i < last {
					t.Errorf("error %q: %q out of order", msg, w)
				}
				last = i
			}
			if n := strings.Count(msg, "\n") + 1; n != len(tc.want) {
				t.Errorf("error %q reports %d problems, want %d", msg, n, len(tc.want))
			}
			for _, target := range tc.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%q, %v) = false", msg, target)
				}
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "policy.") {
				t.Errorf("errors.As(%q, *FieldError) = %v", msg, fe)
			}
		})
	}
}

func TestNewCopiesConfig(t *testing.T) {
	t.Parallel()
	cfg := Config{Ceiling: map[string]Mode{"manual": ModeApprove}, Allowlist: []string{ruleShutdown}}
	e := newEngine(t, cfg)
	cfg.Ceiling["manual"] = ModeDeny
	cfg.Allowlist[0] = ruleRmRoot
	if d := e.Decide(Request{Command: "reboot", Origin: "manual", Mode: ModeApprove}); !d.Allow || d.Mode != ModeApprove {
		t.Errorf("engine changed when the caller's Ceiling did: %+v", d)
	}
	if d := e.Decide(Request{Command: "reboot", Origin: "manual", Mode: ModeAllowlist}); !d.Allow {
		t.Errorf("engine changed when the caller's Allowlist did: %+v", d)
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	var ids []string
	for _, r := range Rules() {
		if r.Description == "" {
			t.Errorf("rule %q has no description", r.ID)
		}
		if r.Pack == "" {
			ids = append(ids, r.ID)
		} else if !strings.HasPrefix(r.ID, r.Pack+":") {
			t.Errorf("pack rule %q is not named pack:rule", r.ID)
		}
	}
	want := []string{"rm-root", "rm-outside", "mkfs", "dd-device", "fork-bomb", "kill-all", "shutdown", "chmod-system",
		"write-system", "pipe-to-shell", "decoded-exec", "git-destructive", "sql-destructive", "docker-host",
		"privilege", "firewall-flush", "service-stop", "package-remove", "history-wipe", "inline-code",
		"unparsable", "unresolved-command", "shell-dialect", "env-code", "too-complex"}
	if !slices.Equal(ids, want) {
		t.Errorf("Rules() IDs = %q, want %q", ids, want)
	}
	Rules()[0].ID = "changed"
	if Rules()[0].ID != "rm-root" {
		t.Error("Rules() returns shared state")
	}
	// Every rule but the fail-closed ones can be allowlisted.
	fixed := []string{"unparsable", "unresolved-command", "shell-dialect", "env-code", "too-complex"}
	allowable := slices.DeleteFunc(slices.Clone(want), func(id string) bool { return slices.Contains(fixed, id) })
	if _, err := New(Config{Allowlist: allowable}); err != nil {
		t.Errorf("allowlisting every detector rule: %v", err)
	}
	hostOnly := map[string]bool{}
	for _, r := range Rules() {
		hostOnly[r.ID] = r.HostOnly
	}
	for _, id := range []string{"rm-root", "rm-outside", "mkfs", "dd-device", "kill-all", "shutdown", "chmod-system", "write-system",
		"privilege", "firewall-flush", "service-stop", "package-remove", "history-wipe"} {
		if !hostOnly[id] {
			t.Errorf("rule %s is not host-only", id)
		}
	}
	for _, id := range []string{"fork-bomb", "pipe-to-shell", "decoded-exec", "git-destructive", "sql-destructive",
		"docker-host", "inline-code", "unparsable", "unresolved-command", "shell-dialect", "env-code", "too-complex"} {
		if hostOnly[id] {
			t.Errorf("rule %s is host-only", id)
		}
	}
}
