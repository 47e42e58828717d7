package policy

import (
	"path"
	"regexp"
	"slices"
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
		if recursive && c.unresolvedRoot(o) {
			h.add(ruleRmRoot, c.name+" -r on "+unresolvedShow(o))
		}
		if d, ok := c.cwdEntries(o); recursive && ok && c.unresolvedRoot(d) {
			h.add(ruleRmRoot, c.name+" -r on "+quoteDetail(o.val)+" after cd "+unresolvedShow(*c.cwd.from))
		}
		for _, t := range c.targets(o) {
			n := len(*h)
			deleteHits(c.name, t, recursive, h)
			switch {
			case len(*h) > n || !recursive:
			case c.remote && (remoteServiceDir(t.path) || remoteServiceData(t.path)):
				h.add(ruleRmRoot, c.name+" -r on "+t.show+" on another host")
			case serviceDataDir(t.path):
				h.add(ruleRmRoot, c.name+" -r on "+t.show+", a service's or a mounted disk's data")
			}
			if len(*h) == n && databaseFiles(t.path) {
				h.add(ruleRmRoot, c.name+" on "+t.show+", a database server's own files (its data, WAL or binary logs)")
			}
			if len(*h) == n && localDatabase(t.path) {
				h.add(ruleRmRoot, c.name+" on "+t.show+", a local database (its data is lost, as a server's would be)")
			}
		}
	}
	if recursive && noPreserve {
		h.add(ruleRmRoot, c.name+" -r --no-preserve-root")
	}
}

// cwdEntries returns, for an operand that names all the working
// directory's entries ("*", "./*") when cd reached that directory
// through a word the detector cannot resolve, the operand written from
// that word ("$DIR"/*): what the walker knows of the one is what it knows
// of the other.
func (c *command) cwdEntries(o arg) (arg, bool) {
	if c.cwd.from == nil || !o.lit {
		return arg{}, false
	}
	if o.val != "*" && o.val != "./*" { // rm refuses . and ..
		return arg{}, false
	}
	d := *c.cwd.from
	d.val, d.tail, d.src = d.val+"/*", d.tail+"/*", d.src+"/*"
	return d, true
}

// remoteRunners are the nesting steps (see frame.via) whose command runs
// on another machine: ssh's remote command (also fed on its stdin),
// kubectl exec|debug -- CMD, salt's cmd.run, pdsh and its kind, gcloud
// compute ssh --command, az vm run-command --scripts, aws ssm
// send-command --parameters commands=....
var remoteRunners = []string{"ssh", "| ssh", "ssh <<", "ssh <<<", "autossh", "mosh", "kubectl", "oc", "kubecolor", "microk8s.kubectl",
	"pdsh", "pssh", "parallel-ssh", "clush", "dsh", "gcloud --command", "az --scripts", "az --script", "aws --parameters",
	"pyinfra", "fab", "fab2", "mussh -c"}

// remoteRunnerPaths begin the nesting steps of runners whose step names
// the hosts too: knife ssh QUERY, bolt command run, mco shell run, tsh ssh HOST.
var remoteRunnerPaths = []string{"knife ssh ", "bolt command run", "mco shell run", "tsh ssh ", "kamal app exec", "kamal accessory exec"}

// remoteVia reports whether a nesting path passes through a command that
// runs on another machine.
func remoteVia(via string) bool {
	if via == "" {
		return false
	}
	for part := range strings.SplitSeq(via, " > ") {
		if slices.Contains(remoteRunners, part) || slices.ContainsFunc(remoteRunnerPaths, func(p string) bool { return strings.HasPrefix(part, p) }) ||
			(strings.HasPrefix(part, "salt ") || strings.HasPrefix(part, "salt-ssh ")) && strings.Contains(part, " cmd.") {
			return true
		}
	}
	return false
}

