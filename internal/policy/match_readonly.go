package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// readOnly are programs that only read and report: under sudo they look at
// what the job's user may not (logs, another user's files, the firewall's
// rules) and change nothing. The function, when there is one, says whether
// the arguments keep the program in its reading modes.
var readOnly = map[string]func(c *command) bool{
	"ls": nil, "cat": nil, "head": nil, "tail": nil, "grep": nil, "egrep": nil, "fgrep": nil, "zgrep": nil,
	"zcat": nil, "rg": nil, "wc": nil, "stat": nil, "file": nil, "du": nil, "df": nil, "id": nil,
	"whoami": nil, "groups": nil, "ps": nil, "pgrep": nil, "uptime": nil, "free": nil, "lsblk": nil,
	"blkid": nil, "findmnt": nil, "ss": nil, "netstat": nil, "lsof": nil, "lspci": nil, "lsusb": nil,
	"lsmod": nil, "dmidecode": nil, "md5sum": nil, "sha1sum": nil, "sha256sum": nil, "sha512sum": nil,
	"readlink": nil, "realpath": nil, "getfacl": nil, "tree": nil, "lastlog": nil, "last": nil, "w": nil,
	"who": nil, "getent": nil, "printenv": nil,
	"find":       findReadOnly,
	"journalctl": journalctlReadOnly,
	"systemctl":  systemctlReadOnly,
	"dmesg": func(c *command) bool {
		return noneOf(c, "c", "C", "D", "E", "n", "clear", "read-clear", "console-off", "console-on", "console-level")
	},
	"iptables": iptablesReadOnly, "ip6tables": iptablesReadOnly, "iptables-save": nil, "ip6tables-save": nil,
	"nft": func(c *command) bool { return len(c.args) > 0 && firstWord(c) == "list" }, // not -c: a check prints the lines it cannot parse of what it includes
	"ip":  ipReadOnly,
	// volume, RAID, disk and file-system tools in their reporting modes
	"vgdisplay": nil, "lvdisplay": nil, "pvdisplay": nil, "vgs": nil, "lvs": nil, "pvs": nil, "pvscan": nil, "vgscan": nil,
	"lvscan": nil, "fdesetup": firstWordIn("list", "status", "isactive", "supportsrecovery", "haspersonalrecoverykey"),
	"mdadm": func(c *command) bool {
		return noneOf(c, "zero-superblock", "stop", "S", "fail", "f", "remove", "r", "create", "C", "grow", "G")
	},
	"nvme":     firstWordIn("list", "smart-log", "id-ctrl", "id-ns", "error-log", "fw-log", "list-subsys", "show-regs"),
	"smartctl": func(c *command) bool { return noneOf(c, "s", "smart", "t", "test", "X", "abort") },
	"hdparm": func(c *command) bool {
		return noneOf(c, "security-erase", "security-erase-enhanced", "security-set-pass", "z", "W", "write-sector", "trim-sector-ranges", "fwdownload")
	},
	"btrfs": btrfsReadOnly,
	"zpool": firstWordIn("list", "status", "iostat", "get", "history", "events"),
	"zfs": func(c *command) bool {
		// a listing, a stream of a snapshot sent to the output, or a
		// destroy's dry run (-n: what it would destroy)
		return firstWordIn("list", "get", "diff", "send")(c) || firstWord(c) == "destroy" && slices.ContainsFunc(c.args, func(a arg) bool {
			return a.lit && strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.Contains(a.val, "n")
		})
	},
	// device sizes and metadata shown, a rule checked
	"blockdev": func(c *command) bool {
		return noneOf(c, "setro", "setrw", "setra", "setfra", "setbsz", "flushbufs", "rereadpt")
	},
	"grub-probe": nil,
	// service managers, firewalls, backups and container tools in their
	// reporting modes
	"ufw":       firstWordIn("status", "show", "version"),
	"launchctl": firstWordIn("print", "list", "print-disabled", "print-cache", "blame", "procinfo", "hostinfo", "dumpstate", "managername", "manageruid", "version", "help"),
	"tmutil":    firstWordIn("listbackups", "latestbackup", "destinationinfo", "status", "listlocalsnapshots", "listlocalsnapshotdates", "machinedirectory", "isexcluded", "compare", "calculatedrift", "uniquesize", "version"),
	"kubectl":   kubectlReadOnly,
	"docker":    firstWordIn("ps", "images", "logs", "inspect", "info", "version", "stats", "top", "port", "diff", "events", "history"),
	"podman":    firstWordIn("ps", "images", "logs", "inspect", "info", "version", "stats", "top", "port", "diff", "events", "history"),
	// the Linux audit system's listing and query tools (auditctl -l, -s)
	"auditctl": func(c *command) bool {
		_, opts := operands(c.args, optSpec{})
		return len(literalWords(c)) == 0 && onlyOpts(opts, "l", "s")
	},
	"ausearch": nil, "aureport": nil,
	"true": nil, ":": nil, // sudo -n true: whether sudo's credentials are cached
	"crontab": func(c *command) bool {
		_, opts := operands(c.args, optSpec{short: "u"})
		return hasOpt(opts, "l") && !hasOpt(opts, "r", "e", "i") && len(literalWords(c)) <= 1
	},
	"semanage": func(c *command) bool {
		return !noneOf(c, "l", "list") && noneOf(c, "a", "add", "d", "delete", "D", "deleteall", "m", "modify")
	},
	"datadog-agent": firstWordIn("status", "health", "version", "configcheck", "diagnose"),
	"scontrol":      firstWordIn("show", "ping", "version"),
	"samba-tool":    sambaToolReadOnly,
	"nvidia-smi":    nvidiaSMIReadOnly,
	"crictl":        firstWordIn("ps", "pods", "images", "img", "logs", "inspect", "inspectp", "inspecti", "info", "version", "stats", "statsp"),
	// security, account and server-configuration reports: what the
	// mandatory access control enforces, an account's password ageing, a
	// check of sudoers or sshd's configuration, the firewall's zones
	"aa-status": nil, "apparmor_status": nil, "sestatus": nil, "getenforce": nil, "lscpu": nil, "lsattr": nil, "lshw": nil,
	"lsns": nil, "lslocks": nil, "lsipc": nil, "iostat": nil, "vmstat": nil, "mpstat": nil, "pidstat": nil, "sensors": nil,
	"chage":        optsOnly("l", "list"),
	"visudo":       optsOnly("c", "check", "s", "strict", "q", "quiet", "f", "file"),
	"sshd":         func(c *command) bool { return len(literalWords(c)) == 0 && !noneOf(c, "t", "T") },
	"firewall-cmd": firewallCmdReadOnly,
	"cryptsetup": func(c *command) bool {
		return slices.Contains([]string{"luksDump", "status", "isLuks", "luksUUID", "benchmark"}, firstWord(c)) &&
			noneOf(c, "dump-master-key", "dump-volume-key", "dump-json-metadata")
	},
	"virsh":     firstWordIn("list", "dominfo", "domstate", "domblklist", "domiflist", "net-list", "pool-list", "vol-list", "dumpxml", "capabilities", "nodeinfo", "version", "snapshot-list"),
	"apt":       func(c *command) bool { return firstWordIn("list", "show", "search", "policy")(c) || aptSimulate(c) },
	"apt-cache": nil,
	"dpkg":      optsOnly("l", "L", "s", "S", "list", "listfiles", "status", "search", "get-selections"),
	"rpm": func(c *command) bool {
		return noneOf(c, "e", "erase", "i", "install", "U", "upgrade", "F", "freshen", "import", "rebuilddb", "setperms", "setugids", "restore") && !noneOf(c, "q", "query", "V", "verify")
	},
	"nginx":      optsOnly("t", "T", "v", "V", "q"), // not -c or -p: a test loads the configuration's modules
	"apachectl":  apachectlReadOnly,
	"apache2ctl": apachectlReadOnly,
	"certbot":    func(c *command) bool { return len(c.args) == 1 && c.args[0].val == "certificates" },
	"sv":         firstWordIn("status"),
	"grubby": func(c *command) bool {
		return len(c.args) > 0 && !slices.ContainsFunc(c.args, func(a arg) bool {
			name, _, _ := strings.Cut(a.val, "=")
			return name != "--info" && name != "--default-kernel" && name != "--default-index" && name != "--default-title"
		})
	},
	"apt-get":     aptSimulate,
	"hostnamectl": func(c *command) bool { return len(literalWords(c)) == 0 || firstWord(c) == "status" },
	"timedatectl": func(c *command) bool {
		return len(literalWords(c)) == 0 || firstWord(c) == "status" || firstWord(c) == "show"
	},
	"loginctl":  firstWordIn("list-sessions", "list-users", "list-seats", "show-session", "show-user", "session-status", "user-status"),
	"swapon":    optsOnly("show", "s", "summary", "noheadings", "bytes"),
	"tune2fs":   optsOnly("l"),
	"dumpe2fs":  optsOnly("h"),
	"xfs_info":  nil,
	"ipset":     firstWordIn("list", "-L", "save"),
	"conntrack": optsOnly("L", "dump", "S", "stats", "C", "count"),
	// the partition tools in their listing modes (fdisk -l, parted -l, wipefs --no-act)
	"fdisk": diskListing, "sfdisk": diskListing, "sgdisk": diskListing, "gdisk": diskListing,
	"parted": diskListing, "wipefs": diskListing,
	// macOS and host-security reports: disks and volumes listed or
	// verified, the packet filter's rules, installed profiles, an MDM
	// agent's connection check, a password's status, a dry run of log
	// rotation, an intrusion-prevention jail's status
	"diskutil": func(c *command) bool {
		ops := literalWords(c)
		return len(ops) > 0 && (slices.Contains([]string{"list", "info", "information", "verifyVolume", "verifyDisk", "activity", "listFilesystems"}, ops[0]) ||
			len(ops) > 1 && slices.Contains([]string{"apfs", "cs", "coreStorage", "appleRAID", "ar"}, ops[0]) && slices.Contains([]string{"list", "listSnapshots", "listCryptoUsers", "listVolumeGroups"}, ops[1]))
	},
	"pfctl": optsOnly("s", "v", "vv"),
	"profiles": func(c *command) bool {
		return firstWordIn("show", "list", "status", "validate", "version", "help")(c) || len(literalWords(c)) == 0 && optsOnly("P", "L", "C", "v", "type")(c)
	},
	"jamf":            firstWordIn("checkJSSConnection", "version", "about", "help"),
	"passwd":          optsOnly("S", "status", "a", "all"),
	"logrotate":       optsOnly("d", "debug", "v", "verbose"),
	"fail2ban-client": firstWordIn("status", "ping", "version", "get", "banned"),
	// storage reports: backup snapshots listed, NFS exports, iSCSI
	// sessions, multipath maps, a NAS package's status, a read-only
	// surface scan
	"restic": func(c *command) bool {
		ops, _ := operands(c.args, optSpec{short: "r", long: []string{"repo", "repository-file", "password-file", "password-command", "cache-dir", "tag", "host", "path", "latest", "limit-download", "limit-upload", "option", "o"}})
		return len(ops) > 0 && ops[0].lit && slices.Contains([]string{"snapshots", "ls", "stats", "check", "find", "diff", "version"}, ops[0].val)
	},
	"exportfs":  optsOnly("v", "s"), //nolint:misspell // the NFS export table program
	"multipath": optsOnly("l", "ll", "v"),
	"synopkg":   firstWordIn("status", "list", "is_onoff", "version"),
	"rabbitmqctl": func(c *command) bool {
		w := firstWord(c)
		return strings.HasPrefix(w, "list_") || w == "status" || w == "cluster_status" || w == "ping"
	},
	"ipmitool": func(c *command) bool {
		ops := literalWords(c)
		return len(ops) >= 2 && slices.Contains([]string{"sel", "sensor", "sdr", "fru", "mc", "lan", "chassis", "user"}, ops[0]) &&
			slices.Contains([]string{"list", "elist", "info", "print", "status", "get"}, ops[1])
	},
	"timeshift":          optsOnly("list", "list-devices", "check"),
	"needrestart":        optsOnly("r", "b", "l", "q", "v", "k"),
	"unattended-upgrade": func(c *command) bool { return !noneOf(c, "dry-run") },
	"e4defrag":           optsOnly("c", "v"),
	"aide": func(c *command) bool {
		return !noneOf(c, "check", "C", "compare") && noneOf(c, "init", "i", "update", "u")
	},
	"gitlab-runner": func(c *command) bool {
		return firstWordIn("verify", "list", "status", "--version")(c) && noneOf(c, "delete")
	},
	"badblocks": func(c *command) bool { return noneOf(c, "w", "n") },
	"iscsiadm": func(c *command) bool {
		return noneOf(c, "o", "op", "l", "login", "u", "logout", "I", "interface")
	},
	"rsync": func(c *command) bool {
		_, opts := operands(c.args, optSpec{})
		return rsyncDryRun(opts)
	},
	// account and boot-configuration checks in their reporting modes,
	// package removals that answer no, volume, repair and debug tools in
	// their test or read-only modes, a shutdown cancelled
	"faillock": func(c *command) bool { return noneOf(c, "reset") },
	"pwck": func(c *command) bool {
		return !noneOf(c, "r", "read-only") && optsOnly("r", "read-only", "q", "quiet")(c)
	},
	"grpck":             func(c *command) bool { return !noneOf(c, "r", "read-only") && optsOnly("r", "read-only")(c) },
	"useradd":           optsOnly("D", "defaults"),
	"grub-script-check": nil,
	"dnf":               packageDryRun,
	"yum":               packageDryRun,
	"zypper": func(c *command) bool {
		// only a package change that --dry-run makes a preview of, with
		// no root or repository given
		return !noneOf(c, "dry-run") && noneOf(c, "root", "R", "plus-repo", "p", "config", "c", "reposd-dir", "D") &&
			firstWordIn("rm", "remove", "in", "install", "up", "update", "dup", "dist-upgrade", "patch")(c)
	},
	"lvremove": lvmTest, "vgremove": lvmTest, "pvremove": lvmTest, "lvreduce": lvmTest, "lvresize": lvmTest,
	"xfs_repair": func(c *command) bool { return !noneOf(c, "n") && noneOf(c, "L") },
	"e2fsck":     fsckNoChange, "fsck.ext4": fsckNoChange, "fsck.ext3": fsckNoChange, "fsck.ext2": fsckNoChange,
	"ethtool": func(c *command) bool {
		ops, opts := operands(c.args, optSpec{})
		return len(ops) == 1 && (len(opts) == 0 || onlyOpts(opts, "i", "driver", "S", "statistics", "k", "show-features", "g", "show-ring", "a", "show-pause",
			"c", "show-coalesce", "l", "show-channels", "m", "dump-module-eeprom", "P", "show-permaddr", "T", "show-time-stamping", "show-eee", "show-fec"))
	},
	"hwclock":  optsOnly("show", "r", "get", "v", "verbose", "debug", "V", "version"),
	"ctr":      ctrListing,
	"shutdown": optsOnly("c"),
	// GitLab Omnibus: its services' status, its checks and environment report
	"gitlab-ctl": firstWordIn("status", "tail", "show-config", "service-list"),
	"gitlab-rake": func(c *command) bool {
		w := literalWords(c)
		return len(w) >= 1 && (w[0] == "gitlab:check" || w[0] == "gitlab:env:info" || w[0] == "gitlab:gitlab_shell:check" || w[0] == "gitlab:sidekiq:check" ||
			w[0] == "gitlab:doctor:secrets" || w[0] == "gitlab:artifacts:check" || w[0] == "gitlab:lfs:check" || w[0] == "gitlab:uploads:check")
	},
}

