package policy

// Rule IDs. They appear in Decision.Rule, Match.Rule, Config.Allowlist and
// docs; they never change meaning once published.
const (
	ruleRmRoot         = "rm-root"
	ruleRmOutside      = "rm-outside"
	ruleMkfs           = "mkfs"
	ruleDDDevice       = "dd-device"
	ruleForkBomb       = "fork-bomb"
	ruleKillAll        = "kill-all"
	ruleShutdown       = "shutdown"
	ruleChmodSystem    = "chmod-system"
	ruleWriteSystem    = "write-system"
	rulePipeToShell    = "pipe-to-shell"
	ruleDecodedExec    = "decoded-exec"
	ruleGitDestructive = "git-destructive"
	ruleSQLDestructive = "sql-destructive"
	ruleDockerHost     = "docker-host"
	rulePrivilege      = "privilege"
	ruleFirewallFlush  = "firewall-flush"
	ruleServiceStop    = "service-stop"
	rulePackageRemove  = "package-remove"
	ruleHistoryWipe    = "history-wipe"
	ruleInlineCode     = "inline-code"
	ruleUnparsable     = "unparsable"
	ruleUnresolved     = "unresolved-command"
	ruleShellDialect   = "shell-dialect"
	ruleEnvCode        = "env-code"
	ruleTooComplex     = "too-complex"
)

// ruleTokenSent is the egress pack's rule for a service's credential sent
// to a host that is not the service's; Config.TokenHosts names more hosts
// that are.
const ruleTokenSent = "egress:token-sent" //nolint:gosec // a rule ID, not a credential

// ruleChecksOff is the secrets pack's rule for TLS certificate, SSH host
// key and checksum checks switched off for every later run.
const ruleChecksOff = "secrets:tls-off"

// RuleInfo describes one detector rule, for docs and `sandrun doctor`.
type RuleInfo struct {
	ID          string
	Description string
	HostOnly    bool   // the rule is skipped when the backend has no host access
	Critical    bool   // a pack rule no allowlist admits (only turning its pack off does)
	Pack        string // the rule pack it belongs to, "" for the built-in rules
}

// rule is one entry of the rule table. The matchers that raise it live in
// the match_*.go files, one file per family.
type rule struct {
	id       string
	hostOnly bool
	fixed    bool   // raised by the detector itself (fail closed); never allowlistable
	critical bool   // a critical pack rule: never allowlistable
	pack     string // its rule pack; "" for the built-in rules
	desc     string
}

// allowlistable reports whether the rule may be named in Config.Allowlist.
func (r rule) allowlistable() bool { return !r.fixed && !r.critical }