// remoteServiceDir reports whether p is, on a server, a system directory's
// direct child (/var/www, /srv/app, /opt/app, /etc/nginx, /var/lib/kubelet)
// or a top-level directory (/data), or all entries of one: what a service
// or its data lives in. Temporary directories and home directories' own
// trees are not.
func remoteServiceDir(p string) bool {
	c, ok := deletedTree(p)
	if !ok {
		return false
	}
	if c == "/tmp" || strings.HasPrefix(c, "/tmp/") || c == "/var/tmp" || strings.HasPrefix(c, "/var/tmp/") || strings.HasPrefix(c, "/dev/shm") {
		return false
	}
	dir := path.Dir(c)
	switch dir {
	case "/home", "/Users", "/mnt", "/media", "/Volumes", "/private", "/dev", "/proc", "/sys", "/run":
		return false
	}
	return isSystemDir(dir, false)
}

// remoteServiceData reports, on a server, a tree inside a service's
// directory under one of serviceDataDirs that holds what the service
// serves or keeps: a first-level tree (/srv/shop/releases, or all its
// entries) other than what is rebuilt (tmp, cache, logs, build output),
// or a data tree one level further (/srv/shop/shared/uploads).
func remoteServiceData(p string) bool {
	c, ok := deletedTree(p)
	if !ok || strings.ContainsAny(path.Base(c), "*?[") ||
		slices.ContainsFunc(serviceStateRebuilt, func(r string) bool { return c == r || strings.HasPrefix(c, r+"/") }) {
		return false
	}
	for _, base := range serviceDataDirs {
		rest, ok := strings.CutPrefix(c, base+"/")
		if !ok || base == "/Volumes" || base == "/mnt" || base == "/media" {
			continue
		}
		parts := strings.Split(rest, "/") // parts[0] is the service's directory: shop, html, postgresql
		switch len(parts) {
		case 2:
			switch strings.ToLower(parts[1]) {
			case "tmp", "temp", "cache", ".cache", "log", "logs", "build", "dist", "node_modules", "vendor", "__pycache__", "run", "pids", "sockets", "lock", "locks":
				return false
			}
			return true
		case 3:
			switch strings.ToLower(parts[2]) {
			case "uploads", "data", "storage", "media", "files", "db", "database", "backups", "public", "assets":
				return true
			}
		}
		return false
	}
	return false
}

// serviceDataDirs are the directories whose direct children hold a
// machine's services and their data (FHS: site data, variable state,
// add-on packages, web roots, backups), on this host as on another.
var serviceDataDirs = []string{"/srv", "/var/www", "/var/lib", "/var/backups", "/var/opt", "/var/mail", "/opt", "/data",
	"/Volumes", "/mnt", "/media", // and the mount points of disks: /Volumes/Data, /mnt/backup, /media/usb
	"/scratch", "/lustre", "/gpfs", "/beegfs", "/project", "/projects", // clusters' shared file systems: /lustre/project, /scratch/*
	"/sdcard", "/storage/emulated/0", // an Android device's shared storage (adb shell rm -rf /sdcard/*)
	"/exports", "/export", "/nfs", "/bricks", // NFS exports and Gluster bricks: other machines' data
	"/prometheus", "/loki", "/bitnami", // the data directories of common server images
	dockerVolumes} // a named volume's data (docker run -v pgdata:/data alpine rm -rf /data/*)

// serviceStateRebuilt are children of serviceDataDirs that package
// managers rebuild: deleting them loses nothing.
var serviceStateRebuilt = []string{"/var/lib/apt", "/var/lib/apt/lists", "/var/lib/cache"}

