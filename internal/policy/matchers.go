package policy

import (
	"slices"
	"strings"
)

// A matcher inspects one resolved command and records the rules it hits.
// Matchers are pure: nested scripts are walked by nest, not by matchers.
type matcher func(c *command, h *hits)

// matcherTable maps a program name (see canonical) to its matchers.
var matcherTable = map[string][]matcher{
	// rm-root, and the deletes that also hit write-system or history-wipe
	"rm": {matchRm}, "unlink": {matchRm}, "rimraf": {matchRimraf}, "srm": {matchRm}, "shred": {matchShred}, "find": {matchFindDelete, matchFindOutput}, "ed": {matchEditorWrite}, "red": {matchEditorWrite}, "ex": {matchEditorWrite},
	"rsync": {matchRsync, matchCopy}, "mv": {matchMv},
	// write-system, dd-device, history-wipe through writing tools
	"cp": {matchCopy}, "install": {matchCopy}, "ln": {matchLn}, "tee": {matchTee}, "dd": {matchDD},
	"awk": {matchAwkOutput}, "gawk": {matchAwkOutput}, "mawk": {matchAwkOutput}, "nawk": {matchAwkOutput},
	"sed": {matchInPlace}, "perl": {matchInPlace}, "yq": {matchInPlace}, "touch": {matchTouch}, "truncate": {matchTouch},
	"tar": {matchTar}, "curl": {matchDownloadOutput}, "wget": {matchDownloadOutput},
	"crontab": {matchCrontab}, "sysctl": {matchSysctl}, "sudoedit": {matchSudoedit},
	"useradd": {matchAccounts}, "userdel": {matchAccounts}, "usermod": {matchAccounts},
	"groupadd": {matchAccounts}, "groupdel": {matchAccounts}, "groupmod": {matchAccounts},
	"passwd": {matchAccounts}, "chpasswd": {matchAccounts}, "visudo": {matchAccounts}, "vipw": {matchAccounts},
	// mkfs
	"mkfs": {matchMkfs}, "mke2fs": {matchMkfs}, "mkswap": {matchMkfs}, "wipefs": {matchMkfs},
	"fdisk": {matchMkfs}, "sfdisk": {matchMkfs}, "cfdisk": {matchMkfs}, "parted": {matchMkfs},
	"gdisk": {matchMkfs}, "sgdisk": {matchMkfs}, "cgdisk": {matchMkfs}, "blkdiscard": {matchMkfs},
	"cryptsetup": {matchMkfs},
	// processes and the machine
	"kill": {matchKill}, "pkill": {matchPkill}, "killall": {matchPkill}, "killall5": {matchKillall5},
	"shutdown": {matchShutdown}, "reboot": {matchShutdown}, "halt": {matchShutdown}, "poweroff": {matchShutdown},
	"init": {matchShutdown}, "telinit": {matchShutdown}, "kexec": {matchShutdown},
	"systemctl": {matchShutdown, matchServiceStop}, "service": {matchServiceStop},
	"rc-service": {matchServiceStop}, "launchctl": {matchServiceStop}, "sv": {matchServiceStop}, "supervisorctl": {matchServiceStop},
	"initctl": {matchServiceStop}, "rcctl": {matchServiceStop}, "svcadm": {matchServiceStop}, "dinitctl": {matchServiceStop},
	"update-rc.d": {matchServiceStop}, "chkconfig": {matchServiceStop}, "rc-update": {matchServiceStop}, "s6-svc": {matchServiceStop},
	"sysrc": {matchServiceStop}, "nginx": {matchServiceStop}, "openresty": {matchServiceStop}, "angie": {matchServiceStop},
	"pm2": {matchServiceStop}, "apachectl": {matchServiceStop}, "apache2ctl": {matchServiceStop}, "forever": {matchServiceStop}, "caddy": {matchServiceStop},
	"gitlab-ctl": {matchServiceStop}, "monit": {matchServiceStop}, "postfix": {matchServiceStop}, "dovecot": {matchServiceStop},
	"pumactl": {matchServiceStop}, "uwsgi": {matchServiceStop}, "ghost": {matchServiceStop},
	"rabbitmqctl": {matchServiceStop}, "catalina.sh": {matchServiceStop}, "varnishadm": {matchServiceStop},
	// permissions and privilege
	"chmod": {matchChmod}, "chown": {matchChmod}, "chgrp": {matchChmod}, "setfacl": {matchChmod},
	"sudo": {matchPrivilege}, "su": {matchPrivilege}, "doas": {matchPrivilege}, "pkexec": {matchPrivilege},
	"run0": {matchPrivilege},
	// network, firewall, containers
	"iptables": {matchFirewall}, "nft": {matchFirewall}, "ufw": {matchFirewall}, "pfctl": {matchFirewall},
	"docker": {matchDocker}, "podman": {matchDocker}, "nerdctl": {matchDocker},
	// packages
	"apt": {matchPackages}, "apt-get": {matchPackages}, "aptitude": {matchPackages}, "dpkg": {matchPackages},
	"yum": {matchPackages}, "dnf": {matchPackages}, "microdnf": {matchPackages}, "tdnf": {matchPackages},
	"zypper": {matchPackages}, "rpm": {matchPackages}, "apk": {matchPackages}, "pacman": {matchPackages},
	"brew": {matchPackages, matchServiceStop}, "snap": {matchPackages}, "flatpak": {matchPackages}, "port": {matchPackages},
	// history, databases, version control
	"history": {matchHistory}, "set": {matchHistory},
	"git": {matchGit}, "dropdb": {matchDropDB}, "mysqladmin": {matchDropDB}, "mariadb-admin": {matchDropDB},
}

