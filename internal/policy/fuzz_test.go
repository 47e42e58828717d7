package policy

import "testing"

// FuzzDecide checks that Decide returns a coherent Decision for any input
// and never panics.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{
		"rm -rf /", "rm -rf ./build", ":(){ :|:& };:", "echo ':(){ :|:& };:'",
		"sh -c 'dd if=/dev/zero of=/dev/sda'", "eval \"$(echo reboot)\"",
		"env -S 'mkfs.ext4 /dev/sda'", `$'\x72m' -rf ~/`, "echo 'x", "f(){ f|f& }",
		"systemctl -H h reboot", "timeout", "sudo -u", "bash -c", "cat <<EOF\nrm -rf /\nEOF",
	} {
		f.Add(s, "manual", "approve")
	}
	f.Add("rm -rf /", "subagent", "")
	f.Add("reboot", "cron", "allowlist")
	f.Add("reboot", "", "bogus")
	e, err := New(Config{Allowlist: []string{ruleShutdown}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cmd, origin, mode string) {
		d := e.Decide(Request{Command: cmd, Origin: origin, Mode: Mode(mode)})
		if !d.Mode.valid() {
			t.Fatalf("invalid effective mode %q", d.Mode)
		}
		if d.Dangerous != (d.Rule != "") {
			t.Fatalf("Dangerous=%v but Rule=%q", d.Dangerous, d.Rule)
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
	})
}
