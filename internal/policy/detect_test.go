package policy

import (
	"slices"
	"strings"
	"testing"
)

// firedRules returns the distinct rule IDs detect reports for cmd, in order.
func firedRules(cmd string) []string {
	var ids []string
	for _, f := range detect(cmd) {
		if !slices.Contains(ids, f.rule) {
			ids = append(ids, f.rule)
		}
	}
	return ids
}

type detectCase struct {
	cmd  string
	want string // a rule expected to fire (others may too); "" for none
}

func runDetectCases(t *testing.T, cases []detectCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Parallel()
			got := firedRules(tc.cmd)
			if tc.want == "" && len(got) > 0 || tc.want != "" && !slices.Contains(got, tc.want) {
				t.Errorf("detect(%q) fired %q, want %q", tc.cmd, got, tc.want)
			}
		})
	}
}

func TestDetectRmRoot(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{"rm -rf /", ruleRmRoot},
		{"rm -fr /", ruleRmRoot},
		{"rm -r -f /", ruleRmRoot},
		{"rm -R /", ruleRmRoot},
		{"rm -r /", ruleRmRoot},
		{"rm --recursive --force /", ruleRmRoot},
		{"rm --recur /", ruleRmRoot},
		{"rm -rf --no-preserve-root /", ruleRmRoot},
		{"rm --no-preserve-root -r /", ruleRmRoot},
		{"rm -r --no-preserve-root \"$DIR\"", ruleRmRoot},
		{"rm / -rf", ruleRmRoot},
		{"rm -rf -- /", ruleRmRoot},
		{"rm -rf /*", ruleRmRoot},
		{"rm -rf '/*'", ruleRmRoot},
		{"rm -rf //", ruleRmRoot},
		{"rm -rf /.", ruleRmRoot},
		{"rm -rf /tmp/..", ruleRmRoot},
		{"rm -rf ~", ruleRmRoot},
		{"rm -rf ~/", ruleRmRoot},
		{"rm -rf ~/*", ruleRmRoot},
		{"rm -rf $HOME", ruleRmRoot},
		{"rm -rf ${HOME}/", ruleRmRoot},
		{`rm -rf "$HOME"`, ruleRmRoot},
		{`rm -rf "$HOME"/*`, ruleRmRoot},
		{"rm -rf /home", ruleRmRoot},
		{"rm -rf /home/", ruleRmRoot},
		{"rm -rf /home/*", ruleRmRoot},
		{"rm -rf ./build /", ruleRmRoot},
		{`r"m" -rf /`, ruleRmRoot},
		{`'rm' -rf /`, ruleRmRoot},
		{`r\m -rf /`, ruleRmRoot},
		{`$'\x72m' -rf /`, ruleRmRoot},
		{`rm "-rf" "/"`, ruleRmRoot},
		{"/bin/rm -rf /", ruleRmRoot},
		{"/usr/bin/rm -rf /", ruleRmRoot},
		{"sudo rm -rf /", ruleRmRoot},
		{"sudo -u root -E rm -rf /", ruleRmRoot},
		{"sudo --user=root rm -rf /", ruleRmRoot},
		{"env FOO=bar rm -rf /", ruleRmRoot},
		{"env -i -u PATH rm -rf /", ruleRmRoot},
		{"env -S 'rm -rf /'", ruleRmRoot},
		{"nice -n 10 rm -rf /", ruleRmRoot},
		{"nohup rm -rf / &", ruleRmRoot},
		{"timeout 10 rm -rf /", ruleRmRoot},
		{"timeout -s KILL 5s rm -rf /", ruleRmRoot},
		{"command rm -rf /", ruleRmRoot},
		{"exec rm -rf /", ruleRmRoot},
		{"busybox rm -rf /", ruleRmRoot},
		{"sudo nice nohup timeout 3 /bin/rm -rf /", ruleRmRoot},
		{"FOO=1 rm -rf /", ruleRmRoot},
		{"true && rm -rf /", ruleRmRoot},
		{"false || rm -rf /", ruleRmRoot},
		{"echo hi; rm -rf /", ruleRmRoot},
		{"echo | rm -rf /", ruleRmRoot},
		{"(rm -rf /)", ruleRmRoot},
		{"{ rm -rf /; }", ruleRmRoot},
		{"echo $(rm -rf /)", ruleRmRoot},
		{"echo `rm -rf /`", ruleRmRoot},
		{"cat <(rm -rf /)", ruleRmRoot},
		{"x=$(rm -rf /)", ruleRmRoot},
		{"if true; then rm -rf /; fi", ruleRmRoot},
		{"while true; do rm -rf /; done", ruleRmRoot},
		{"for i in 1; do rm -rf /; done", ruleRmRoot},
		{"case x in x) rm -rf /;; esac", ruleRmRoot},
		{"f() { rm -rf /; }; f", ruleRmRoot},
		{"sh -c 'rm -rf /'", ruleRmRoot},
		{"bash -c \"rm -rf /\"", ruleRmRoot},
		{"bash -ec 'rm -rf /'", ruleRmRoot},
		{"bash -o pipefail -c 'rm -rf /'", ruleRmRoot},
		{"/bin/sh -c 'sudo rm -rf /'", ruleRmRoot},
		{`sh -c "bash -c 'rm -rf /'"`, ruleRmRoot},
		{"sudo sh -c 'echo x && rm -rf ~'", ruleRmRoot},
		{"eval rm -rf /", ruleRmRoot},
		{"eval 'rm -rf /'", ruleRmRoot},
		{"time rm -rf /", ruleRmRoot},
		{"export X=$(rm -rf /)", ruleRmRoot},
		{"coproc rm -rf /", ruleRmRoot},
		{"[[ -n $(rm -rf /) ]]", ruleRmRoot},
		{"echo $(( $(rm -rf /) + 1 ))", ruleRmRoot},
		{"cat <<EOF\n$(rm -rf /)\nEOF", ruleRmRoot},
		{"until false; do rm -rf ~; done", ruleRmRoot},

		{"rm -rf ./build", ""},
		{"rm -rf /tmp/x", ""},
		{"rm -rf build/", ""},
		{"rm -rf /home/user/project", ruleHomeDestroy},
		{"rm -rf /home/user/project/build", ""},
		{"rm /", ""},
		{"rm -f /", ""},
		{"rm -- -r /tmp/x", ""},
		{"rm -rf '$HOME'", ""},
		{"rm -rf ~user", ruleRmRoot},
		{"rm -rf \"$DIR\"", ""},
		{"rm -rf \"$DIR/\"", ruleRmRoot}, // DIR unset: rm -rf /, which busybox rm does
		{"rm -rf \"${DIR:?}/\"", ""},
		{"echo rm -rf /", ""},
		{"echo 'rm -rf /'", ""},
		{"printf '%s\\n' 'rm -rf /'", ""},
		{"# rm -rf /", ""},
		{"command -v rm -rf /", ""},
		{"sh script.sh -c 'rm -rf /'", ""},
		{"sh -c \"$CMD\"", ruleUnresolved},
		{"ls -R /", ""},
		{"grep -r foo /", ""},
		{"cat <<'EOF'\n$(rm -rf /)\nEOF", ""},
		{"x='rm -rf /'", ""},
	})
}