// matchersFor returns the matchers for the program c runs.
func matchersFor(c *command) []matcher {
	if strings.HasPrefix(c.prog, "/etc/init.d/") || strings.HasPrefix(c.prog, "/etc/rc.d/") {
		return []matcher{matchInitScript}
	}
	if ms := matcherTable[canonical(c.name)]; ms != nil {
		if strings.IndexByte(c.name, '-') > 0 && psCmdletName.MatchString(c.name) && plainName(c.prog) {
			// a cmdlet a pack knows by name (Invoke-WebRequest): its
			// statement is PowerShell's too
			return append(slices.Clip(ms), matchCmdletLine)
		}
		return ms
	}
	if psCmdlet(c.name) && plainName(c.prog) {
		return cmdletMatchers
	}
	if genericProgram(c.name) && !projectProgram(c.prog) {
		return genericMatchers
	}
	return nil
}

// addPackMatchers adds, once the packs are loaded, the credential readers'
// and the packs' matchers to the table, so that a lookup builds nothing.
func addPackMatchers() {
	for _, name := range credentialReaders {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchCredentialRead)
	}
	for _, name := range netSenders {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchEnvSend)
	}
	for _, name := range objectUploaders {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchUploadEnv)
	}
	for _, name := range fileSharers {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchEnvFileShare)
	}
	matcherTable["find"] = append(slices.Clip(matcherTable["find"]), matchFindCredentials)
	for name := range alsoGeneric {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchPacksAny) // also_generic: the generic verbs too
	}
	for name, tools := range packTools {
		if slices.ContainsFunc(tools, func(t *packTool) bool { return t.pack == "windows" }) {
			matcherTable[name] = append(slices.Clip(matcherTable[name]), matchWindowsDeletes)
		}
	}
	for _, name := range []string{"terraform", "tofu", "terragrunt"} {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchTFCLIArgs)
	}
	for _, name := range []string{"reg", "reg.exe", "regedit", "regedit.exe"} {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchRegImport)
	}
	for _, name := range []string{"scp", "rsync"} {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchTreeCopy)
	}
	for _, name := range []string{"echo", "printf"} {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchSecretPrint)
	}
	for _, name := range []string{"python", "python2", "python3", "php", "ruby", "http-server", "serve", "miniserve", "darkhttpd",
		"live-server", "servez", "static-web-server", "caddy", "webfsd"} {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchFileServer)
	}
	for _, name := range []string{"jq", "gojq", "jaq"} {
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchKeyListPrint)
	}
	for name, tools := range packTools {
		goMatched := matcherTable[name] != nil
		matcherTable[name] = append(slices.Clip(matcherTable[name]), matchPacks)
		if !goMatched && (nestingOnly(name, tools) || noVerbModel(name, tools)) {
			// a pack only says what the program runs (knife exec, gdb -ex),
			// or judges a few of its forms without a model of its verbs
			// (atlas's migrations, not atlas clusters delete): its own
			// verbs are still read by the generic tools' rules
			matcherTable[name] = append(matcherTable[name], matchGenericVerbs)
		}
	}
}