// packageDryRun: dnf or yum answering no to every question (--assumeno),
// or a listing subcommand, with no option but these (--setopt, -c and
// --installroot choose plugins or a configuration: code run as root).
func packageDryRun(c *command) bool {
	for _, a := range c.args {
		if !a.lit {
			return false
		}
		if strings.HasPrefix(a.val, "-") && !slices.Contains([]string{"--assumeno", "-q", "--quiet", "-C", "--cacheonly", "--installed", "--available", "--upgrades", "--showduplicates"}, a.val) {
			return false
		}
	}
	ops := literalWords(c)
	return !noneOf(c, "assumeno") ||
		firstWordIn("list", "info", "search", "repolist", "check-update", "provides", "repoquery", "deplist")(c) && len(ops) <= 3 ||
		len(ops) >= 1 && len(ops) <= 3 && ops[0] == "history" && (len(ops) == 1 || ops[1] == "list" || ops[1] == "info")
}

// apachectlReadOnly: apachectl's configuration test and dumps (-t, -S,
// -M, -D DUMP_VHOSTS, configtest, status), with the default configuration
// (no -f, -d, -C or -c: directives given there load modules).
func apachectlReadOnly(c *command) bool {
	if len(c.args) == 0 {
		return false
	}
	for i, a := range c.args {
		switch v := a.val; {
		case v == "configtest" || v == "status" || v == "fullstatus" || v == "-t" || v == "-S" || v == "-M" || v == "-v" || v == "-V" || v == "-l" || v == "-L":
		case strings.HasPrefix(v, "-DDUMP_"):
		case v == "-D" && i+1 < len(c.args) && strings.HasPrefix(c.args[i+1].val, "DUMP_"):
		case strings.HasPrefix(v, "DUMP_") && i > 0 && c.args[i-1].val == "-D":
		default:
			return false
		}
	}
	// -D DUMP_VHOSTS alone starts the server after the dump: only with a
	// test or a report
	return !slices.ContainsFunc(c.args, func(a arg) bool { return strings.HasPrefix(a.val, "-D") }) ||
		slices.ContainsFunc(c.args, func(a arg) bool { return a.val == "-t" || a.val == "-S" || a.val == "-M" || a.val == "configtest" })
}