// rules is the fixed rule table, in documentation order.
//
// A rule is host-only when the harm stays inside the sandbox if the backend
// is isolated: deleting or formatting the container's own disk, stopping its
// processes, editing its /etc. Rules whose harm reaches outside any sandbox
// (code fetched from the network or hidden from review, remote git and
// database state, the container engine's own host, a fork bomb that exhausts
// the shared kernel's process table) and the fail-closed rules apply to every
// backend.
var rules = []rule{
	{id: ruleRmRoot, hostOnly: true,
		desc: "recursive delete (rm -r, find -delete, find -exec rm, xargs rm, rsync --delete, mv away) of /, /*, a system directory " +
			"(/bin /boot /dev /etc /lib* /mnt /opt /proc /root /sbin /srv /sys /usr /var and their main subdirectories) or a home directory " +
			"(~, ~user, $HOME, /home, /home/*, /Users/*); a service's data (rm -r of /srv/*, /var/www, /var/lib/*, /var/backups, /opt/*, /data) " +
			"here or on another host; also any rm -r --no-preserve-root"},
	{id: ruleRmOutside, hostOnly: true,
		desc: "a recursive delete that climbs out of the job's working directory (rm -rf ../x, cd ..; rm -rf *, find .. -delete): " +
			"what lies beside the workspace is not the job's"},
	{id: ruleMkfs, hostOnly: true,
		desc: "creating or erasing file systems and partition tables: mkfs, mkfs.*, mke2fs, mkswap, wipefs -a, fdisk, sfdisk, cfdisk, " +
			"parted, gdisk, sgdisk, blkdiscard, cryptsetup luksFormat|erase (listing modes such as fdisk -l are not flagged)"},
	{id: ruleDDDevice, hostOnly: true,
		desc: "writing onto a block or memory device (/dev/sd*, hd*, vd*, xvd*, nvme*, mmcblk*, md*, dm-*, loop*, mapper/*, disk*, mem, kmem, port) " +
			"with dd of=, an output redirection (> /dev/sda), tee, cp or shred"},
	{id: ruleForkBomb,
		desc: "fork bomb: a function that calls itself at least twice concurrently (:(){ :|:& };:), or perl/python fork loops; " +
			"applies everywhere because a container shares the host kernel's process table"},
	{id: ruleKillAll, hostOnly: true,
		desc: "killing every process or init: kill -SIG -1, kill 1, killall5, pkill/killall with a match-everything pattern"},
	{id: ruleShutdown, hostOnly: true,
		desc: "stopping the machine: shutdown (not -c), reboot, halt, poweroff, init/telinit 0|6, " +
			"systemctl poweroff|reboot|halt|kexec|soft-reboot, kexec -e, writes to /proc/sysrq-trigger"},
	{id: ruleChmodSystem, hostOnly: true,
		desc: "chmod, chown, chgrp or setfacl on / , /* or a system directory (recursively, or on the directory itself), e.g. chmod -R 777 /; " +
			"a chmod -R that lets every user write a home, a service's data or a system directory's child (chmod -R 777 ~, /var/www/html)"},
	{id: ruleWriteSystem, hostOnly: true,
		desc: "writing or deleting files under /etc, /boot, /usr, /bin, /sbin, /lib*, /proc/sys, /sys or cron spools, " +
			"shell start-up files (~/.bashrc, ~/.profile, ~/.zshrc, ...), ~/.ssh/authorized_keys, autostart and systemd user units " +
			"(by redirection, tee, cp, mv, install, ln, sed -i, perl -i, dd, touch, truncate, rsync, tar -C, curl -o, wget -O), " +
			"replacing or removing a crontab (crontab FILE, crontab -, crontab -r), and account changes (useradd, usermod, passwd, ...)"},
	{id: rulePipeToShell,
		desc: "code downloaded from the network (curl, wget, fetch, httpie, nc) run by a shell or interpreter: " +
			"curl … | sh, sh <(curl …), bash -c \"$(curl …)\", eval \"$(wget -O- …)\", python3 <(curl …)"},
	{id: ruleDecodedExec,
		desc: "a decoded or transformed payload run by a shell or interpreter (base64 -d, base32 -d, xxd -r, openssl -d, uudecode, rev, tr, " +
			"gunzip and friends, piped or substituted into sh, bash -c, eval, python, ...) that the detector cannot decode whole; " +
			"a literal payload it decodes exactly as the tool would (standard padded base64, hex, rev of ASCII, tr of plain sets) is judged as what it is"},
	{id: ruleGitDestructive,
		desc: "git operations that destroy work or shared history: push --force/-f/--force-with-lease/+refspec/--mirror/--prune, " +
			"remote branch deletion (push --delete, push origin :branch), reset --hard, clean -f (without -n)"},
	{id: ruleSQLDestructive,
		desc: "DROP TABLE|DATABASE|SCHEMA, TRUNCATE, or DELETE FROM without WHERE sent to psql, mysql, mariadb, sqlite3, duckdb " +
			"or clickhouse-client (-c, -e, -cmd, --query, positional SQL, heredoc, here-string or echo pipe, a -f FILE the command wrote), " +
			"statements whose names are built at run time (DROP TABLE $t, xargs -I{} psql -c 'DROP TABLE {}'), SQL passed to a " +
			"database driver in interpreter code (cursor.execute('TRUNCATE ...')), and dropdb"},
	{id: ruleDockerHost,
		desc: "a container that can reach its host: docker/podman/nerdctl run|create|exec with --privileged, a bind mount of /, " +
			"a system or home directory or the Docker socket (-v, --volume, --mount), --pid=host, --ipc=host, --userns=host, " +
			"--cap-add ALL|SYS_ADMIN|SYS_MODULE|SYS_PTRACE|SYS_RAWIO|DAC_READ_SEARCH, --device on a block device, " +
			"an unconfined security profile, or docker volume create -o device= on such a path or a block device (host networking is not flagged)"},
	{id: rulePrivilege, hostOnly: true,
		desc: "gaining privileges: sudo, sudoedit, su, doas, pkexec, run0 (the command they run is judged as well; a read-only " +
			"command, or a bounded administrative step such as systemctl restart, zfs snapshot or apt-get install of named packages, is not)"},
	{id: ruleFirewallFlush, hostOnly: true,
		desc: "turning the firewall off: iptables/ip6tables -F|--flush, nft flush ruleset|table, nft delete table, ufw disable|reset, pfctl -d"},
	{id: ruleServiceStop, hostOnly: true,
		desc: "stopping or disabling system services: systemctl stop|disable|mask|kill|isolate, service X stop, /etc/init.d/X stop, " +
			"rc-service X stop, launchctl unload|bootout|disable, sv down|stop, supervisorctl stop, initctl stop, rcctl stop|disable, " +
			"svcadm disable, dinitctl stop, update-rc.d X disable|remove, chkconfig X off, rc-update del, s6-svc -d, sysrc X_enable=NO, " +
			"brew services stop, killall|pkill of a service's daemon (postgres, mysqld, sshd, dockerd, ...), nginx -s stop|quit, " +
			"apachectl stop, caddy stop, pm2 kill|stop all|delete all, forever stopall"},
	{id: rulePackageRemove, hostOnly: true,
		desc: "removing system packages: apt/apt-get/aptitude remove|purge|autoremove, dpkg -r|-P, yum/dnf/zypper remove|erase, rpm -e, " +
			"apk del, pacman -R*, brew uninstall, snap remove, flatpak uninstall (pip/npm uninstall are not flagged)"},
	{id: ruleHistoryWipe, hostOnly: true,
		desc: "erasing shell history or system logs: history -c, truncating or deleting ~/.bash_history and other history files, " +
			"truncating a file under /var/log, unset HISTFILE, HISTFILE=/dev/null, HISTSIZE=0, set +o history"},
	{id: ruleInlineCode,
		desc: "inline interpreter code (python -c, perl -e, ruby -e, node -e, php -r, lua -e, awk programs, code fed on stdin, " +
			"and strings they exec or eval) that runs a shell command matching another rule, or deletes or overwrites system paths itself " +
			"(shutil.rmtree('/'), fs.rmSync('/', {recursive: true}), FileUtils.rm_rf('/')), or, in code that loads a cloud, cluster, forge or " +
			"data-store client library (boto3, google-cloud, the Azure SDK, the Kubernetes clients, database drivers, Django models), calls a " +
			"method in the destroying-verb class (delete_bucket, objects.all().delete(), DeleteTableCommand, deleteNamespace, flushall, " +
			"drop_database, terminate_instances, schedule_key_deletion) or sets a lifecycle rule expiring everything within a day; " +
			"host-only exactly when what it runs is. " +
			"A shell call whose command is built at run time is unresolved-command"},
	{id: ruleUnparsable, fixed: true,
		desc: "the command (or a nested sh -c, eval or heredoc script) does not parse as shell; " +
			"fail closed: refused in deny and allowlist modes and cannot be allowlisted"},
	{id: ruleUnresolved, fixed: true,
		desc: "the program to run, or a script handed to a shell or interpreter, is built from something the detector cannot resolve " +
			"($X -rf / with X not assigned a literal earlier, $(cat f) /, ${!v}, eval \"$X\", sh -c \"$CMD\", a generated script piped into sh); " +
			"fail closed: cannot be allowlisted"},
	{id: ruleShellDialect, fixed: true,
		desc: "the command (or a nested script) reads differently as POSIX sh (dash, busybox ash: what /bin/sh -c runs) and as bash: " +
			"it does not parse in the shell that runs it (`&>`, `<<<`, `<(...)`, arrays, `${x:0:1}` under sh), or under sh it parses in both " +
			"with a different structure (`[[ ]]`, `(( ))`, `$'...'`, `declare`, `let`, `coproc`, `x+=1`), which is where a payload hides " +
			"from one reading; fail closed: cannot be allowlisted. Judge a bash job with shell bash"},
	{id: ruleEnvCode, fixed: true,
		desc: "the job's environment sets a variable that makes a shell, an interpreter or the loader run code the command does not show " +
			"(BASH_ENV, ENV, BASH_FUNC_*, SHELLOPTS, PS4, PROMPT_COMMAND, IFS, LD_*, PYTHONPATH, PERL5OPT, NODE_OPTIONS, GIT_SSH_COMMAND, " +
			"GIT_CONFIG_*, PAGER and EDITOR unless plain, and more), a PATH with anything but the standard system directories, " +
			"or a value that is a bash function definition; fail closed: cannot be allowlisted"},
	{id: ruleTooComplex, fixed: true,
		desc: "the command is past a bound of the detector, which would otherwise stop looking: brace expansion producing more than " +
			"64 words, a variable with more than 8 values or a value over 64 KiB, more than 9 expansions of a word or 16 argument lists of " +
			"a command, more than 32 inputs of xargs -I, find -exec or parallel (128 appended by xargs), more than 256 function calls, " +
			"arithmetic following more than 4 variables naming variables, " +
			"$(...) outputs nested more than 32 levels, statements more than 200, scripts more than 8, brackets more than 1000, " +
			"more than 1000 nested scripts or 1 MiB of them, or a decision that takes more than 2^20 steps, 128 MiB or 250ms; " +
			"fail closed: cannot be allowlisted"},
}