// nestingOnly reports a program whose packs give no rule of its own, only
// the commands it runs, and that no shell, interpreter, database client or
// wrapper table knows.
func nestingOnly(name string, tools []*packTool) bool {
	_, wrapper := wrappers[name]
	wrapper = wrapper && !sometimesLaunchers[name]
	if wrapper || shells[name] || interpreterLang(name) != langShell || sqlClients[name] != nil || nestedPrograms[name] {
		return false
	}
	return !slices.ContainsFunc(tools, func(t *packTool) bool { return len(t.Rules) > 0 })
}

// taskRunners run the project's own tasks: make destroy-preview, just
// drop-fixtures and gradlew cleanAll mean what the project says.
var taskRunners = map[string]bool{"make": true, "gmake": true, "just": true, "task": true, "go-task": true, "mise": true, "mvn": true,
	"mvnw": true, "gradle": true, "gradlew": true, "./gradlew": true, "ant": true, "rake": true, "composer": true, "poetry": true, "uv": true,
	"uvx": true, "pdm": true, "rye": true, "hatch": true, "tox": true, "nox": true, "invoke": true, "fab": true, "fab2": true, "npm": true,
	"yarn": true, "pnpm": true, "bun": true, "deno": true, "pipx": true, "stack": true, "lein": true, "bundler": true}

// noVerbModel reports a program no pack reads by its verbs: no tool of
// it names destroy verbs, and no rule asks for one.
func noVerbModel(name string, tools []*packTool) bool {
	_, wrapper := wrappers[name]
	wrapper = wrapper && !sometimesLaunchers[name]
	if wrapper || shells[name] || interpreterLang(name) != langShell || sqlClients[name] != nil || nestedPrograms[name] || taskRunners[name] {
		return false
	}
	return !slices.ContainsFunc(tools, func(t *packTool) bool {
		// a launcher whose first operand starts what it runs (envchain NS
		// CMD): the command is judged, not read for the tool's verbs
		launcher := slices.ContainsFunc(t.Runs, func(p string) bool { return p == "" || p == "*" })
		return launcher || len(t.Verbs) > 0 || len(t.Destroy) > 0 || len(t.After) > 0 || slices.ContainsFunc(t.Rules, pathNamesDestroyVerb)
	})
}

// pathNamesDestroyVerb reports a rule that asks for a destroy verb, or
// whose path names one the generic tools know (terraform destroy).
func pathNamesDestroyVerb(r packRule) bool {
	if r.Verb != "" {
		return true
	}
	for _, alt := range r.paths {
		for _, word := range alt {
			for _, w := range word {
				for _, g := range packAny {
					if matchAnyWord(g.destroy, w) || matchAnyWord(g.After, w) {
						return true
					}
				}
			}
		}
	}
	return false
}

// matchGenericVerbs runs the generic tools' rules for a program a pack
// knows only for what it runs, unless the program is the project's own.
func matchGenericVerbs(c *command, h *hits) {
	if !projectProgram(c.prog) && plainName(c.name) {
		matchPacksAny(c, h)
	}
}

// canonical maps versioned and variant program names to one name:
// mkfs.ext4 is mkfs, python3.12 is python, ip6tables-nft is iptables.
func canonical(name string) string {
	switch {
	case strings.HasPrefix(name, "mkfs.") || strings.HasPrefix(name, "mkfs_") || strings.HasPrefix(name, "newfs_") ||
		name == "newfs" || name == "mkntfs" || name == "mkdosfs" || name == "mkexfatfs" || name == "mkreiserfs" ||
		name == "mkudffs" || name == "mkjfs" || name == "mkhfs" || name == "mkfs_msdos":
		return "mkfs"
	case strings.HasPrefix(name, "iptables") || strings.HasPrefix(name, "ip6tables") ||
		name == "ebtables" || name == "arptables":
		return "iptables"
	case strings.HasPrefix(name, "perl") && strings.Trim(name[4:], "0123456789.") == "":
		return "perl"
	}
	return name
}