// aptSimulate: apt-get and apt told to simulate (-s, --simulate,
// --dry-run, --just-print, --recon, --no-act) an install, removal or
// upgrade, with no option that sets configuration (-o, -c: hooks run).
func aptSimulate(c *command) bool {
	_, opts := operands(c.args, optSpec{short: "oc", long: []string{"option", "config-file", "target-release", "default-release"}})
	return hasOpt(opts, "s", "simulate", "dry-run", "just-print", "recon", "no-act") && !hasOpt(opts, "o", "option", "c", "config-file") &&
		firstWordIn("install", "remove", "purge", "autoremove", "upgrade", "dist-upgrade", "full-upgrade", "reinstall", "build-dep")(c)
}

// ctrListing: ctr [-n NAMESPACE] OBJECT ls (namespaces, images,
// containers, tasks, snapshots, content, leases, plugins), or ctr version.
func ctrListing(c *command) bool {
	var words []string
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case !a.lit:
			return false
		case (a.val == "-n" || a.val == "--namespace") && i+1 < len(c.args):
			i++
		case strings.HasPrefix(a.val, "--namespace=") || a.val == "-q" || a.val == "--quiet":
		case strings.HasPrefix(a.val, "-"):
			return false
		default:
			words = append(words, a.val)
		}
	}
	objects := []string{"namespaces", "namespace", "ns", "images", "image", "i", "containers", "container", "c", "tasks", "task", "t", "snapshots", "snapshot", "content", "leases", "plugins", "plugin"}
	return len(words) == 1 && words[0] == "version" || len(words) == 2 && slices.Contains(objects, words[0]) && (words[1] == "ls" || words[1] == "list")
}

