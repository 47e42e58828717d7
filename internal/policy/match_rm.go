package policy

import (
	"strings"
)

// matchRm judges rm and unlink: a recursive delete of a protected root is
// rm-root; deleting a history file is history-wipe; deleting a system file
// is write-system. Options may come in any order and spelling (-rf, -fr,
// -r -f, -R, --recursive, --recur, after the operands); -f does not matter:
// a non-interactive rm -r deletes just the same.
func matchRm(c *command, h *hits) {
	var recursive, noPreserve bool
	var ops []arg
	options := true
	for _, a := range c.args {
		v := a.val
		switch {
		case !options || !a.lit || len(v) < 2 || v[0] != '-':
			ops = append(ops, a)
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
	recursive = recursive || c.tree
	for _, o := range ops {
		for _, t := range c.targets(o) {
			deleteHits(c.name, t, recursive, h)
		}
	}
	if recursive && noPreserve {
		h.add(ruleRmRoot, c.name+" -r --no-preserve-root")
	}
}

// deleteHits classifies deleting t.
func deleteHits(tool string, t target, recursive bool, h *hits) {
	switch {
	case recursive && protectedRoot(t.path, true):
		h.add(ruleRmRoot, tool+" -r on "+t.show)
	case isHistoryFile(t.path):
		h.add(ruleHistoryWipe, tool+" of history file "+t.show)
	case isSystemFile(t.path):
		h.add(ruleWriteSystem, tool+" of system file "+t.show)
	}
}

// matchShred judges shred: on a device it is dd-device, on a history or
// system file a delete.
func matchShred(c *command, h *hits) {
	ops, _ := operands(c.args, optSpec{short: "ns", long: []string{"iterations", "size", "random-source", "remove"}})
	for _, o := range ops {
		for _, t := range c.targets(o) {
			if isBlockDevice(t.path) {
				h.add(ruleDDDevice, "shred of device "+t.show)
				continue
			}
			deleteHits("shred", t, false, h)
		}
	}
}

// matchFindDelete judges find ROOT ... -delete.
func matchFindDelete(c *command, h *hits) {
	roots, expr := findParts(c.args)
	for _, e := range expr {
		if !e.lit || e.val != "-delete" {
			continue
		}
		for _, r := range roots {
			for _, t := range c.targets(r) {
				deleteHits("find -delete", t, true, h)
			}
		}
		return
	}
}

// matchRsync judges rsync --delete onto a protected root (it empties it).
func matchRsync(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "eBfT", long: []string{"rsh", "rsync-path", "filter", "exclude", "include", "exclude-from", "include-from", "files-from", "temp-dir", "compare-dest", "copy-dest", "link-dest", "partial-dir", "log-file", "password-file", "chmod", "chown", "usermap", "groupmap", "timeout", "port", "bwlimit", "backup-dir", "suffix", "max-size", "min-size", "max-delete", "info", "debug", "out-format", "skip-compress", "modify-window", "block-size", "checksum-choice", "compress-choice", "outbuf"}})
	deletes := false
	for _, o := range opts {
		deletes = deletes || strings.HasPrefix(o.name, "delete") || o.name == "del"
	}
	if !deletes || len(ops) < 2 {
		return
	}
	for _, t := range c.targets(ops[len(ops)-1]) {
		if protectedRoot(t.path, true) {
			h.add(ruleRmRoot, "rsync --delete onto "+t.show)
		}
	}
}

// matchMv judges mv: moving a protected root away deletes it; moving system
// or history files in or out changes them.
func matchMv(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "tS", long: []string{"target-directory", "suffix", "backup"}})
	var dest []target
	for _, o := range opts {
		if o.name == "t" || o.name == "target-directory" {
			dest = c.targets(o.value)
		}
	}
	if dest == nil && len(ops) > 1 {
		dest, ops = c.targets(ops[len(ops)-1]), ops[:len(ops)-1]
	}
	for _, o := range ops {
		for _, t := range c.targets(o) {
			if protectedRoot(t.path, true) {
				h.add(ruleRmRoot, "mv moves away "+t.show)
				continue
			}
			deleteHits("mv", t, false, h)
			for _, d := range dest {
				writeHits(into(d, t.path), writeTruncate, "mv to ", h)
			}
		}
	}
	for _, d := range dest {
		writeHits(d, writeTruncate, "mv to ", h)
	}
}