// serviceDataDir reports whether deleting p recursively deletes one of
// serviceDataDirs, a direct child of one (/srv/data, /var/www/html,
// /var/lib/postgresql, /opt/app) or all entries of either: a service or
// its data. Deeper trees (/opt/app/build) are not.
func serviceDataDir(p string) bool {
	c, ok := deletedTree(p)
	if !ok || slices.Contains(serviceStateRebuilt, c) {
		return false
	}
	if slices.Contains(serviceDataDirs, path.Dir(path.Dir(c))) && c != "/var/www" && !slices.Contains([]string{"/Volumes", "/mnt", "/media"}, path.Dir(path.Dir(c))) {
		// a service's own data tree (/opt/shop/data, /srv/shop/uploads),
		// or any tree of a data store's directory (/var/lib/prometheus/metrics2,
		// /var/lib/postgresql/16) but what it rebuilds
		if slices.Contains(knownServiceData, path.Base(path.Dir(c))) {
			switch strings.ToLower(path.Base(c)) {
			case "tmp", "temp", "cache", ".cache", "log", "logs", "run", "lock", "locks", "workspace", "workspaces":
			default:
				return true
			}
		}
		switch strings.ToLower(path.Base(c)) {
		case "uploads", "data", "storage", "media", "files", "db", "database", "backups", "backup", "jobs", "wp-content", "repositories", "git-data", "secrets", "keys", "certs", "home", "homes", "projects", "shares":
			return true
		}
	}
	if base := path.Base(c); strings.ContainsAny(base, "*?[") && slices.Contains(serviceDataDirs, path.Dir(c)) {
		// /var/lib/postgres*: a pattern that names a known service's data
		// directory
		for _, d := range knownServiceData {
			if ok, _ := path.Match(base, d); ok {
				return true
			}
		}
		return false
	}
	return slices.Contains(serviceDataDirs, c) || slices.Contains(serviceDataDirs, path.Dir(c)) && c != "/var/www"
}

// knownServiceData are directory names of well-known services' data under
// /var/lib, /srv or /opt: a glob that matches one deletes it.
var knownServiceData = []string{"postgresql", "pgsql", "mysql", "mariadb", "mongodb", "redis", "elasticsearch", "opensearch", "docker",
	"containerd", "kubelet", "etcd", "rabbitmq", "cassandra", "clickhouse", "influxdb", "grafana", "prometheus", "jenkins", "gitlab",
	"minio", "vault", "consul", "nomad", "neo4j", "couchdb", "zookeeper", "kafka", "mail", "www", "backups"}

// deletedTree is the absolute directory a recursive delete of p empties
// or removes (/srv/app for /srv/app/*), cleaned.
func deletedTree(p string) (string, bool) {
	c, ok := cleanAbs(p)
	if !ok || !strings.HasPrefix(c, "/") {
		return "", false
	}
	for strings.HasSuffix(c, "/*") {
		c = strings.TrimSuffix(c, "/*")
	}
	return c, true
}

// matchRimraf judges rimraf (npx rimraf DIR), which always deletes whole
// trees, as rm -r.
func matchRimraf(c *command, h *hits) {
	r := *c
	r.tree = true
	matchRm(&r, h)
}

// deleteHits classifies deleting t.
func deleteHits(tool string, t target, recursive bool, h *hits) {
	switch {
	case recursive && protectedRoot(t.path, true):
		h.add(ruleRmRoot, tool+" -r on "+t.show)
	case recursive && !t.guess && outsideWorkdir(t.path):
		h.add(ruleRmOutside, tool+" -r on "+t.show+", outside the working directory")
	case recursive && userProject(t.path):
		h.add(ruleRmOutside, tool+" -r on "+t.show+", a project of the user's outside the working directory")
	case recursive && tool != "mv" && path.Clean(strings.Trim(t.show, `"'`)) == ".git" && !strings.HasPrefix(t.path, "/tmp/"):
		// the working directory's own repository (a clone's .git removed
		// to vendor it, vendor/lib/.git, is that clone's)
		h.add(ruleGitDestructive, tool+" -r on "+t.show+": the repository's history (every commit, branch and stash not pushed)")
	case tool != "mv" && (path.Base(t.path) == "terraform.tfstate" || path.Base(t.path) == "terraform.tfstate.backup") && !strings.HasPrefix(t.path, "/tmp/"):
		// a local backend's state is the only record of what Terraform
		// created: without it, the infrastructure is orphaned
		h.add(ruleRmRoot, tool+" on "+t.show+", Terraform's state (its only record of the infrastructure it manages)")
	case sensitiveDeleteHits(tool, t, recursive || tool == "mv", tool == "mv", h):
	case systemLogs(t.path, recursive):
		h.add(ruleHistoryWipe, tool+" of system logs "+t.show)
	case isHistoryFile(t.path) && (isAbsolute(t.path) || isShellHistory(t.path)):
		// a history file in the job's own directory (./.python_history
		// a REPL left in the project) is the project's, not the user's
		h.add(ruleHistoryWipe, tool+" of history file "+t.show)
	case isSystemFile(t.path):
		h.add(ruleWriteSystem, tool+" of system file "+t.show)
	case tool != "mv" && backupPath(t.path):
		h.add(ruleRmRoot, tool+" on "+t.show+", backups")
	}
}