// lvmTest: an LVM command in test mode (--test, -t): metadata not written.
func lvmTest(c *command) bool {
	return !noneOf(c, "test", "t") && noneOf(c, "config", "commandprofile", "profile", "driverloaded") // --config 'global/test=0' turns it off
}

// fsckNoChange: e2fsck -n opens the file system read-only and answers no.
func fsckNoChange(c *command) bool {
	return !noneOf(c, "n") && noneOf(c, "y", "p", "a", "D", "E", "c", "k", "l", "L")
}

// optsOnly: a program given only these options, and no operand other
// than their values: a reporting mode (chage -l USER, visudo -c).
func optsOnly(names ...string) func(c *command) bool {
	return func(c *command) bool {
		_, opts := operands(c.args, optSpec{})
		return onlyOpts(opts, names...)
	}
}

// firewallCmdReadOnly: firewall-cmd asked only to list, get, query or
// report its state.
func firewallCmdReadOnly(c *command) bool {
	if len(c.args) == 0 {
		return false
	}
	for _, a := range c.args {
		if !a.lit {
			return false
		}
		name, _, _ := strings.Cut(a.val, "=")
		switch {
		case strings.HasPrefix(name, "--list-"), strings.HasPrefix(name, "--get-"), strings.HasPrefix(name, "--query-"),
			strings.HasPrefix(name, "--info-"), name == "--state", name == "--zone", name == "--permanent":
		default:
			return false
		}
	}
	return true
}

