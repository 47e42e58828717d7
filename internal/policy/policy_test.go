package policy

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newEngine builds an Engine from cfg or fails the test.
func newEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return e
}

const (
	dangerous = "rm -rf /"
	harmless  = "rm -rf ./build"
)

func TestDecideModes(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Config{
		Ceiling:   map[string]Mode{"manual": ModeApprove, "cron": ModeApprove, "batch": ModeApprove, "subagent": ModeApprove},
		Allowlist: []string{ruleShutdown, ruleMkfs},
	})
	tests := []struct {
		name      string
		req       Request
		allow     bool
		mode      Mode
		dangerous bool
		rule      string
	}{
		{"default is deny", Request{Command: dangerous, Origin: "manual"}, false, ModeDeny, true, ruleRmRoot},
		{"default deny for cron", Request{Command: dangerous, Origin: "cron"}, false, ModeDeny, true, ruleRmRoot},
		{"default deny for batch", Request{Command: dangerous, Origin: "batch"}, false, ModeDeny, true, ruleRmRoot},
		{"default deny for subagent", Request{Command: dangerous, Origin: "subagent"}, false, ModeDeny, true, ruleRmRoot},
		{"deny refuses dangerous", Request{Command: dangerous, Origin: "manual", Mode: ModeDeny}, false, ModeDeny, true, ruleRmRoot},
		{"deny allows harmless", Request{Command: harmless, Origin: "manual", Mode: ModeDeny}, true, ModeDeny, false, ""},
		{"approve allows dangerous", Request{Command: dangerous, Origin: "manual", Mode: ModeApprove}, true, ModeApprove, true, ruleRmRoot},
		{"approve allows harmless", Request{Command: harmless, Origin: "manual", Mode: ModeApprove}, true, ModeApprove, false, ""},
		{"approve allows unparsable", Request{Command: "echo '", Origin: "manual", Mode: ModeApprove}, true, ModeApprove, true, ruleUnparsable},
		{"allowlist admits listed rule", Request{Command: "reboot", Origin: "cron", Mode: ModeAllowlist}, true, ModeAllowlist, true, ruleShutdown},
		{"allowlist admits all listed rules", Request{Command: "mkfs.ext4 /dev/sdb && reboot", Origin: "cron", Mode: ModeAllowlist}, true, ModeAllowlist, true, ruleMkfs},
		{"allowlist refuses unlisted rule", Request{Command: dangerous, Origin: "cron", Mode: ModeAllowlist}, false, ModeAllowlist, true, ruleRmRoot},
		{"allowlist refuses if any rule unlisted", Request{Command: "reboot; rm -rf /", Origin: "cron", Mode: ModeAllowlist}, false, ModeAllowlist, true, ruleShutdown},
		{"allowlist allows harmless", Request{Command: harmless, Origin: "cron", Mode: ModeAllowlist}, true, ModeAllowlist, false, ""},
		{"deny fails closed on parse error", Request{Command: "echo 'x", Origin: "manual", Mode: ModeDeny}, false, ModeDeny, true, ruleUnparsable},
		{"allowlist fails closed on parse error", Request{Command: "echo 'x", Origin: "manual", Mode: ModeAllowlist}, false, ModeAllowlist, true, ruleUnparsable},
		{"unknown requested mode counts as deny", Request{Command: dangerous, Origin: "manual", Mode: "yolo"}, false, ModeDeny, true, ruleRmRoot},
		{"unknown origin gets ceiling deny", Request{Command: dangerous, Origin: "martian", Mode: ModeApprove}, false, ModeDeny, true, ruleRmRoot},
		{"empty origin gets ceiling deny", Request{Command: dangerous, Mode: ModeApprove}, false, ModeDeny, true, ruleRmRoot},
		{"unknown origin still runs harmless", Request{Command: harmless, Origin: "martian"}, true, ModeDeny, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := e.Decide(tc.req)
			if d.Allow != tc.allow || d.Mode != tc.mode || d.Dangerous != tc.dangerous || d.Rule != tc.rule {
				t.Errorf("Decide(%+v) = %+v\nwant Allow=%v Mode=%s Dangerous=%v Rule=%q",
					tc.req, d, tc.allow, tc.mode, tc.dangerous, tc.rule)
			}
			if d.Reason == "" {
				t.Error("empty Reason")
			}
		})
	}
}

func TestDecideCeiling(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig()) // subagent -> allowlist, others -> approve
	tests := []struct {
		name   string
		req    Request
		allow  bool
		mode   Mode
		capped bool
	}{
		{"manual approve within ceiling", Request{Command: dangerous, Origin: "manual", Mode: ModeApprove}, true, ModeApprove, false},
		{"cron approve within ceiling", Request{Command: dangerous, Origin: "cron", Mode: ModeApprove}, true, ModeApprove, false},
		{"subagent approve capped to allowlist", Request{Command: dangerous, Origin: "subagent", Mode: ModeApprove}, false, ModeAllowlist, true},
		{"subagent allowlist not capped", Request{Command: dangerous, Origin: "subagent", Mode: ModeAllowlist}, false, ModeAllowlist, false},
		{"subagent deny not capped", Request{Command: dangerous, Origin: "subagent", Mode: ModeDeny}, false, ModeDeny, false},
		{"default mode never capped", Request{Command: dangerous, Origin: "subagent"}, false, ModeDeny, false},
		{"capped harmless still allowed", Request{Command: harmless, Origin: "subagent", Mode: ModeApprove}, true, ModeAllowlist, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := e.Decide(tc.req)
			if d.Allow != tc.allow || d.Mode != tc.mode || d.Capped != tc.capped {
				t.Errorf("Decide(%+v) = %+v\nwant Allow=%v Mode=%s Capped=%v", tc.req, d, tc.allow, tc.mode, tc.capped)
			}
			if tc.capped && !strings.Contains(d.Reason, "capped") {
				t.Errorf("Reason %q does not mention the cap", d.Reason)
			}
		})
	}
}

