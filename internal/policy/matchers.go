package policy

import (
	"fmt"
	"path"
	"strings"
)

// matchRmRoot fires on a recursive rm whose operand is the root, /home or
// the home directory (or everything in one of them: /*, ~/*), and on any
// recursive rm with --no-preserve-root. Options may come in any order and
// spelling (-rf, -fr, -r -f, -R, --recursive, --recur, after the operands);
// -f does not matter: a non-interactive rm -r deletes just the same.
func matchRmRoot(c command) (string, bool) {
	if c.name != "rm" {
		return "", false
	}
	var recursive, noPreserve bool
	var operands []arg
	options := true
	for _, a := range c.args {
		v := a.val
		switch {
		case !options || !a.lit || len(v) < 2 || v[0] != '-':
			operands = append(operands, a)
		case v == "--":
			options = false
		case strings.HasPrefix(v, "--"):
			long, _, _ := strings.Cut(v[2:], "=")
			// getopt_long accepts any unambiguous prefix: --recur, --no-pres.
			if long != "" {
				recursive = recursive || strings.HasPrefix("recursive", long)
				noPreserve = noPreserve || strings.HasPrefix("no-preserve-root", long)
			}
		default:
			recursive = recursive || strings.ContainsAny(v[1:], "rR")
		}
	}
	if !recursive {
		return "", false
	}
	for _, o := range operands {
		if o.lit && isRootTarget(o.val) {
			return "rm -r on " + quoteDetail(o.val), true
		}
	}
	if noPreserve {
		return "rm -r --no-preserve-root", true
	}
	return "", false
}

// isRootTarget reports whether p names /, /home, ~ or $HOME, or all entries
// of one of them (a last component of only '*'), after cleaning: /., //,
// /home/, ~/ and /tmp/.. count.
func isRootTarget(p string) bool {
	for _, home := range []string{"~", homeMarker} {
		if p == home {
			return true
		}
		if rest, ok := strings.CutPrefix(p, home+"/"); ok {
			return isRootTarget("/" + rest)
		}
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	p = path.Clean(p)
	if p == "/" || p == "/home" {
		return true
	}
	dir, file := path.Split(p)
	return (dir == "/" || dir == "/home/") && strings.Trim(file, "*") == ""
}

// matchMkfs fires on any program that creates a file system.
func matchMkfs(c command) (string, bool) {
	if c.name == "mkfs" || c.name == "mke2fs" || strings.HasPrefix(c.name, "mkfs.") {
		return c.name, true
	}
	return "", false
}

// diskPrefixes are device paths of whole disks and their partitions.
var diskPrefixes = []string{
	"/dev/sd", "/dev/hd", "/dev/nvme", "/dev/vd", "/dev/xvd",
	"/dev/mmcblk", "/dev/disk", "/dev/rdisk",
}

// matchDDDevice fires on dd writing to a disk device.
func matchDDDevice(c command) (string, bool) {
	if c.name != "dd" {
		return "", false
	}
	for _, a := range c.args {
		dst, ok := strings.CutPrefix(a.val, "of=")
		if !ok || !a.lit || !strings.HasPrefix(dst, "/") {
			continue
		}
		dst = path.Clean(dst)
		for _, p := range diskPrefixes {
			if strings.HasPrefix(dst, p) {
				return "dd of=" + quoteDetail(dst), true
			}
		}
	}
	return "", false
}

// shutdownVerbs are the systemctl verbs that stop or restart the machine.
var shutdownVerbs = map[string]bool{
	"poweroff": true, "reboot": true, "halt": true, "kexec": true, "soft-reboot": true,
}

// matchShutdown fires on programs that power off or restart the machine.
func matchShutdown(c command) (string, bool) {
	switch c.name {
	case "shutdown", "reboot", "halt", "poweroff":
		return c.name, true
	case "init", "telinit":
		rest, _ := skipOptions(c.args, optSpec{})
		if len(rest) > 0 && rest[0].lit && (rest[0].val == "0" || rest[0].val == "6") {
			return c.name + " " + rest[0].val, true
		}
	case "systemctl":
		rest, _ := skipOptions(c.args, optSpec{short: "tpsnoHM", long: []string{
			"type", "property", "signal", "lines", "output", "host", "machine",
			"state", "kill-whom", "root", "job-mode", "what", "when", "message"}})
		if len(rest) > 0 && rest[0].lit && shutdownVerbs[rest[0].val] {
			return "systemctl " + rest[0].val, true
		}
	}
	return "", false
}

// quoteDetail quotes a word for a Decision reason: $HOME shown unexpanded,
// long words cut.
func quoteDetail(s string) string {
	s = strings.ReplaceAll(s, homeMarker, "$HOME")
	const maxLen = 64
	if len(s) > maxLen {
		s = s[:maxLen] + "..."
	}
	return fmt.Sprintf("%q", s)
}
