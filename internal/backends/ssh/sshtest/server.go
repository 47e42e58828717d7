package sshtest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sandrun/sandrun/internal/natsutil"
)

const (
	sshdPath       = "/usr/sbin/sshd"
	sftpServerPath = "/usr/lib/openssh/sftp-server"
	// privsepDir is where Debian's sshd chroots its unprivileged children
	// when it runs as root.
	privsepDir = "/run/sshd"
	// startAttempts is how often Start picks a new port when the one it
	// picked was taken before sshd could bind it.
	startAttempts = 5
)

// errAddrInUse reports that sshd could not bind its port.
var errAddrInUse = errors.New("address already in use")

// ServerOptions configures Start. The zero value is a server with a new
// host key that no key can log in to.
type ServerOptions struct {
	// HostKey is the server's host key, without a passphrase. Nil means a
	// new one.
	HostKey *Key
	// HostCert is a HostCertificate file for HostKey (see CA.SignHost), or
	// empty for none.
	HostCert string
	// AuthorizedKeys may log in as Server.User.
	AuthorizedKeys []*Key
	// TrustedUserCA, if set, signs user certificates that may log in as
	// the principals they name (see CA.SignUser).
	TrustedUserCA *CA
	// MaxSessions is sshd's limit on sessions per connection; 0 means
	// sshd's default (10).
	MaxSessions int
	// ExtraConfig is more sshd_config text. sshd keeps the first value it
	// reads for a keyword, so the lines before ExtraConfig's first Match
	// go before the generated settings and override them; the Match
	// blocks go at the end. It must not define the sftp subsystem again.
	ExtraConfig string
}

// Server is a running sshd on 127.0.0.1. Its cleanup, registered by Start,
// stops it.
type Server struct {
	// Addr is "127.0.0.1:PORT".
	Addr string
	// Port is the port sshd listens on.
	Port int
	// User is the login name of the user running the test: the one user
	// this server lets tests log in as.
	User string
	// HostKey is the server's host key.
	HostKey *Key
	// Dir holds sshd_config, authorized_keys, the pid file, home (the
	// sessions' $HOME, so the user's own dotfiles do not run) and, unless
	// ServerOptions.HostKey was given, the host key.
	Dir string

	proc *process
}

// Start runs sshd (sshd -D -e -f DIR/sshd_config) on a free 127.0.0.1
// port, waits until it answers with its SSH banner, and registers a
// cleanup that stops it. It skips the test where sshd is missing (fails it
// under CI=true) and fails it, with sshd's log, where sshd does not start.
func Start(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	requireProgram(t, sshdPath)
	u, err := user.Current()
	if err != nil {
		t.Fatalf("sshtest: current user: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.MkdirAll(privsepDir, 0o755); err != nil { //nolint:gosec // sshd wants its privilege separation directory root-owned and 0755
			t.Fatalf("sshtest: sshd privilege separation directory: %v", err)
		}
	}
	dir := t.TempDir()
	if opts.HostKey == nil {
		opts.HostKey = NewKey(t, dir, "ssh_host_ed25519_key", "")
	}
	var authorized strings.Builder
	for _, k := range opts.AuthorizedKeys {
		authorized.WriteString(k.AuthorizedLine() + "\n")
	}
	writeFile(t, filepath.Join(dir, "authorized_keys"), []byte(authorized.String()))
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o700); err != nil {
		t.Fatalf("sshtest: %v", err)
	}

	var lastErr error
	for range startAttempts {
		port := freePort(t)
		config := filepath.Join(dir, "sshd_config")
		writeFile(t, config, []byte(sshdConfig(dir, port, opts)))
		s := &Server{
			Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Port:    port,
			User:    u.Username,
			HostKey: opts.HostKey,
			Dir:     dir,
		}
		lastErr = s.start(config)
		if lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
		if !errors.Is(lastErr, errAddrInUse) {
			break
		}
	}
	t.Fatalf("sshtest: start sshd: %v", lastErr)
	return nil
}