// backupDirs are directory names that hold backups, dumps or snapshots.
var backupDirs = []string{"backup", "backups", "Backup", "Backups", "BACKUP", "BACKUPS", "bak", ".snapshots", "snapshots", "dumps", "Backups.backupdb",
	"db-backups", "db_backups", "pg_backups", "mysql-backups", "barman", "pgbackrest"}

// backupPath reports a path outside the job's directory (absolute, or in
// the home directory) that is a backup directory or lies in one: the copy
// a restore needs. A project's own backups/ folder is the project's.
func backupPath(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	if rel, ok := homePath(c); ok {
		c = rel
	} else if !strings.HasPrefix(c, "/") {
		return false
	}
	for _, part := range strings.Split(c, "/") {
		if slices.Contains(backupDirs, part) {
			return true
		}
	}
	return false
}

// outsideWorkdir reports a path relative to the job's working directory
// (the walker keeps paths relative while that directory is not known) that
// climbs out of it: .., ../x, build/../../x.
func outsideWorkdir(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, homeMarker) {
		return false
	}
	c := path.Clean(p)
	return c == ".." || strings.HasPrefix(c, "../")
}

// matchShred judges shred: on a device it is dd-device, on a history or
// system file a delete; run over whole trees (find -exec, xargs fed by
// find, rg --pre) it destroys them as rm -r does.
func matchShred(c *command, h *hits) {
	ops, _ := operands(c.args, optSpec{short: "ns", long: []string{"iterations", "size", "random-source", "remove"}})
	for _, o := range ops {
		if c.unresolvedDevice(o) {
			h.add(ruleDDDevice, "shred of "+unresolvedShow(o))
		}
		if c.tree && c.unresolvedRoot(o) {
			h.add(ruleRmRoot, "shred of every file under "+unresolvedShow(o))
		}
		for _, t := range c.targets(o) {
			if isBlockDevice(t.path) {
				h.add(ruleDDDevice, "shred of device "+t.show)
				continue
			}
			deleteHits("shred", t, c.tree, h)
		}
	}
}

// matchFindDelete judges find ROOT ... -delete. Without a test that
// narrows what it deletes by name, it deletes whole trees, as rm -r does.
// Narrowed by name (find ~ -name '*.tmp' -delete), it deletes files inside
// the roots: that is refused in a system directory (write-system) and for
// a name that matches a history file, and approved elsewhere, home
// included.
func matchFindDelete(c *command, h *hits) {
	roots, expr := findParts(c.args)
	if !slices.ContainsFunc(expr, func(e arg) bool { return e.lit && e.val == "-delete" }) {
		return
	}
	names, narrowed := findNames(expr)
	for _, r := range roots {
		if !narrowed {
			if c.unresolvedRoot(r) {
				h.add(ruleRmRoot, "find -delete on "+unresolvedShow(r))
			}
			for _, t := range c.targets(r) {
				n := len(*h)
				deleteHits("find -delete", t, true, h)
				if len(*h) == n && (serviceDataDir(t.path) || databaseFiles(t.path)) {
					h.add(ruleRmRoot, "find -delete on "+t.show+", a service's or a mounted disk's data")
				}
			}
			continue
		}
		for _, t := range c.targets(r) {
			if protectedRoot(t.path, false) {
				h.add(ruleWriteSystem, "find -delete of files under "+t.show)
			} else if backupPath(t.path) {
				h.add(ruleRmRoot, "find -delete of files under "+t.show+", backups")
			}
		}
	}
	for _, n := range names {
		for _, hf := range historyFiles {
			if ok, _ := path.Match(n, hf); ok {
				h.add(ruleHistoryWipe, "find -delete of history files "+quoteDetail(n))
				return
			}
		}
	}
}