// diskListing: a partition tool that matchMkfs finds in a listing mode.
func diskListing(c *command) bool {
	var h hits
	matchMkfs(c, &h)
	return len(h) == 0
}

// readOnlyCommand reports whether c only reads: a program of readOnly in a
// reading mode, on no credential file.
func readOnlyCommand(c *command) bool {
	f, ok := readOnly[c.name]
	if !ok || f != nil && !f(c) {
		return false
	}
	if c.name == "visudo" {
		return true // visudo -c reports whether the sudoers files parse, not what they hold
	}
	for _, a := range c.args {
		if !a.lit {
			return false // "$F" may name /etc/shadow
		}
		if namesOnly[c.name] {
			continue // ls /etc/sudoers.d: the names, not what they hold
		}
		for _, p := range c.paths(a) {
			if isCredentialFile(p) || recursiveReader[c.name] && holdsCredentials(p) {
				return false
			}
		}
	}
	return true
}

// namesOnly are the readOnly programs that show a file's name, size or
// mode, never what it holds.
var namesOnly = map[string]bool{"ls": true, "stat": true} // not du: --files0-from prints a file's lines as names

// credentialFiles hold password hashes, sudo rules or private keys: reading
// them as root exposes them.
var credentialFiles = []string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh", "/etc/security/opasswd"}

func isCredentialFile(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	for _, f := range credentialFiles {
		if c == f || strings.HasPrefix(c, f+"/") {
			return true
		}
	}
	rel, ok := homeRelative(c)
	return ok && (strings.HasPrefix(rel, ".ssh/") || strings.HasPrefix(rel, ".gnupg/") || strings.HasPrefix(rel, ".aws/") || path.Base(rel) == ".netrc")
}

// recursiveReader are the readOnly programs that print the content of the
// files in a directory they are given (grep -r; rg always). They are not
// read-only on a directory that holds credential files.
var recursiveReader = map[string]bool{"grep": true, "egrep": true, "fgrep": true, "zgrep": true, "rg": true}

