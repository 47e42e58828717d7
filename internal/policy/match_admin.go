package policy

import (
	"regexp"
	"slices"
	"strings"
)

// matchFirewall judges commands that turn the firewall off.
func matchFirewall(c *command, h *hits) {
	switch canonical(c.name) {
	case "iptables":
		for _, a := range c.args {
			// --fl, --flu: getopt_long's prefixes; -vF: -F in a cluster
			if a.lit && (a.val == "-F" || len(a.val) >= 4 && strings.HasPrefix("--flush", a.val) || iptablesFlushCluster.MatchString(a.val)) {
				h.add(ruleFirewallFlush, c.name+" --flush")
				return
			}
		}
	case "nft":
		ops, _ := operands(c.args, optSpec{short: "fIT", long: []string{"file", "includepath"}})
		if len(ops) == 1 && strings.Contains(ops[0].val, " ") { // nft 'flush ruleset'
			fields := strings.Fields(ops[0].val)
			ops = nil
			for _, f := range fields {
				ops = append(ops, arg{val: f, lit: true})
			}
		}
		if len(ops) >= 2 && (ops[0].val == "flush" && slices.Contains([]string{"ruleset", "table", "chain"}, ops[1].val) ||
			ops[0].val == "delete" && slices.Contains([]string{"table", "chain"}, ops[1].val)) {
			h.add(ruleFirewallFlush, "nft "+ops[0].val+" "+ops[1].val)
		}
		// nft insert rule inet filter input accept: a rule with no match
		// before its verdict accepts every packet the chain sees
		if n := len(ops); (n == 5 || n == 6) && (ops[0].val == "insert" || ops[0].val == "add") && ops[1].val == "rule" &&
			strings.EqualFold(ops[n-2].val, "input") && ops[n-1].val == "accept" {
			h.add(ruleFirewallFlush, "nft "+ops[0].val+" rule … input accept: accepts every incoming packet")
		}
	case "ufw":
		ops, _ := operands(c.args, optSpec{})
		if len(ops) > 0 && (ops[0].val == "disable" || ops[0].val == "reset") && !slices.ContainsFunc(c.args, func(a arg) bool { return a.val == "--dry-run" }) {
			h.add(ruleFirewallFlush, "ufw "+ops[0].val)
		}
	case "pfctl":
		for i, a := range c.args {
			if a.val == "-d" || a.val == "-F" && i+1 < len(c.args) && c.args[i+1].val == "all" {
				h.add(ruleFirewallFlush, "pfctl "+a.val)
				return
			}
		}
	}
}

// iptablesFlushCluster is -F after iptables's flag options in one word.
var iptablesFlushCluster = regexp.MustCompile(`^-[vnx]+F$`)

// matchTFCLIArgs judges terraform run with -destroy in its environment
// (TF_CLI_ARGS=-destroy, TF_CLI_ARGS_apply=-destroy): terraform adds the
// variable's words to the command line.
func matchTFCLIArgs(c *command, h *hits) {
	if !slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && a.val == "apply" }) {
		return // plan -destroy only plans
	}
	for _, name := range []string{"TF_CLI_ARGS", "TF_CLI_ARGS_apply"} {
		if v, ok := c.vars[name]; ok && (v.unknown || slices.ContainsFunc(v.vals, func(s string) bool { return strings.Contains(s, "-destroy") })) {
			h.add("iac:destroy", c.name+" apply with "+name+" adding -destroy to its command line")
			return
		}
	}
}

// removeVerbs are the package-manager subcommands that remove packages.
var removeVerbs = map[string][]string{
	"apt": {"remove", "purge", "autoremove", "autopurge"}, "apt-get": {"remove", "purge", "autoremove", "autopurge"},
	"aptitude": {"remove", "purge"}, "yum": {"remove", "erase", "autoremove"}, "dnf": {"remove", "erase", "autoremove"},
	"microdnf": {"remove"}, "tdnf": {"remove", "erase", "autoremove"}, "zypper": {"remove", "rm"},
	"apk": {"del"}, "brew": {"uninstall", "remove", "rm"}, "snap": {"remove"},
	"flatpak": {"uninstall", "remove"}, "port": {"uninstall"},
}

// packageManagerSpec lists the options of apt, apt-get, dnf, yum and
// zypper that take a value.
var packageManagerSpec = optSpec{short: "octaDR", long: []string{"option", "config-file", "target-release", "root", "installroot", "repo", "releasever"}}

// matchPackages judges removal of system packages.
func matchPackages(c *command, h *hits) {
	ops, opts := operands(c.args, packageManagerSpec)
	switch c.name {
	case "dpkg":
		if hasOpt(opts, "r", "P", "remove", "purge") && !hasOpt(opts, "no-act", "dry-run", "simulate") {
			h.add(rulePackageRemove, "dpkg --remove")
		}
		return
	case "rpm":
		if hasOpt(opts, "test") {
			return // rpm -e --test: checks the removal, removes nothing
		}
		for _, a := range c.args {
			if a.lit && (a.val == "--erase" || len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' &&
				strings.Contains(a.val, "e") && !strings.Contains(a.val, "q")) {
				h.add(rulePackageRemove, "rpm --erase")
				return
			}
		}
		return
	case "pacman":
		if slices.ContainsFunc(c.args, func(a arg) bool {
			return a.lit && (a.val == "--print" || len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.Contains(a.val, "p"))
		}) {
			return // pacman -Rp, --print: lists what it would remove
		}
		for _, a := range c.args {
			if a.lit && (a.val == "--remove" || strings.HasPrefix(a.val, "-R")) {
				h.add(rulePackageRemove, "pacman -R")
				return
			}
		}
		return
	}
	if hasOpt(opts, "s", "simulate", "dry-run", "just-print", "no-act", "recon", "assumeno", "help") {
		return // brew uninstall --help
	}
	if len(ops) > 0 && ops[0].lit && slices.Contains(removeVerbs[c.name], ops[0].val) {
		h.add(rulePackageRemove, c.name+" "+ops[0].val)
	}
}