// findNameTests are find's tests that select entries by name or path.
var findNameTests = []string{"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex"}

// findNames returns the patterns of find's name tests, and whether they
// narrow what the expression selects: every pattern is a known literal
// that is not a match-everything one, and the expression has no operator
// (-o, !, -not, ",") that could select what the tests do not.
func findNames(expr []arg) (names []string, narrowed bool) {
	narrowed = true
	for i := 0; i < len(expr); i++ {
		e := expr[i]
		if !e.lit {
			continue
		}
		switch {
		case e.val == "-o" || e.val == "-or" || e.val == "!" || e.val == "-not" || e.val == ",":
			narrowed = false
		case slices.Contains(findNameTests, e.val):
			if i+1 >= len(expr) || !expr[i+1].lit || strings.Trim(expr[i+1].val, "*.?/") == "" || expr[i+1].val == ".*" {
				narrowed = false
				continue
			}
			names = append(names, expr[i+1].val)
			i++
		}
	}
	return names, narrowed && len(names) > 0
}

// matchRsync judges rsync --delete onto a protected root (it empties it).
func matchRsync(c *command, h *hits) {
	ops, opts := operands(c.args, optSpec{short: "eBfT", long: []string{"rsh", "rsync-path", "filter", "exclude", "include", "exclude-from", "include-from", "files-from", "temp-dir", "compare-dest", "copy-dest", "link-dest", "partial-dir", "log-file", "password-file", "chmod", "chown", "usermap", "groupmap", "timeout", "port", "bwlimit", "backup-dir", "suffix", "max-size", "min-size", "max-delete", "info", "debug", "out-format", "skip-compress", "modify-window", "block-size", "checksum-choice", "compress-choice", "outbuf"}})
	deletes := false
	for _, o := range opts {
		deletes = deletes || strings.HasPrefix(o.name, "delete") || o.name == "del"
	}
	if !deletes || rsyncDryRun(opts) || len(ops) < 2 {
		return
	}
	if dest := ops[len(ops)-1]; c.unresolvedRoot(dest) {
		h.add(ruleRmRoot, "rsync --delete onto "+unresolvedShow(dest))
	}
	// from an empty directory (/tmp/empty/) it only deletes: what it
	// empties counts as a recursive delete of its entries, data included
	empty := len(ops) == 2 && ops[0].lit && emptySource.MatchString(ops[0].val)
	if dest := ops[len(ops)-1]; dest.lit {
		// user@host:/path: what it deletes is on another machine
		if _, p, ok := strings.Cut(dest.val, ":"); ok && !strings.Contains(dest.val[:strings.Index(dest.val, ":")], "/") && p != "" {
			if p == "~" || p == "." || strings.HasPrefix(p, "~/") && strings.Count(strings.Trim(p, "/"), "/") == 0 {
				p = "/home/user" // a home directory, or one of its children
			}
			if tmp := strings.HasPrefix(path.Clean(p), "/tmp/") || strings.HasPrefix(path.Clean(p), "/var/tmp/"); !tmp &&
				(empty && strings.HasPrefix(p, "/") || protectedRoot(p, true)) {
				h.add(ruleRmRoot, "rsync --delete onto "+quoteDetail(dest.val)+" on another host")
				return
			}
		}
	}
	for _, t := range c.targets(ops[len(ops)-1]) {
		if protectedRoot(t.path, true) || empty && (serviceDataDir(t.path) || serviceDataDir(strings.TrimRight(t.path, "/")+"/*")) {
			h.add(ruleRmRoot, "rsync --delete onto "+t.show)
		}
	}
}

