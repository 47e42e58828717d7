package policy

import "mvdan.cc/sh/v3/syntax"

// Rule IDs. They appear in Decision.Rule, in Config.Allowlist and in docs.
const (
	ruleRmRoot     = "rm-root"
	ruleMkfs       = "mkfs"
	ruleDDDevice   = "dd-device"
	ruleForkBomb   = "fork-bomb"
	ruleShutdown   = "shutdown"
	ruleUnparsable = "unparsable"
)

// RuleInfo describes one detector rule, for docs and `sandrun doctor`.
type RuleInfo struct {
	ID          string
	Description string
	HostOnly    bool // the rule is skipped when the backend has no host access
}

// rule is one detector rule. A rule inspects simple commands (call), function
// definitions (fn), or neither (unparsable is raised by the detector itself).
type rule struct {
	id   string
	desc string
	call func(c command) (detail string, ok bool)
	fn   func(f *syntax.FuncDecl) (detail string, ok bool)
}

// allowlistable reports whether the rule may be named in Config.Allowlist.
func (r rule) allowlistable() bool { return r.id != ruleUnparsable }

// rules is the fixed rule table, in documentation order.
var rules = []rule{
	{id: ruleRmRoot, call: matchRmRoot,
		desc: "recursive rm of /, /*, /home, ~ or $HOME (any flag spelling), or rm -r with --no-preserve-root"},
	{id: ruleMkfs, call: matchMkfs,
		desc: "creating a file system: mkfs, mkfs.*, mke2fs"},
	{id: ruleDDDevice, call: matchDDDevice,
		desc: "dd writing to a disk device (of=/dev/sd*, hd*, nvme*, vd*, xvd*, mmcblk*, disk*, rdisk*)"},
	{id: ruleForkBomb, fn: matchForkBomb,
		desc: "fork bomb: a function that calls itself at least twice, concurrently (in a pipeline or in the background)"},
	{id: ruleShutdown, call: matchShutdown,
		desc: "stopping the machine: shutdown, reboot, halt, poweroff, init/telinit 0|6, systemctl poweroff|reboot|halt|kexec|soft-reboot"},
	{id: ruleUnparsable,
		desc: "the command (or a nested sh -c / eval string) does not parse as shell; refused in deny and allowlist modes and cannot be allowlisted"},
}

// Rules lists every rule the detector knows, in a stable order. The caller
// owns the returned slice.
func Rules() []RuleInfo {
	out := make([]RuleInfo, len(rules))
	for i, r := range rules {
		out[i] = RuleInfo{ID: r.id, Description: r.desc}
	}
	return out
}

func lookupRule(id string) (rule, bool) {
	for _, r := range rules {
		if r.id == id {
			return r, true
		}
	}
	return rule{}, false
}

func allowlistableIDs() []string {
	var ids []string
	for _, r := range rules {
		if r.allowlistable() {
			ids = append(ids, r.id)
		}
	}
	return ids
}
