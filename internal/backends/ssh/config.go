package ssh

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"

	"github.com/sandrun/sandrun/internal/metrics"
)

// Config is an ssh backend profile. Fields left empty are taken from the
// ssh_config file when SSHConfig names one, then from the defaults below.
type Config struct {
	// Host is the remote host: a name, an address, or a Host alias of
	// SSHConfig. Required.
	Host string
	// Port is the remote port (default 22).
	Port int
	// User logs in (default: the worker's OS user).
	User string
	// IdentityFiles are private key files. Encrypted ones are opened
	// with the passphrase from PassphraseEnv or PassphraseFile. A file
	// KEY-cert.pub next to KEY is used as its OpenSSH certificate.
	IdentityFiles []string
	// CertificateFiles are OpenSSH user certificates for the identity
	// files' keys (besides the KEY-cert.pub convention).
	CertificateFiles []string
	// PassphraseEnv names a worker environment variable, and
	// PassphraseFile a file, holding the identity files' passphrase.
	PassphraseEnv  string
	PassphraseFile string
	// Agent uses the ssh-agent at AgentSocket, else at $SSH_AUTH_SOCK.
	Agent       bool
	AgentSocket string
	// KnownHosts are known_hosts files (default ~/.ssh/known_hosts).
	// Hashed entries, @cert-authority and @revoked lines are honoured.
	KnownHosts []string
	// HostKeyPolicy is strict (default: unknown and changed keys are
	// refused) or accept-new (an unknown host's key is recorded in the
	// first KnownHosts file and accepted; a changed key is still refused).
	// There is no policy that ignores host keys.
	HostKeyPolicy string
	// HashKnownHosts writes keys recorded by accept-new with a hashed host name.
	HashKnownHosts bool
	// ProxyJump is a comma-separated chain of jump hosts,
	// "[user@]host[:port],...", each resolved through SSHConfig too.
	ProxyJump string
	// SSHConfig is an ssh_config file (such as ~/.ssh/config) whose Host
	// entries resolve Host and the jump hosts: HostName, Port, User,
	// IdentityFile, CertificateFile, ProxyJump, UserKnownHostsFile,
	// IdentityAgent, ServerAliveInterval, ServerAliveCountMax and
	// ConnectTimeout. Empty: no file is read.
	SSHConfig string
	// RunRoot holds one run directory per job attempt on the remote host;
	// relative paths are relative to the remote home (default
	// .sandrun/runs).
	RunRoot string
	// OnOrphan says what a job's next attempt does with an earlier
	// attempt's process still running remotely: kill (default) or adopt
	// (its output and exit become this attempt's).
	OnOrphan string
	// MaxSessions bounds the exec sessions open at once on the host's
	// connection, besides the one file-transfer session (default 8;
	// OpenSSH's MaxSessions is 10).
	MaxSessions int
	// KeepaliveInterval and KeepaliveCountMax: a connection is dropped and
	// re-dialled when this many keepalives in a row go unanswered for an
	// interval each (defaults 15s, 3).
	KeepaliveInterval time.Duration
	KeepaliveCountMax int
	// ConnectTimeout bounds one dial, handshake included (default 15s).
	ConnectTimeout time.Duration
	// ReconnectTimeout is how long a running job waits for the host to come
	// back before Run gives up with ErrUnavailable (default 5m). The
	// remote process keeps running; the next attempt adopts or kills it.
	ReconnectTimeout time.Duration
	// KeepFailed keeps the run directory of a failed attempt this long
	// (default 24h); a successful attempt's is removed once committed.
	KeepFailed time.Duration
	// WatchdogMargin: a job with a deadline is ended on the remote host
	// by its watchdog this long after the deadline plus the grace, should
	// no worker be left to stop it (default 10s).
	WatchdogMargin time.Duration
	// PollInterval is the longest wait between two reads of a job's
	// output files (default 250ms; reads speed up while output flows).
	PollInterval time.Duration

	// Metrics, if set, receive connection and job figures labelled with Profile.
	Metrics *metrics.Metrics
	Profile string
}

const (
	policyStrict    = "strict"
	policyAcceptNew = "accept-new"
	orphanKill      = "kill"
	orphanAdopt     = "adopt"
)

// runRootRE keeps the run root usable unquoted in an exec request, whatever
// the remote login shell.
var runRootRE = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)

// endpoint is one hop of a connection: where to dial and how to log in.
type endpoint struct {
	alias      string // as written (config or ProxyJump)
	host       string
	port       int
	user       string
	identities []string
	certs      []string
	// idsFromConfig: identities came from ssh_config, where a missing
	// file is skipped (as ssh does) rather than an error.
	idsFromConfig bool
	agent         string // socket path, "" for none
	knownHosts    []string
}