// emptySource is a directory named as an empty one, the idiom of a delete
// by rsync (rsync -a --delete /tmp/empty/ DIR/).
var emptySource = regexp.MustCompile(`(?i)(^|/)(empty|blank|null|nothing|void)(_?dir)?/?$`)

// rsyncDryRun reports whether rsync's options ask for a dry run (-n,
// --dry-run or an unambiguous prefix of it) that a later --no-dry-run
// (--no-n) does not take back: it changes nothing.
func rsyncDryRun(opts []option) bool {
	dry := false
	for _, o := range opts {
		switch {
		case !o.long && o.name == "n" || o.long && len(o.name) >= 3 && strings.HasPrefix("dry-run", o.name):
			dry = true
		case o.long && (o.name == "no-n" || len(o.name) >= 6 && strings.HasPrefix("no-dry-run", o.name)):
			dry = false
		}
	}
	return dry
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

// systemLogs reports a delete of the system's logs: /var/log, its journal
// or audit trees, or the logs of logins and authentication (auth.log,
// secure, wtmp); a rotated file alone (syslog.2.gz) is housekeeping.
func systemLogs(p string, recursive bool) bool {
	c, ok := cleanAbs(p)
	if ok && strings.HasPrefix(c+"/", "/var/audit/") {
		return true // macOS's (BSM) audit trail
	}
	if !ok || !strings.HasPrefix(c+"/", "/var/log/") {
		return false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(c, "/var/log"), "/")
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case rel == "" || strings.Trim(rel, "*") == "":
		return true // /var/log, /var/log/*
	case top == "journal" || top == "audit":
		return recursive || strings.Contains(rel, "*") || strings.HasSuffix(rel, ".journal") || strings.HasPrefix(path.Base(rel), "audit.log")
	}
	switch strings.TrimSuffix(path.Base(rel), "*") {
	case "auth.log", "secure", "wtmp", "btmp", "lastlog", "faillog", "syslog", "messages", "kern.log":
		return true
	}
	return false
}

// databaseRoots are the directories database servers keep their data,
// write-ahead and binary logs in, and hypervisors their virtual machines'
// disks and backups (Proxmox's /var/lib/vz, libvirt's images).
var databaseRoots = []string{"/var/lib/postgresql", "/var/lib/pgsql", "/var/lib/mysql", "/var/lib/mariadb", "/var/lib/mongodb",
	"/var/lib/redis", "/var/lib/elasticsearch", "/var/lib/opensearch", "/var/lib/clickhouse", "/var/lib/cassandra",
	"/var/lib/influxdb", "/var/lib/etcd", "/var/lib/rabbitmq", "/var/lib/neo4j", "/var/lib/docker/volumes",
	"/var/lib/vz", "/var/lib/libvirt/images"}

// databaseFiles reports a path inside a database server's directory: a
// deleted file there (a WAL segment, a binary log, a table's file) breaks
// or loses the database, recursive or not; its logs and a stale pid file
// are not data.
func databaseFiles(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	for _, r := range databaseRoots {
		if rest, ok := strings.CutPrefix(c, r+"/"); ok && rest != "" && !strings.HasPrefix(rest, "log/") && !strings.HasSuffix(rest, ".log") &&
			!strings.HasSuffix(rest, ".pid") {
			return true
		}
	}
	if serviceDatabaseFile(c) {
		return true
	}
	for _, r := range []string{"/opt/homebrew/var/", "/usr/local/var/"} {
		// Homebrew's servers keep their data in VAR/postgresql@16, VAR/mysql
		if rest, ok := strings.CutPrefix(c, r); ok && brewDatabaseDir.MatchString(rest) && !strings.HasSuffix(rest, ".log") && !strings.HasSuffix(rest, ".pid") {
			return true
		}
	}
	return false
}