func TestDetectMkfs(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{"mkfs /dev/sdb1", ruleMkfs},
		{"mkfs -t ext4 /dev/sdb1", ruleMkfs},
		{"mkfs.ext4 /dev/sdb1", ruleMkfs},
		{"mkfs.xfs -f /dev/nvme0n1", ruleMkfs},
		{"mke2fs /dev/sdb", ruleMkfs},
		{"/sbin/mkfs.vfat /dev/mmcblk0p1", ruleMkfs},
		{"/sbin/mkfs.vfat out.img", ""},
		{"sudo mkfs.btrfs /dev/vdb", ruleMkfs},
		{`m"kfs".ext4 /dev/sda1`, ruleMkfs},
		{"sh -c 'mkfs.ext4 /dev/sda'", ruleMkfs},
		{"busybox mkfs.ext2 /dev/sdb", ruleMkfs},
		{"busybox mkfs.ext2 x", ""}, // an image file

		{"grep mkfs file", ""},
		{"echo mkfs.ext4 /dev/sda", ""},
		{"man mkfs", ""},
		{"mkfsx /dev/sda", ""},
		{"ls /sbin/mkfs.ext4", ""},
	})
}

func TestDetectDDDevice(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{"dd if=/dev/zero of=/dev/sda", ruleDDDevice},
		{"dd if=/dev/zero of=/dev/sda1 bs=1M", ruleDDDevice},
		{"dd of=/dev/nvme0n1 if=x.img", ruleDDDevice},
		{"dd if=x of=/dev/vda", ruleDDDevice},
		{"dd if=x of=/dev/xvda", ruleDDDevice},
		{"dd if=x of=/dev/mmcblk0", ruleDDDevice},
		{"dd if=x of=/dev/disk2", ruleDDDevice},
		{"dd if=x of=/dev/disk/by-id/usb-1", ruleDDDevice},
		{"dd if=x of=/dev/hda", ruleDDDevice},
		{"dd if=x 'of=/dev/sda'", ruleDDDevice},
		{"dd if=x of=/dev/../dev/sda", ruleDDDevice},
		{"sudo dd if=/dev/urandom of=/dev/sdb", ruleDDDevice},
		{"cat x | sudo dd of=/dev/sdc", ruleDDDevice},

		{"dd if=/dev/zero of=out.img", ""},
		{"dd if=/dev/sda of=backup.img", ""},
		{"dd if=/dev/zero of=/dev/null", ""},
		{"dd if=x of=/dev/stdout", ""},
		{"dd if=x of=/dev/shm/x", ""},
		{"dd if=x of=$DEV", ""},
		{"echo dd of=/dev/sda", ""},
	})
}

