package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Key is an ed25519 key pair written to disk in OpenSSH format.
type Key struct {
	// Path is the private key file (mode 0600) in OpenSSH format
	// ("-----BEGIN OPENSSH PRIVATE KEY-----"), encrypted when NewKey was
	// given a passphrase.
	Path string
	// PubPath is Path + ".pub", in authorized_keys format.
	PubPath string
	// Signer signs with the key; it needs no passphrase.
	Signer ssh.Signer
	// Public is the public key.
	Public ssh.PublicKey

	priv ed25519.PrivateKey // for StartAgent
}

// NewKey generates an ed25519 key named name in dir and writes its private
// key to dir/name, encrypted with passphrase unless that is empty, and its
// public key to dir/name.pub.
func NewKey(t testing.TB, dir, name, passphrase string) *Key {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("sshtest: generate key %s: %v", name, err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, name)
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, name, []byte(passphrase))
	}
	if err != nil {
		t.Fatalf("sshtest: marshal key %s: %v", name, err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("sshtest: signer for key %s: %v", name, err)
	}
	k := &Key{
		Path:    filepath.Join(dir, name),
		PubPath: filepath.Join(dir, name+".pub"),
		Signer:  signer,
		Public:  signer.PublicKey(),
		priv:    priv,
	}
	writeFile(t, k.Path, pem.EncodeToMemory(block))
	writeFile(t, k.PubPath, []byte(k.AuthorizedLine()+" "+name+"\n"))
	return k
}

// AuthorizedLine returns the public key as one authorized_keys line,
// "ssh-ed25519 AAAA...", without a comment or newline.
func (k *Key) AuthorizedLine() string {
	return strings.TrimSuffix(string(ssh.MarshalAuthorizedKey(k.Public)), "\n")
}

// CA signs user and host certificates.
type CA struct {
	// Key is the CA's own key pair; sshd's TrustedUserCAKeys and known_hosts
	// @cert-authority lines name its public key.
	Key *Key
}

// NewCA generates a CA key named name in dir, as NewKey does, without a
// passphrase.
func NewCA(t testing.TB, dir, name string) *CA {
	t.Helper()
	return &CA{Key: NewKey(t, dir, name, "")}
}

// KnownHostsLine returns the known_hosts line that trusts host certificates
// signed by ca for addresses, such as Server.Addr, or host patterns:
// "@cert-authority [127.0.0.1]:PORT ssh-ed25519 AAAA...". The knownhosts
// package matches a pattern's host with wildcards but its port exactly, so
// "[127.0.0.1]:*" matches no server.
func (ca *CA) KnownHostsLine(addresses ...string) string {
	hosts := make([]string, len(addresses))
	for i, a := range addresses {
		hosts[i] = knownhosts.Normalize(a)
	}
	return "@cert-authority " + strings.Join(hosts, ",") + " " + ca.Key.AuthorizedLine()
}

// SignUser writes k.Path+"-cert.pub", a user certificate of k for
// principals (login names), valid from an hour ago to 24 hours from now
// with OpenSSH's usual permissions (pty, port and agent forwarding), and
// returns its path.
func (ca *CA) SignUser(t testing.TB, k *Key, principals ...string) string {
	t.Helper()
	return ca.sign(t, k, ssh.UserCert, principals, map[string]string{
		"permit-X11-forwarding":   "",
		"permit-agent-forwarding": "",
		"permit-port-forwarding":  "",
		"permit-pty":              "",
		"permit-user-rc":          "",
	})
}

// SignHost writes k.Path+"-cert.pub", a host certificate of k for
// principals (host names or addresses, such as "127.0.0.1"), valid from an
// hour ago to 24 hours from now, and returns its path.
func (ca *CA) SignHost(t testing.TB, k *Key, principals ...string) string {
	t.Helper()
	return ca.sign(t, k, ssh.HostCert, principals, nil)
}

// sign writes a certificate of k and returns its path.
func (ca *CA) sign(t testing.TB, k *Key, certType uint32, principals []string, extensions map[string]string) string {
	t.Helper()
	var serial [8]byte
	if _, err := rand.Read(serial[:]); err != nil {
		t.Fatalf("sshtest: certificate serial: %v", err)
	}
	now := time.Now()
	cert := &ssh.Certificate{
		Key:             k.Public,
		Serial:          binary.BigEndian.Uint64(serial[:]),
		CertType:        certType,
		KeyId:           filepath.Base(k.Path),
		ValidPrincipals: principals,
		ValidAfter:      uint64(now.Add(-time.Hour).Unix()),
		ValidBefore:     uint64(now.Add(24 * time.Hour).Unix()),
		Permissions:     ssh.Permissions{Extensions: extensions},
	}
	if err := cert.SignCert(rand.Reader, ca.Key.Signer); err != nil {
		t.Fatalf("sshtest: sign certificate of %s: %v", k.Path, err)
	}
	path := k.Path + "-cert.pub"
	writeFile(t, path, ssh.MarshalAuthorizedKey(cert))
	return path
}

// writeFile writes data to path with mode 0600 or fails the test.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
}