// sensitivePathRules are the packs whose rules are code (the sensitive-path
// model and egress): see match_paths.go.
var sensitivePathRules = []rule{
	{id: ruleCredentialDestroy, pack: "paths", critical: true,
		desc: "deleting, truncating, overwriting or moving away credentials and keys: ~/.ssh private keys, ~/.aws, ~/.kube/config, " +
			"~/.docker/config.json, ~/.netrc, ~/.pgpass, ~/.git-credentials, ~/.gnupg, cloud CLI configuration, keychains, /etc/shadow"},
	{id: ruleHomeDestroy, pack: "paths", critical: true,
		desc: "recursively deleting or moving away a direct child of a home directory (~/Documents, ~/.config, ~/.local, ~/projects); " +
			"caches (~/.cache, ~/.npm, ...) are not flagged"},
	{id: ruleCredentialRead, pack: "paths",
		desc: "reading credentials or keys with a program that prints, copies, packs or sends them (cat, grep, base64, tar, cp, scp, " +
			"curl -d @FILE, an input redirection): the job's output and what it sends leave the machine"},
	{id: ruleShellSocket, pack: "egress", critical: true,
		desc: "a shell wired to the network: a shell or exec redirected to /dev/tcp or /dev/udp, nc -e, ncat --sh-exec, socat exec:, " +
			"an interactive shell fed by a pipe"},
	{id: ruleEnvSend, pack: "egress", critical: true,
		desc: "the environment's values sent over the network: env, printenv, set or /proc/*/environ (or what is made of them: " +
			"base64, xxd) piped into, or substituted into the arguments of, curl, wget, nc, ssh, dig and the like"},
	{id: ruleWinResource, pack: "windows", hostOnly: true,
		desc: "a PowerShell cmdlet of the destroying verb class (Remove-, Uninstall-, Unregister-, Clear-, Reset-, Dismount-, and Disable- of " +
			"accounts, firewalls, tasks or BitLocker) on anything but the session's own state (Remove-Variable, Remove-Module, Remove-Job); " +
			"-WhatIf only reports"},
	{id: ruleDataSend, pack: "egress", critical: true,
		desc: "a database's dump (pg_dump, pg_dumpall, mysqldump, mongodump --archive, redis-cli --rdb, sqlite3 .dump), a shell " +
			"history or a home directory packed onto stdout (tar czf - ~), or what is made of them (gzip, base64), piped into, " +
			"substituted into the arguments of, or written to a file then sent by a network program; scp -r or rsync of a home " +
			"directory to another machine"},
}

// Rules lists every rule the detector knows, in a stable order. The caller
// owns the returned slice.
func Rules() []RuleInfo {
	out := make([]RuleInfo, len(rules))
	for i, r := range rules {
		out[i] = RuleInfo{ID: r.id, Description: r.desc, HostOnly: r.hostOnly, Critical: r.critical, Pack: r.pack}
	}
	return out
}

// ruleIndex maps a rule ID to its place in rules (built by indexRules once
// the packs are loaded).
var ruleIndex map[string]int

func indexRules() {
	ruleIndex = make(map[string]int, len(rules))
	for i, r := range rules {
		ruleIndex[r.id] = i
	}
}

func lookupRule(id string) (rule, bool) {
	if ruleIndex == nil {
		for _, r := range rules {
			if r.id == id {
				return r, true
			}
		}
		return rule{}, false
	}
	i, ok := ruleIndex[id]
	if !ok {
		return rule{}, false
	}
	return rules[i], true
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