func TestDecideCeilingDenyForOrigin(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Config{Ceiling: map[string]Mode{"cron": ModeDeny}})
	d := e.Decide(Request{Command: dangerous, Origin: "cron", Mode: ModeApprove})
	if d.Allow || d.Mode != ModeDeny || !d.Capped {
		t.Errorf("cron ceiling deny: got %+v", d)
	}
	// Origins not named keep DefaultCeiling.
	d = e.Decide(Request{Command: dangerous, Origin: "manual", Mode: ModeApprove})
	if !d.Allow || d.Mode != ModeApprove || d.Capped {
		t.Errorf("manual default ceiling: got %+v", d)
	}
	d = e.Decide(Request{Command: dangerous, Origin: "subagent", Mode: ModeApprove})
	if d.Allow || d.Mode != ModeAllowlist || !d.Capped {
		t.Errorf("subagent default ceiling: got %+v", d)
	}
}

func TestDecideZeroConfig(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Config{})
	if d := e.Decide(Request{Command: dangerous, Origin: "batch", Mode: ModeApprove}); !d.Allow || d.Mode != ModeApprove {
		t.Errorf("zero Config, batch approve: got %+v", d)
	}
}

func TestDecideAllowlistCannotAdmitUnparsable(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Config{Allowlist: []string{ruleRmRoot, ruleMkfs, ruleDDDevice, ruleForkBomb, ruleShutdown}})
	d := e.Decide(Request{Command: "rm -rf / ; echo 'x", Origin: "manual", Mode: ModeAllowlist})
	if d.Allow || d.Rule != ruleUnparsable {
		t.Errorf("got %+v, want denied unparsable", d)
	}
	d = e.Decide(Request{Command: "sh -c 'rm -rf /'; bash -c 'echo \"'", Origin: "manual", Mode: ModeAllowlist})
	if d.Allow || !strings.Contains(d.Reason, "not allowlisted: unparsable") {
		t.Errorf("nested parse error in allowlist mode: got %+v", d)
	}
}

func TestDecideReason(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	tests := []struct {
		req  Request
		want []string
	}{
		{Request{Command: "rm -rf /", Origin: "manual"}, []string{"denied in mode deny: rm-root (rm -r on \"/\")"}},
		{Request{Command: "rm -rf $HOME", Origin: "manual", Mode: ModeApprove}, []string{"allowed", "approved-dangerous", `"$HOME"`}},
		{Request{Command: "reboot", Origin: "subagent", Mode: ModeAllowlist}, []string{"denied", "not allowlisted: shutdown"}},
		{Request{Command: "echo hi", Origin: "cron"}, []string{"allowed", "no dangerous command"}},
		{Request{Command: "sh -c 'dd if=x of=/dev/sda'", Origin: "manual"}, []string{"sh -c: dd of=\"/dev/sda\""}},
		{Request{Command: "echo hi", Origin: "nope"}, []string{`unknown origin "nope"`}},
	}
	for _, tc := range tests {
		d := e.Decide(tc.req)
		for _, w := range tc.want {
			if !strings.Contains(d.Reason, w) {
				t.Errorf("Decide(%+v).Reason = %q, missing %q", tc.req, d.Reason, w)
			}
		}
	}
}

func TestDecideReasonHasNoSecrets(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	const secret = "hunter2-s3cr3t"
	for _, cmd := range []string{
		"API_TOKEN=" + secret + " rm -rf /",
		"env TOKEN=" + secret + " mkfs.ext4 /dev/sda",
		"curl -H 'Authorization: " + secret + "' x; reboot",
		"echo " + secret + " '",
		"sh -c 'echo " + secret + "; rm -rf /'",
		"rm -rf --no-preserve-root " + secret,
	} {
		d := e.Decide(Request{Command: cmd, Origin: "manual"})
		if !d.Dangerous {
			t.Errorf("Decide(%q) not dangerous", cmd)
		}
		if strings.Contains(d.Reason, secret) {
			t.Errorf("Decide(%q).Reason echoes the secret: %q", cmd, d.Reason)
		}
	}
}

func TestDecideManyFindingsSummarised(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	d := e.Decide(Request{Command: "reboot; reboot; reboot; reboot; reboot", Origin: "manual"})
	if !strings.Contains(d.Reason, "and 2 more") {
		t.Errorf("Reason = %q, want a summary of the extra findings", d.Reason)
	}
}

func TestEngineConcurrentUse(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				e.Decide(Request{Command: "sh -c 'rm -rf /'", Origin: "subagent", Mode: ModeApprove})
			}
		}()
	}
	for range 8 {
		<-done
	}
}
