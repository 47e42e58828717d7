package sshtest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// StartAgent runs ssh-agent (ssh-agent -D -a SOCK), adds keys to it, and
// returns the socket path, to be used as SSH_AUTH_SOCK. A key with a
// certificate file k.Path+"-cert.pub" (see CA.SignUser) is added a second
// time with that certificate. Keys are added decrypted, so a passphrase
// does not matter. A cleanup kills the agent and removes the socket. It
// skips the test where ssh-agent is missing (fails it under CI=true).
func StartAgent(t testing.TB, keys ...*Key) string {
	t.Helper()
	path := requireProgram(t, "ssh-agent")
	// Not t.TempDir: a Unix socket path has at most 107 bytes, and test
	// names make those long.
	dir, err := os.MkdirTemp("", "sshtest-agent-")
	if err != nil {
		t.Fatalf("sshtest: agent directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	proc, err := startProcess(path, "-D", "-a", sock)
	if err != nil {
		t.Fatalf("sshtest: start ssh-agent: %v", err)
	}
	t.Cleanup(proc.stop)
	// With -D the agent prints its environment once its socket listens.
	if err := proc.out.waitFor("SSH_AUTH_SOCK=", proc.done, startTimeout); err != nil {
		t.Fatalf("sshtest: start ssh-agent: %v; output:\n%s", err, proc.out)
	}
	if err := addKeys(sock, keys); err != nil {
		t.Fatalf("sshtest: add keys to ssh-agent: %v", err)
	}
	return sock
}

// addKeys adds keys, and their certificates where they have one, to the
// agent listening on sock.
func addKeys(sock string, keys []*Key) (err error) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close()) }()
	client := agent.NewClient(conn)
	for _, k := range keys {
		if k.priv == nil {
			return errors.New(k.Path + ": not made by NewKey")
		}
		comment := filepath.Base(k.Path)
		if err := client.Add(agent.AddedKey{PrivateKey: k.priv, Comment: comment}); err != nil {
			return err
		}
		cert, err := readCert(k.Path + "-cert.pub")
		if err != nil {
			return err
		}
		if cert == nil {
			continue
		}
		added := agent.AddedKey{PrivateKey: k.priv, Certificate: cert, Comment: comment + "-cert"}
		if err := client.Add(added); err != nil {
			return err
		}
	}
	return nil
}

// readCert reads the certificate at path, or returns nil if there is none.
func readCert(path string) (*ssh.Certificate, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil, err
	}
	cert, ok := pub.(*ssh.Certificate)
	if !ok {
		return nil, errors.New(path + ": not a certificate")
	}
	return cert, nil
}