func TestDetectForkBomb(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{":(){ :|:& };:", ruleForkBomb},
		{":(){ :|: & };:", ruleForkBomb},
		{": () { : | : & } ; :", ruleForkBomb},
		{"bomb(){ bomb|bomb& };bomb", ruleForkBomb},
		{"function bomb { bomb | bomb & }; bomb", ruleForkBomb},
		{"f() {\n  f | f &\n}\nf", ruleForkBomb},
		{"f(){ f & f; }; f", ruleForkBomb},
		{"f(){ f | f; }; f", ruleForkBomb},
		{"bash -c ':(){ :|:& };:'", ruleForkBomb},

		{"echo ':(){ :|:& };:'", ""},
		{"f(){ f; }", ""},
		{"f(){ f & }", ""},
		{"f(){ g | g & }", ""},
		{"f(){ echo hi | cat & }; f", ""},
		{"f(){ echo f | f; }", ""},
	})
}

func TestDetectShutdown(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{"shutdown -h now", ruleShutdown},
		{"shutdown now", ruleShutdown},
		{"reboot", ruleShutdown},
		{"halt", ruleShutdown},
		{"poweroff", ruleShutdown},
		{"/sbin/reboot -f", ruleShutdown},
		{"sudo shutdown -r +1", ruleShutdown},
		{"init 0", ruleShutdown},
		{"init 6", ruleShutdown},
		{"telinit 0", ruleShutdown},
		{"systemctl poweroff", ruleShutdown},
		{"systemctl reboot", ruleShutdown},
		{"systemctl halt", ruleShutdown},
		{"systemctl --force reboot", ruleShutdown},
		{"systemctl -H host poweroff", ruleShutdown},
		{"sleep 5 && reboot", ruleShutdown},
		{"nohup sh -c 'sleep 1; reboot' &", ruleShutdown},

		{"echo reboot", ""},
		{"init 3", ""},
		{"systemctl restart nginx", ""},
		{"systemctl status reboot.target", ""},
		{"grep shutdown /var/log/syslog", ""},
		{"last reboot", ""},
	})
}

func TestDetectUnparsable(t *testing.T) {
	t.Parallel()
	runDetectCases(t, []detectCase{
		{"echo 'unterminated", ruleUnparsable},
		{"if true; then", ruleUnparsable},
		{"echo $(", ruleUnparsable},
		{"sh -c 'echo \"oops'", ruleUnparsable},
		{"eval 'if'", ruleUnparsable},

		{"", ""},
		{"   ", ""},
		{"echo hi", ""},
		{"[[ -f x ]] && echo y", ruleShellDialect}, // bash syntax; as bash (ShellBash) it fires nothing: TestDialectBashSyntax
	})
}

func TestDetectMultipleRules(t *testing.T) {
	t.Parallel()
	got := firedRules("mkfs.ext4 /dev/sda; rm -rf / && reboot")
	want := []string{ruleMkfs, ruleRmRoot, ruleShutdown}
	if !slices.Equal(got, want) {
		t.Errorf("fired %q, want %q", got, want)
	}
}

func TestDetectNestingLimit(t *testing.T) {
	t.Parallel()
	cmd := "true"
	for range maxNesting + 2 {
		cmd = "sh -c " + shellQuote(cmd)
	}
	if got := firedRules(cmd); !slices.Equal(got, []string{ruleTooComplex}) {
		t.Errorf("deep nesting fired %q, want [too-complex]", got)
	}
}

// TestDetectHostileNesting checks that deeply nested input fails closed
// instead of exhausting the stack (a fatal error the worker cannot recover).
func TestDetectHostileNesting(t *testing.T) {
	t.Parallel()
	const n = 300000
	for _, cmd := range []string{
		strings.Repeat("(", n) + "x" + strings.Repeat(")", n),
		strings.Repeat("$(", n) + "x" + strings.Repeat(")", n),
		strings.Repeat("if a; then ", n) + "x" + strings.Repeat("; fi", n),
		strings.Repeat("{ ", 500) + "rm -rf /;" + strings.Repeat(" }", 500),
	} {
		if got := firedRules(cmd); len(got) == 0 {
			t.Errorf("detect(%.40q...) fired nothing, want a fail-closed rule", cmd)
		}
	}
	// A negated pipeline once recursed forever.
	if got := firedRules("! " + strings.Repeat("a | ", 1000) + "rm -rf /"); !slices.Equal(got, []string{ruleRmRoot}) {
		t.Errorf("negated pipeline fired %q", got)
	}
}