// holdsCredentials reports whether directory p may hold a credential file:
// it is an ancestor of one, or a home directory or what holds them.
func holdsCredentials(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	if c == "/" || c == "~" || c == "/home" || c == "/Users" || c == "/root" || isSystemDir(c, true) && strings.HasPrefix(c, "/home/") {
		return true
	}
	for _, f := range credentialFiles {
		if strings.HasPrefix(f, c+"/") {
			return true
		}
	}
	return false
}

// noneOf reports whether c has none of the options.
func noneOf(c *command, names ...string) bool {
	_, opts := operands(c.args, optSpec{})
	return !hasOpt(opts, names...)
}

// firstWord is c's first operand, or "".
func firstWord(c *command) string {
	ops, _ := operands(c.args, optSpec{})
	if len(ops) == 0 || !ops[0].lit {
		return ""
	}
	return ops[0].val
}

// kubectlReadOnly: kubectl get, describe, logs and the other commands
// that only report, past its global options.
func kubectlReadOnly(c *command) bool {
	ops, _ := operands(c.args, optSpec{short: "nlos", long: []string{"namespace", "context", "kubeconfig", "cluster", "user", "selector", "output", "server", "token", "as", "request-timeout"}})
	if len(ops) == 0 || !ops[0].lit {
		return false
	}
	return slices.Contains([]string{"get", "describe", "logs", "top", "version", "api-resources", "api-versions", "cluster-info", "explain", "events"}, ops[0].val)
}

