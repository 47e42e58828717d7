package policy

import (
	"slices"
	"strings"
)

// matchMkfs judges programs that create or erase file systems and
// partition tables. Their listing and printing modes do not fire.
func matchMkfs(c *command, h *hits) {
	name := canonical(c.name)
	ops, opts := operands(c.args, optSpec{short: "obLtu", long: []string{"offset", "backup-file", "label", "type", "types", "usage-filter", "output", "sector-size", "unit", "align"}})
	lists := func(names ...string) bool { return hasOpt(opts, names...) }
	switch name {
	case "wipefs":
		if !lists("a", "all", "o", "offset") || lists("n", "no-act") {
			return
		}
	case "fdisk", "gdisk", "cfdisk":
		if lists("l", "list", "s", "getsz", "V", "version", "h", "help") || readOnlyDiskScript(c.stdin) {
			return
		}
	case "sfdisk":
		if lists("l", "list", "d", "dump", "s", "show-size", "J", "json", "V", "verify", "F", "list-free", "g", "show-geometry", "r", "no-act", "n", "version", "help") {
			return
		}
	case "sgdisk":
		if lists("P", "pretend") || onlyOpts(opts, "p", "print", "v", "verify", "i", "info", "O", "print-mbr", "h", "help", "V", "version", "b", "backup", "backup-file") && backupsToNewFile(opts) { // --backup is read as backup-file's prefix // -P: nothing is written
			return
		}
	case "parted":
		if lists("l", "list", "h", "help", "v", "version") {
			return
		}
		if len(ops) > 1 && len(ops) <= 4 && ops[1].lit && ops[1].val == "align-check" {
			return // parted DEV align-check optimal N: checks, writes nothing
		}
		if len(ops) > 1 && onlyWords(ops[1:], "print", "p", "unit", "s", "B", "MB", "GB", "MiB", "GiB", "%", "free", "all", "chs", "compact", "cyl") {
			return
		}
	case "cryptsetup":
		if len(ops) == 0 || !slices.Contains([]string{"luksFormat", "erase", "luksErase", "luksKillSlot"}, ops[0].val) {
			return
		}
	case "mkfs", "mke2fs", "mkswap", "blkdiscard":
		if lists("V", "version", "h", "help") && len(ops) == 0 || mkfsNoAct(c.name, opts) {
			return
		}
	}
	if c.imagesOnly(ops, opts) {
		return
	}
	h.add(ruleMkfs, c.name)
}

// mkfsNoAct reports a file-system maker told to show what it would do
// without writing: mke2fs -n (and mkfs.ext4 -n, mkfs -t ext4 -n), mkntfs
// -n/--no-action, mkfs.xfs -N, newfs -N. Elsewhere -n names the volume
// (mkfs.vfat -n LABEL) and -N counts inodes (mke2fs -N 1000).
func mkfsNoAct(name string, opts []option) bool {
	kind := strings.TrimPrefix(strings.TrimPrefix(name, "mkfs."), "mkfs_")
	if name == "mkfs" {
		kind = ""
		for _, o := range opts {
			if o.name == "t" || o.name == "type" {
				kind = o.value.val
			}
		}
	}
	switch {
	case name == "mke2fs" || strings.HasPrefix(kind, "ext"):
		return hasOpt(opts, "n")
	case name == "mkntfs" || kind == "ntfs":
		return hasOpt(opts, "n", "no-action")
	case kind == "xfs" || name == "newfs" || strings.HasPrefix(name, "newfs_"):
		return hasOpt(opts, "N")
	}
	return false
}

// imagesOnly reports whether every operand and option value names a file
// that cannot be a device: a known path outside /dev and /proc, relative
// only to a working directory the submitter did not choose or the
// detector knows. mkfs.ext4 -F ./disk.img formats an image file.
func (c *command) imagesOnly(ops []arg, opts []option) bool {
	if len(ops) == 0 {
		return false
	}
	words := slices.Clone(ops)
	for _, o := range opts {
		if o.value.val != "" || o.value.pos != 0 { // given a value
			words = append(words, o.value)
		}
	}
	for _, w := range words {
		if !w.lit {
			return false
		}
		if !isAbsolute(w.val) && c.cwd.unknown && !c.cwd.env {
			return false // cd "$X" first: it may be /dev
		}
		for _, p := range c.opened(w) {
			if cp, ok := cleanAbs(p); ok && (cp == "/dev" || cp == "/proc" || strings.HasPrefix(cp, "/dev/") || strings.HasPrefix(cp, "/proc/")) {
				return false
			}
		}
	}
	return true
}

// onlyOpts reports whether every option is one of names (and there is one).
func onlyOpts(opts []option, names ...string) bool {
	if len(opts) == 0 {
		return false
	}
	for _, o := range opts {
		if !slices.Contains(names, o.name) {
			return false
		}
	}
	return true
}

// backupsToNewFile reports that sgdisk's -b/--backup FILE options, if any,
// write a file in the working directory or /tmp: the backup is written
// over FILE, which may be a disk (--backup=/dev/sdb) or a key.
func backupsToNewFile(opts []option) bool {
	for _, o := range opts {
		if o.name != "b" && o.name != "backup" && o.name != "backup-file" {
			continue
		}
		v := o.value.val
		if !o.value.lit || v == "" || strings.Contains(v, "..") || strings.HasPrefix(v, "~") || strings.Contains(v, homeMarker) ||
			strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "/tmp/") {
			return false
		}
	}
	return true
}

// onlyWords reports whether every word is a literal among names.
func onlyWords(words []arg, names ...string) bool {
	for _, w := range words {
		if !w.lit || !slices.Contains(names, w.val) {
			return false
		}
	}
	return true
}

// opened returns the paths a program that opens operand a may reach: the
// paths it names and, where one is a symbolic link the script made, what
// the link points at (ln -s /dev/sda disk.img; mkfs disk.img).
func (c *command) opened(a arg) []string {
	out := c.paths(a)
	for i := 0; i < len(out) && i < maxLinkHops*maxValues; i++ {
		for _, t := range c.links[linkKey(out[i])] {
			out = appendNew(out, t)
		}
	}
	return out
}

// readOnlyDiskScript reports fdisk's or gdisk's commands on stdin that
// only show the table (p, l, i, v) and quit, or reach the end of input,
// without writing: in every reading of the text.
func readOnlyDiskScript(in stream) bool {
	if !in.present || !in.known {
		return false
	}
	for _, text := range []string{in.text, in.alt} {
		for line := range strings.Lines(text) {
			switch strings.TrimSpace(line) {
			case "p", "l", "L", "i", "v", "F", "m", "?", "q", "":
			default:
				return false
			}
		}
	}
	return true
}