func (e endpoint) addr() string { return net.JoinHostPort(e.host, strconv.Itoa(e.port)) }

// target is the resolved profile: the jump chain, then the host.
type target struct {
	hops        []endpoint // jump hosts, in dialling order
	host        endpoint
	keepalive   time.Duration
	keepaliveN  int
	connTimeout time.Duration
}

// withDefaults fills c's empty fields and checks it; errors name the field.
func (c Config) withDefaults() (Config, error) {
	if c.Host == "" {
		return c, errors.New("host: required")
	}
	if c.Port < 0 || c.Port > 65535 {
		return c, fmt.Errorf("port: %d is not a TCP port", c.Port)
	}
	switch c.HostKeyPolicy {
	case "":
		c.HostKeyPolicy = policyStrict
	case policyStrict, policyAcceptNew:
	case "no", "off", "ignore", "insecure":
		return c, fmt.Errorf("host_key_policy: %q is not offered: host keys are always verified (use accept-new to record new hosts)", c.HostKeyPolicy)
	default:
		return c, fmt.Errorf("host_key_policy: unknown policy %q (strict or accept-new)", c.HostKeyPolicy)
	}
	switch c.OnOrphan {
	case "":
		c.OnOrphan = orphanKill
	case orphanKill, orphanAdopt:
	default:
		return c, fmt.Errorf("on_orphan: unknown value %q (kill or adopt)", c.OnOrphan)
	}
	if c.RunRoot == "" {
		c.RunRoot = ".sandrun/runs"
	}
	c.RunRoot = strings.TrimPrefix(strings.TrimSuffix(c.RunRoot, "/"), "~/")
	if !runRootRE.MatchString(c.RunRoot) || strings.Contains("/"+c.RunRoot+"/", "/../") {
		return c, fmt.Errorf("run_root: %q must be a path of A-Z a-z 0-9 . _ / + - without .. (relative paths start at the remote home)", c.RunRoot)
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = 8
	}
	if c.MaxSessions < 1 {
		return c, fmt.Errorf("max_sessions: must be at least 1, got %d", c.MaxSessions)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"keepalive_interval", &c.KeepaliveInterval, 0}, // resolve: ssh_config, then 15s
		{"connect_timeout", &c.ConnectTimeout, 0},       // resolve: ssh_config, then 15s
		{"reconnect_timeout", &c.ReconnectTimeout, 5 * time.Minute},
		{"keep_failed", &c.KeepFailed, 24 * time.Hour},
		{"poll_interval", &c.PollInterval, 250 * time.Millisecond},
		{"watchdog_margin", &c.WatchdogMargin, 10 * time.Second},
	} {
		if *d.v < 0 {
			return c, fmt.Errorf("%s: must not be negative, got %s", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if c.KeepaliveCountMax < 0 {
		return c, fmt.Errorf("keepalive_count_max: must not be negative, got %d", c.KeepaliveCountMax)
	}
	if c.PassphraseEnv != "" && c.PassphraseFile != "" {
		return c, errors.New("passphrase_env, passphrase_file: set one, not both")
	}
	return c, nil
}

// resolve turns the profile into the endpoints to dial, reading SSHConfig
// when set. Values in the profile win over the file's.
func (c Config) resolve() (target, error) {
	var sc *ssh_config.Config
	if c.SSHConfig != "" {
		path := expandHome(c.SSHConfig)
		f, err := os.Open(path)
		if err != nil {
			return target{}, fmt.Errorf("ssh_config: %w", err)
		}
		sc, err = ssh_config.Decode(f)
		_ = f.Close()
		if err != nil {
			return target{}, fmt.Errorf("ssh_config: %s: %w", path, err)
		}
	}
	get := func(alias, key string) string {
		if sc == nil {
			return ""
		}
		v, _ := sc.Get(alias, key)
		return v
	}
	getAll := func(alias, key string) []string {
		if sc == nil {
			return nil
		}
		v, _ := sc.GetAll(alias, key)
		return v
	}

	agent := ""
	if c.Agent {
		agent = c.AgentSocket
		if agent == "" {
			agent = os.Getenv("SSH_AUTH_SOCK")
		}
		if agent == "" {
			return target{}, errors.New("agent: set, but neither agent_socket nor SSH_AUTH_SOCK names a socket")
		}
	}
	knownHosts := c.KnownHosts
	if len(knownHosts) == 0 {
		if f := get(c.Host, "UserKnownHostsFile"); f != "" {
			knownHosts = strings.Fields(f)
		}
	}
	if len(knownHosts) == 0 {
		knownHosts = []string{"~/.ssh/known_hosts"}
	}
	for i := range knownHosts {
		knownHosts[i] = expandHome(knownHosts[i])
	}

	// endpointFor resolves one name ("[user@]alias[:port]") through the
	// config file; explicit parts win.
	endpointFor := func(spec string, user string, port int, ids, certs []string) (endpoint, error) {
		e := endpoint{alias: spec, user: user, port: port, agent: agent, knownHosts: knownHosts}
		if u, rest, ok := strings.Cut(spec, "@"); ok {
			e.user, spec = u, rest
		}
		if h, p, err := net.SplitHostPort(spec); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil || n <= 0 || n > 65535 {
				return e, fmt.Errorf("port %q of %q is not a TCP port", p, e.alias)
			}
			spec, e.port = h, n
		}
		e.host = spec
		if hn := get(spec, "HostName"); hn != "" {
			e.host = strings.ReplaceAll(hn, "%h", spec)
		}
		if e.port == 0 {
			if p := get(spec, "Port"); p != "" {
				n, err := strconv.Atoi(p)
				if err != nil || n <= 0 || n > 65535 {
					return e, fmt.Errorf("ssh_config: Port %q of host %s is not a TCP port", p, spec)
				}
				e.port = n
			}
		}
		if e.port == 0 {
			e.port = 22
		}
		if e.user == "" {
			e.user = get(spec, "User")
		}
		if e.user == "" {
			e.user = localUser()
		}
		e.identities = ids
		if len(e.identities) == 0 {
			e.identities = getAll(spec, "IdentityFile")
			e.idsFromConfig = true
		}
		e.certs = certs
		if len(e.certs) == 0 {
			e.certs = getAll(spec, "CertificateFile")
		}
		if e.agent == "" {
			if a := get(spec, "IdentityAgent"); a != "" && a != "none" {
				e.agent = expandHome(strings.ReplaceAll(a, "$SSH_AUTH_SOCK", os.Getenv("SSH_AUTH_SOCK")))
			}
		}
		for i := range e.identities {
			e.identities[i] = expandTokens(e.identities[i], e)
		}
		for i := range e.certs {
			e.certs[i] = expandTokens(e.certs[i], e)
		}
		if len(e.identities) == 0 && e.agent == "" {
			return e, fmt.Errorf("no identity_files and no agent for %s", e.alias)
		}
		return e, nil
	}

	host, err := endpointFor(c.Host, c.User, c.Port, slicesClone(c.IdentityFiles), slicesClone(c.CertificateFiles))
	if err != nil {
		return target{}, fieldFor(err, "host")
	}
	t := target{host: host, connTimeout: c.ConnectTimeout, keepalive: c.KeepaliveInterval, keepaliveN: c.KeepaliveCountMax}
	jump := c.ProxyJump
	if jump == "" {
		jump = get(c.Host, "ProxyJump")
	}
	if jump != "" && jump != "none" {
		for _, hop := range strings.Split(jump, ",") {
			hop = strings.TrimSpace(hop)
			if hop == "" {
				return target{}, fmt.Errorf("proxy_jump: empty hop in %q", jump)
			}
			// A jump host uses its own config entry, or the profile's keys.
			e, err := endpointFor(hop, "", 0, nil, nil)
			if err != nil && len(c.IdentityFiles) > 0 {
				e, err = endpointFor(hop, "", 0, slicesClone(c.IdentityFiles), slicesClone(c.CertificateFiles))
			}
			if err != nil {
				return target{}, fmt.Errorf("proxy_jump: %w", err)
			}
			if len(e.identities) == 0 {
				e.identities, e.certs = slicesClone(host.identities), slicesClone(host.certs)
			}
			t.hops = append(t.hops, e)
		}
	}
	seconds := func(key string, def time.Duration) time.Duration {
		if n, err := strconv.Atoi(get(c.Host, key)); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
		return def
	}
	if t.keepalive == 0 {
		t.keepalive = seconds("ServerAliveInterval", 15*time.Second)
	}
	if t.connTimeout == 0 {
		t.connTimeout = seconds("ConnectTimeout", 15*time.Second)
	}
	if t.keepaliveN == 0 {
		t.keepaliveN = int(seconds("ServerAliveCountMax", 3*time.Second) / time.Second)
	}
	return t, nil
}

// fieldFor prefixes err with field unless it already names one.
func fieldFor(err error, field string) error {
	if strings.HasPrefix(err.Error(), "ssh_config") {
		return err
	}
	return fmt.Errorf("%s: %w", field, err)
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// expandHome expands a leading ~/ to the worker's home directory.
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// expandTokens expands ~ and the ssh_config tokens %d %h %p %r %u %%.
func expandTokens(p string, e endpoint) string {
	home, _ := os.UserHomeDir()
	r := strings.NewReplacer("%%", "%", "%d", home, "%h", e.host, "%p", strconv.Itoa(e.port), "%r", e.user, "%u", localUser())
	return expandHome(r.Replace(p))
}

// localUser is the worker's OS user name, ssh's default login.
func localUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