// findReadOnly: find without actions that delete, run or write files.
func findReadOnly(c *command) bool {
	_, expr := findParts(c.args)
	return !slices.ContainsFunc(expr, func(e arg) bool {
		return !e.lit || slices.Contains([]string{"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}, e.val)
	})
}

// journalctlReadOnly: journalctl without the options that rotate, vacuum,
// flush or set up the journal.
func journalctlReadOnly(c *command) bool {
	for _, a := range c.args {
		for _, bad := range []string{"--vacuum", "--rotate", "--flush", "--sync", "--relinquish-var", "--smart-relinquish-var", "--setup-keys", "--update-catalog", "--new-id128"} {
			if strings.HasPrefix(a.val, bad) {
				return false
			}
		}
	}
	return true
}

// systemctlReadOnly: systemctl verbs that show state.
func systemctlReadOnly(c *command) bool {
	ops, _ := operands(c.args, systemctlSpec)
	if len(ops) == 0 {
		return true // list-units
	}
	return ops[0].lit && (slices.Contains([]string{"status", "show", "cat", "help", "get-default", "is-system-running"}, ops[0].val) ||
		strings.HasPrefix(ops[0].val, "list-") || strings.HasPrefix(ops[0].val, "is-"))
}

// iptablesReadOnly: iptables listing its rules (-L, -S, with -n, -v, -x,
// -t TABLE, --line-numbers) and nothing else.
func iptablesReadOnly(c *command) bool {
	if len(c.args) > 0 && (c.args[0].val == "-C" || c.args[0].val == "--check") {
		// -C RULE: whether the rule is there; no other command follows
		return !slices.ContainsFunc(c.args[1:], func(a arg) bool {
			return slices.Contains([]string{"-A", "-I", "-D", "-R", "-F", "-X", "-P", "-Z", "-N", "-E", "--append", "--insert", "--delete", "--replace", "--flush", "--delete-chain", "--policy", "--zero", "--new-chain", "--rename-chain"}, a.val)
		})
	}
	lists := false
	for i := 0; i < len(c.args); i++ {
		v := c.args[i].val
		switch {
		case v == "-t" || v == "--table":
			i++
		case v == "--line-numbers" || v == "--numeric" || v == "--verbose" || v == "--exact":
		case v == "--list" || v == "--list-rules":
			lists = true
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Trim(v[1:], "LSnvx") == "":
			lists = lists || strings.ContainsAny(v, "LS")
		case !strings.HasPrefix(v, "-") && lists:
			// the chain listed
		default:
			return false
		}
	}
	return lists
}

// ipReadOnly: ip OBJECT [show|list|get], e.g. ip addr, ip route show.
func ipReadOnly(c *command) bool {
	ops, _ := operands(c.args, optSpec{})
	if len(ops) == 0 {
		return false
	}
	return len(ops) == 1 || ops[1].lit && slices.Contains([]string{"show", "list", "ls", "lst", "get"}, ops[1].val)
}

// firstWordIn is a readOnly check: the command's first operand (its
// subcommand) is one of words.
func firstWordIn(words ...string) func(c *command) bool {
	return func(c *command) bool { return len(c.args) > 0 && slices.Contains(words, firstWord(c)) }
}

// btrfsReadOnly: btrfs ... list, show, df, usage, scrub status.
func btrfsReadOnly(c *command) bool {
	ops := literalWords(c)
	if len(ops) < 2 {
		return false
	}
	switch ops[1] {
	case "list", "show", "df", "usage", "status", "get":
		return true
	}
	return len(ops) > 2 && ops[1] == "scrub" && ops[2] == "status"
}

// boundedAdmin are the administrative steps that need privileges but
// destroy nothing and change only what they name: a service started,
// restarted or reloaded, a snapshot taken, a scrub or a backup started,
// packages fetched or installed from the configured sources, a firewall
// switched on. Under sudo they are not privilege; everything else that
// modifies still is (a step the detector cannot bound may do anything
// with root's rights). Their destructive forms are not in the lists: a
// service stopped, a snapshot destroyed, a package removed.
var boundedAdmin = map[string]func(c *command) bool{
	"systemctl": func(c *command) bool {
		ops, _ := operands(c.args, systemctlSpec)
		return len(ops) > 1 && ops[0].lit && slices.Contains([]string{"start", "restart", "reload", "try-restart",
			"reload-or-restart", "try-reload-or-restart", "reset-failed"}, ops[0].val) ||
			len(ops) == 1 && ops[0].lit && ops[0].val == "daemon-reload"
	},
	"service": func(c *command) bool {
		ops, _ := operands(c.args, optSpec{})
		return len(ops) == 2 && ops[1].lit && slices.Contains([]string{"start", "restart", "reload", "force-reload", "try-restart", "status"}, ops[1].val)
	},
	"rc-service": func(c *command) bool {
		ops, _ := operands(c.args, optSpec{})
		return len(ops) == 2 && ops[1].lit && slices.Contains([]string{"start", "restart", "reload", "status"}, ops[1].val)
	},
	"fstrim": func(*command) bool { return true }, // discards only blocks no file uses
	// GitLab Omnibus: services restarted or reconfigured, a backup made, caches cleared
	"gitlab-ctl":    firstWordIn("restart", "start", "reconfigure", "hup"),
	"gitlab-backup": firstWordIn("create"),
	"zfs":           firstWordIn("snapshot", "snap"),
	"zpool":         firstWordIn("scrub"),
	"btrfs": func(c *command) bool {
		ops := literalWords(c)
		return len(ops) >= 2 && (ops[0] == "subvolume" || ops[0] == "subvol" || ops[0] == "sub") && ops[1] == "snapshot" ||
			len(ops) >= 2 && ops[0] == "scrub" && (ops[1] == "start" || ops[1] == "resume")
	},
	"tmutil": tmutilBounded,
	// the macOS application firewall switched on, in stealth mode or blocking all
	"socketfilterfw": func(c *command) bool {
		ops := literalWords(c)
		_, opts := operands(c.args, optSpec{long: []string{"setglobalstate", "setstealthmode", "setblockall", "setloggingmode"}})
		return len(opts) == 1 && len(ops) == 1 && ops[0] == "on"
	},
	"defaults": func(c *command) bool {
		ops := literalWords(c)
		return len(ops) == 4 && ops[0] == "write" && path.Base(ops[1]) == "com.apple.alf" && ops[2] == "globalstate" &&
			(ops[3] == "1" || ops[3] == "2") && len(c.args) == 5 && c.args[3].val == "-int"
	},
	"ufw":     firstWordIn("enable"),
	"apt":     packageInstall,
	"apt-get": packageInstall,
	"dnf":     packageInstall,
	"yum":     packageInstall,
	"apk":     packageInstall,
}

// packageInstall: a package manager that refreshes its indexes or installs
// packages, with no option or operand that removes one (apt-get install
// foo- removes foo; --purge, --auto-remove and dnf's --allowerasing take
// others away; upgrade never removes, full-upgrade and dist-upgrade may).
func packageInstall(c *command) bool {
	ops, opts := operands(c.args, packageManagerSpec)
	if len(ops) == 0 || !ops[0].lit || hasOpt(opts, "purge", "auto-remove", "autoremove", "allowerasing", "remove", "o", "option", "c", "config-file", "root", "installroot") {
		return false
	}
	switch ops[0].val {
	case "update", "makecache", "check-update":
		return len(ops) == 1
	case "install", "add", "upgrade", "reinstall":
		// a package named by its file (./tool.deb) runs its maintainer
		// scripts from wherever the file came from
		return !slices.ContainsFunc(ops[1:], func(a arg) bool {
			return strings.HasSuffix(a.val, "-") || strings.HasSuffix(a.val, "_") || strings.ContainsAny(a.val, "/:") ||
				strings.HasSuffix(a.val, ".deb") || strings.HasSuffix(a.val, ".rpm") || strings.HasSuffix(a.val, ".apk")
		})
	}
	return false
}

// literalWords are c's literal arguments that are not options, in order.
func literalWords(c *command) []string {
	var ops []string
	for _, a := range c.args {
		if a.lit && !strings.HasPrefix(a.val, "-") {
			ops = append(ops, a.val)
		}
	}
	return ops
}

// privilegedBounded reports whether c, run with privileges, is a step of
// boundedAdmin with literal arguments.
func privilegedBounded(c *command) bool {
	f, ok := boundedAdmin[c.name]
	if !ok || c.privEnv || !f(c) {
		return false
	}
	return !slices.ContainsFunc(c.args, func(a arg) bool { return !a.lit })
}

// tmutilBounded: a backup started, Time Machine enabled or a local
// snapshot taken, or the backup destination set to a mounted local volume
// (tmutil setdestination /Volumes/TM; a network URL would send the
// machine's backups elsewhere).
func tmutilBounded(c *command) bool {
	if firstWordIn("startbackup", "enable", "enablelocal", "localsnapshot", "snapshot")(c) {
		return true
	}
	ops, opts := operands(c.args, optSpec{short: "ap"})
	if len(ops) != 2 || !ops[0].lit || ops[0].val != "setdestination" || !ops[1].lit || slices.ContainsFunc(opts, func(o option) bool { return o.name != "a" }) {
		return false
	}
	cp, ok := cleanAbs(ops[1].val)
	return ok && strings.HasPrefix(cp, "/Volumes/") && strings.Count(cp, "/") == 2
}

// nvidiaSMIQueries are nvidia-smi's options that only choose what a
// report shows (the setters, -f's output file and the rest are not).
var nvidiaSMIQueries = map[string]bool{"-q": true, "--query": true, "-L": true, "--list-gpus": true, "-i": true, "--id": true,
	"-d": true, "--display": true, "-x": true, "--xml-format": true, "--query-gpu": true, "--query-compute-apps": true,
	"--query-accounted-apps": true, "--query-retired-pages": true, "--query-supported-clocks": true, "--format": true,
	"-l": true, "--loop": true, "-lms": true, "--loop-ms": true, "-u": true, "--unit": true, "-h": true, "--help": true,
	"-m": true, "-s": true, "-c": true, "-o": true}

// nvidiaSMIReadOnly: nvidia-smi's reports (nvidia-smi, -q, -L,
// --query-gpu=..., topo -m, dmon, pmon), no setting changed.
func nvidiaSMIReadOnly(c *command) bool {
	sub := ""
	for i, a := range c.args {
		switch {
		case !a.lit:
			return false
		case strings.HasPrefix(a.val, "-"):
			name, _, _ := strings.Cut(a.val, "=")
			if !nvidiaSMIQueries[name] || (name == "-c" || name == "-o" || name == "-s" || name == "-m") && sub == "" {
				return false // -c is --compute-mode, -m not a report's option at the top level
			}
		case i == 0 && (a.val == "topo" || a.val == "dmon" || a.val == "pmon"):
			sub = a.val
		case i > 0 && c.args[i-1].lit && nvidiaSMIQueries[c.args[i-1].val]:
			// an option's value (-i 0, -d MEMORY, -s pucvmet)
		default:
			return false
		}
	}
	return true
}

// sambaToolReadOnly: samba-tool's listings and reports (user list, group
// listmembers, domain passwordsettings show, drs showrepl, dbcheck
// without --fix).
func sambaToolReadOnly(c *command) bool {
	ops := literalWords(c)
	if len(ops) == 0 {
		return false
	}
	for i, a := range c.args {
		if a.val == "-s" || strings.HasPrefix(a.val, "--configfile") {
			return false
		}
		if name, val, eq := strings.Cut(a.val, "="); strings.HasPrefix(name, "--attr") {
			if !eq && i+1 < len(c.args) {
				val = c.args[i+1].val
			}
			if sambaSecretAttr.MatchString(val) {
				return false // user show --attributes=unicodePwd: the hashes, read from the database as root
			}
		}
	}
	if ops[0] == "dbcheck" {
		return noneOf(c, "fix", "yes")
	}
	verb := 1 // user list, group listmembers, drs showrepl
	if ops[0] == "domain" {
		verb = 2 // domain passwordsettings show, domain level show
	}
	if len(ops) <= verb {
		return false
	}
	switch ops[verb] {
	case "list", "show", "listmembers", "showrepl", "info", "query", "listobjects", "view":
		return ops[0] != "domain" || ops[1] == "passwordsettings" || ops[1] == "level" || ops[1] == "info"
	}
	return false
}

// sambaSecretAttr are the attributes that hold an account's secrets.
var sambaSecretAttr = regexp.MustCompile(`(?i)pwd|password|supplementalcredentials|keyversion|msds-managedpassword|trustauth|secret`)
