package sshtest

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// dial logs in to addr as user with auth, or fails the test with the
// server's log.
func dial(t *testing.T, s *Server, addr string, hostKey ssh.HostKeyCallback, auth ...ssh.AuthMethod) *ssh.Client {
	t.Helper()
	client, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            s.User,
		Auth:            auth,
		HostKeyCallback: hostKey,
		Timeout:         10 * time.Second,
	})
	if err != nil {
		t.Fatalf("dial %s: %v\nsshd log:\n%s", addr, err, s.Log())
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// mustEcho runs echo hi on client.
func mustEcho(t *testing.T, client *ssh.Client) {
	t.Helper()
	sess, err := client.NewSession()
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	defer func() { _ = sess.Close() }()
	out, err := sess.Output("echo hi")
	if err != nil {
		t.Fatalf("echo hi: %v", err)
	}
	if string(out) != "hi\n" {
		t.Fatalf("echo hi printed %q", out)
	}
}

func TestServerKnownHosts(t *testing.T) {
	t.Parallel()
	key := NewKey(t, t.TempDir(), "user", "")
	s := Start(t, ServerOptions{AuthorizedKeys: []*Key{key}})
	hostKey, err := knownhosts.New(s.WriteKnownHosts(t))
	if err != nil {
		t.Fatal(err)
	}
	client := dial(t, s, s.Addr, hostKey, ssh.PublicKeys(key.Signer))
	mustEcho(t, client)
	sftp, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sftp.Close() }()
	if err := sftp.RequestSubsystem("sftp"); err != nil {
		t.Fatalf("sftp subsystem: %v", err)
	}

	stranger := NewKey(t, t.TempDir(), "stranger", "")
	_, err = ssh.Dial("tcp", s.Addr, &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(stranger.Signer)},
		HostKeyCallback: hostKey,
		Timeout:         10 * time.Second,
	})
	if err == nil {
		t.Fatal("a key that is not authorized logged in")
	}
}

// TestCertificatesAndAgent logs in with a user certificate held by the
// agent, for a passphrase-protected key, and checks the host certificate
// against a @cert-authority line.
func TestCertificatesAndAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := NewCA(t, dir, "ca")
	hostKey := NewKey(t, dir, "host", "")
	hostCert := ca.SignHost(t, hostKey, "127.0.0.1")
	key := NewKey(t, dir, "user", "secret")
	s := Start(t, ServerOptions{HostKey: hostKey, HostCert: hostCert, TrustedUserCA: ca})
	ca.SignUser(t, key, s.User)

	if out, err := exec.Command("ssh-keygen", "-y", "-P", "secret", "-f", key.Path).Output(); err != nil {
		t.Fatalf("ssh-keygen cannot read the encrypted key: %v", err)
	} else if got := strings.Fields(string(out)); len(got) < 2 || strings.Join(got[:2], " ") != key.AuthorizedLine() {
		t.Fatalf("ssh-keygen -y: %q, want %q", got, key.AuthorizedLine())
	}

	conn, err := net.Dial("unix", StartAgent(t, key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		t.Fatal(err)
	}
	var certSigner ssh.Signer
	for _, sg := range signers {
		// An agent's keys are *agent.Key, whatever their type.
		if sg.PublicKey().Type() == ssh.CertAlgoED25519v01 {
			certSigner = sg
		}
	}
	if len(signers) != 2 || certSigner == nil {
		t.Fatalf("agent holds %d keys, certificate among them: %t; want the key and its certificate", len(signers), certSigner != nil)
	}

	knownHosts := filepath.Join(dir, "known_hosts")
	writeFile(t, knownHosts, []byte(ca.KnownHostsLine(s.Addr)+"\n"))
	hostKeyCallback, err := knownhosts.New(knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	mustEcho(t, dial(t, s, s.Addr, hostKeyCallback, ssh.PublicKeys(certSigner)))
}

func TestProxyCut(t *testing.T) {
	t.Parallel()
	key := NewKey(t, t.TempDir(), "user", "")
	s := Start(t, ServerOptions{AuthorizedKeys: []*Key{key}})
	p := NewProxy(t, s.Addr)
	hostKey := ssh.FixedHostKey(s.HostKey.Public)
	client := dial(t, s, p.Addr, hostKey, ssh.PublicKeys(key.Signer))
	mustEcho(t, client)

	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := sess.StdinPipe() // cat runs until stdin closes
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close() }()
	if err := sess.Start("cat"); err != nil {
		t.Fatal(err)
	}
	if n := p.Cut(); n != 1 {
		t.Fatalf("Cut cut %d connections, want 1", n)
	}
	waited := make(chan struct{})
	go func() { _ = client.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("client.Wait did not return after Cut")
	}
	if err := sess.Wait(); err == nil {
		t.Fatal("session survived Cut")
	}

	p.Block()
	if _, err := ssh.Dial("tcp", p.Addr, &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(key.Signer)},
		HostKeyCallback: hostKey,
		Timeout:         10 * time.Second,
	}); err == nil {
		t.Fatal("dialed through a blocked proxy")
	}
	if got := p.Accepted(); got != 2 {
		t.Fatalf("Accepted %d, want 2", got)
	}
	p.Unblock()
	mustEcho(t, dial(t, s, p.Addr, hostKey, ssh.PublicKeys(key.Signer)))
}

// TestJumpHost reaches one server through another with direct-tcpip, as
// ProxyJump does.
func TestJumpHost(t *testing.T) {
	t.Parallel()
	key := NewKey(t, t.TempDir(), "user", "")
	jump := Start(t, ServerOptions{AuthorizedKeys: []*Key{key}})
	target := Start(t, ServerOptions{AuthorizedKeys: []*Key{key}, MaxSessions: 1})
	jumpClient := dial(t, jump, jump.Addr, ssh.FixedHostKey(jump.HostKey.Public), ssh.PublicKeys(key.Signer))
	conn, err := jumpClient.Dial("tcp", target.Addr)
	if err != nil {
		t.Fatalf("direct-tcpip through the jump host: %v\njump sshd log:\n%s", err, jump.Log())
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, target.Addr, &ssh.ClientConfig{
		User:            target.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(key.Signer)},
		HostKeyCallback: ssh.FixedHostKey(target.HostKey.Public),
		Timeout:         10 * time.Second,
	})
	if err != nil {
		t.Fatalf("handshake through the jump host: %v\ntarget sshd log:\n%s", err, target.Log())
	}
	client := ssh.NewClient(c, chans, reqs)
	t.Cleanup(func() { _ = client.Close() })
	mustEcho(t, client)
}

func TestServerStopCutsSessions(t *testing.T) {
	t.Parallel()
	key := NewKey(t, t.TempDir(), "user", "")
	s := Start(t, ServerOptions{AuthorizedKeys: []*Key{key}})
	client := dial(t, s, s.Addr, ssh.FixedHostKey(s.HostKey.Public), ssh.PublicKeys(key.Signer))
	sess, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("sleep 60"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop()
	waited := make(chan struct{})
	go func() { _ = client.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("client.Wait did not return after Stop")
	}
	if _, err := net.Dial("tcp", s.Addr); err == nil {
		t.Fatal("sshd still listens after Stop")
	}
}

func TestSplitMatch(t *testing.T) {
	t.Parallel()
	global, match := splitMatch("MaxStartups 3\n  match User x\nX11Forwarding no\n")
	if global != "MaxStartups 3\n" || match != "  match User x\nX11Forwarding no\n" {
		t.Fatalf("splitMatch: %q, %q", global, match)
	}
}