// serviceDatabaseFile reports an embedded database's file (SQLite,
// DuckDB) in a service's directory: /srv/shop/db/production.sqlite3.
func serviceDatabaseFile(c string) bool {
	if !slices.ContainsFunc([]string{"/srv/", "/opt/", "/data/", "/var/www/", "/var/opt/", "/var/lib/"}, func(d string) bool { return strings.HasPrefix(c, d) }) {
		return false
	}
	base := strings.ToLower(path.Base(c))
	if strings.Contains(base, "cache") || strings.Contains(base, "tmp") || strings.Contains(base, "test") {
		return false
	}
	for _, ext := range []string{".sqlite", ".sqlite3", ".db", ".duckdb", ".db-wal", ".sqlite3-wal", ".sqlite-wal"} {
		if strings.HasSuffix(base, ext) {
			return true
		}
	}
	return false
}

// brewDatabaseDir is a database server's data directory under Homebrew's var.
var brewDatabaseDir = regexp.MustCompile(`^(postgres(ql)?(@[0-9.]+)?|mysql|mariadb|mongodb|redis|influxdb[0-9]*|elasticsearch|opensearch|rabbitmq|cassandra|clickhouse|etcd|neo4j)(/|$)`)

// codeDirs are the home directories people keep their projects in.
var codeDirs = []string{"src", "projects", "Projects", "code", "Code", "repos", "git", "dev", "work", "workspace", "workspaces",
	"Developer", "github", "go/src"}

// userProject reports a whole project of the user's (~/src/shop, or all of
// ~/projects/*): deleting it from a job is deleting outside the job's own
// directory, like rm -rf ../shop.
func userProject(p string) bool {
	rel, ok := homePath(p)
	if !ok {
		return false
	}
	rel = strings.TrimSuffix(rel, "/*")
	for _, d := range codeDirs {
		if rest, ok := strings.CutPrefix(rel, d+"/"); ok && rest != "" && !strings.Contains(rest, "/") {
			return true
		}
	}
	return false
}

// localDatabaseFile is an embedded database's file, or PocketBase's data
// directory.
var localDatabaseFile = regexp.MustCompile(`^(pb_data|[^/]+\.(sqlite3?|duckdb|db3|realm)(-wal|-shm|-journal)?)$`)

// localDatabase reports a file of an embedded database (SQLite, DuckDB)
// that is not a test's or a copy in a temporary directory: a project's
// development database, whose loss is a data loss (db/development.sqlite3).
func localDatabase(p string) bool {
	base := path.Base(p)
	if !localDatabaseFile.MatchString(base) {
		return false
	}
	if c, ok := cleanAbs(p); ok && (strings.HasPrefix(c, "/tmp/") || strings.HasPrefix(c, "/var/tmp/") || strings.HasPrefix(c, "/dev/shm/")) {
		return false
	}
	if strings.ContainsAny(base, "*?[") || strings.HasSuffix(base, "-journal") || strings.HasSuffix(base, "-shm") {
		return false // a glob the project's test runs leave, a journal or a shared-memory index
	}
	for _, dir := range strings.Split(strings.ToLower(path.Dir(p)), "/") {
		switch dir {
		case "test", "tests", "spec", "fixtures", "testdata", "build", "target", "dist", "out", "node_modules", ".cache", "cache", "tmp":
			return false
		}
	}
	name := strings.ToLower(strings.SplitN(base, ".", 2)[0])
	for _, w := range []string{"test", "cache", "tmp", "example", "demo", "sample", "fixture"} {
		if strings.Contains(name, w) {
			return false
		}
	}
	return !throwawayName(name)
}