// start runs sshd with config and waits until it is ready; on failure it
// stops sshd and returns an error holding its log.
func (s *Server) start(config string) error {
	proc, err := startProcess(sshdPath, "-D", "-e", "-f", config)
	if err != nil {
		return err
	}
	s.proc = proc
	// sshd logs this (LogLevel INFO and up) once its socket listens, so a
	// banner from another process that took the port cannot fool us.
	err = proc.out.waitFor("Server listening on", proc.done, startTimeout)
	if err == nil {
		err = checkBanner(s.Addr)
	}
	if err == nil {
		return nil
	}
	s.Stop()
	log := s.Log()
	if strings.Contains(log, "Address already in use") {
		err = errAddrInUse
	}
	return fmt.Errorf("%w; sshd log:\n%s", err, log)
}

// checkBanner connects to addr and reads the server's SSH identification.
func checkBanner(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, startTimeout)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if err := conn.SetDeadline(time.Now().Add(startTimeout)); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read SSH banner: %w", err)
	}
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("no SSH banner: %q", line)
	}
	return nil
}

// sshdConfig returns the sshd_config for a server in dir on port.
func sshdConfig(dir string, port int, opts ServerOptions) string {
	global, match := splitMatch(opts.ExtraConfig)
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	if global != "" {
		line("%s", strings.TrimRight(global, "\n"))
	}
	line("ListenAddress 127.0.0.1")
	line("Port %d", port)
	line("HostKey %s", opts.HostKey.Path)
	if opts.HostCert != "" {
		line("HostCertificate %s", opts.HostCert)
	}
	line("PidFile %s", filepath.Join(dir, "sshd.pid"))
	line("AuthorizedKeysFile %s", filepath.Join(dir, "authorized_keys"))
	line("StrictModes no")
	line("UsePAM no")
	line("PasswordAuthentication no")
	line("KbdInteractiveAuthentication no")
	line("PubkeyAuthentication yes")
	line("PermitRootLogin prohibit-password")
	line("AllowTcpForwarding yes")
	if opts.TrustedUserCA != nil {
		line("TrustedUserCAKeys %s", opts.TrustedUserCA.Key.PubPath)
	}
	if opts.MaxSessions > 0 {
		line("MaxSessions %d", opts.MaxSessions)
	}
	line("LogLevel VERBOSE")
	// Sessions get a home of their own: the test user's dotfiles (on the
	// build machines, a .bashrc that runs pyenv for half a second) stay
	// out of every remote command. The login directory is unchanged.
	line("SetEnv HOME=%s", filepath.Join(dir, "home"))
	line("Subsystem sftp %s", sftpServerPath)
	if match != "" {
		line("%s", strings.TrimRight(match, "\n"))
	}
	return b.String()
}

// splitMatch splits sshd_config text at its first Match line.
func splitMatch(config string) (global, match string) {
	lines := strings.SplitAfter(config, "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && strings.EqualFold(f[0], "Match") {
			return strings.Join(lines[:i], ""), strings.Join(lines[i:], "")
		}
	}
	return config, ""
}

// freePort returns a port on 127.0.0.1 that was free a moment ago, below
// the ephemeral range (natsutil.FreePort).
func freePort(t testing.TB) int {
	t.Helper()
	port, err := natsutil.FreePort()
	if err != nil {
		t.Fatalf("sshtest: pick a port: %v", err)
	}
	return port
}

// KnownHostsLine returns the known_hosts line for the server's host key:
// "[127.0.0.1]:PORT ssh-ed25519 AAAA...".
func (s *Server) KnownHostsLine() string {
	return knownhosts.Line([]string{s.Addr}, s.HostKey.Public)
}

// WriteKnownHosts writes a known_hosts file holding KnownHostsLine and
// returns its path.
func (s *Server) WriteKnownHosts(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "known_hosts")
	writeFile(t, path, []byte(s.KnownHostsLine()+"\n"))
	return path
}

// Log returns what sshd has logged so far (LogLevel VERBOSE), for t.Log
// when a test fails.
func (s *Server) Log() string {
	return s.proc.out.String()
}

// Stop kills sshd and the processes it forked for connections, which cuts
// every connection, and waits for sshd to exit. It may be called more than
// once; the cleanup registered by Start calls it too.
func (s *Server) Stop() {
	s.proc.stop()
}
