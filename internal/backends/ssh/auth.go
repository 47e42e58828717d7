package ssh

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// keyring holds the identities of every endpoint, parsed once at New so
// that a bad key file or passphrase is a start-up error, not a job failure.
type keyring struct {
	signers map[string][]ssh.Signer // by endpoint alias: certificates first
}

// loadKeys parses the identity and certificate files of every endpoint.
// passphrase opens encrypted keys; it is never logged or put in errors.
func loadKeys(t target, passphrase []byte) (*keyring, error) {
	kr := &keyring{signers: make(map[string][]ssh.Signer)}
	for _, e := range append(slicesClone2(t.hops), t.host) {
		var plain, certified []ssh.Signer
		for i, path := range e.identities {
			s, err := parseKey(path, passphrase)
			if errors.Is(err, fs.ErrNotExist) && e.idsFromConfig {
				continue // an ssh_config default that is not there, as ssh does
			}
			if err != nil {
				return nil, fmt.Errorf("identity_files[%d]: %w", i, err)
			}
			plain = append(plain, s)
			// KEY-cert.pub next to KEY is its certificate, as in OpenSSH.
			if c, err := parseCert(path + "-cert.pub"); err == nil {
				cs, err := certSigner(c, s, path+"-cert.pub")
				if err != nil {
					return nil, err
				}
				certified = append(certified, cs)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("identity_files[%d]: %w", i, err)
			}
		}
		for i, path := range e.certs {
			c, err := parseCert(path)
			if err != nil {
				return nil, fmt.Errorf("certificate_files[%d]: %w", i, err)
			}
			var matched bool
			for _, s := range plain {
				if bytes.Equal(s.PublicKey().Marshal(), c.Key.Marshal()) {
					cs, err := certSigner(c, s, path)
					if err != nil {
						return nil, err
					}
					certified = append(certified, cs)
					matched = true
				}
			}
			if !matched {
				return nil, fmt.Errorf("certificate_files[%d]: %s certifies a key that is not among the identity files", i, path)
			}
		}
		if len(plain) == 0 && e.agent == "" {
			return nil, fmt.Errorf("identity_files: none of %v could be read for %s, and no agent is set", e.identities, e.alias)
		}
		kr.signers[e.alias] = append(certified, plain...)
	}
	return kr, nil
}

func slicesClone2(s []endpoint) []endpoint { return append([]endpoint(nil), s...) }

// parseKey reads a private key file, opening it with passphrase when it is
// encrypted.
func parseKey(path string, passphrase []byte) (ssh.Signer, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("%s is encrypted: set passphrase_env or passphrase_file", path)
		}
		s, err = ssh.ParsePrivateKeyWithPassphrase(pem, passphrase)
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, fmt.Errorf("%s: the passphrase does not open it", path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// parseCert reads an OpenSSH certificate file (KEY-cert.pub format).
func parseCert(path string) (*ssh.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c, ok := pub.(*ssh.Certificate)
	if !ok {
		return nil, fmt.Errorf("%s: a %s public key, not a certificate", path, pub.Type())
	}
	if c.CertType != ssh.UserCert {
		return nil, fmt.Errorf("%s: a host certificate, not a user certificate", path)
	}
	return c, nil
}

func certSigner(c *ssh.Certificate, s ssh.Signer, path string) (ssh.Signer, error) {
	cs, err := ssh.NewCertSigner(c, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

// authMethods returns e's auth methods for one dial and a function that
// releases what they hold (the agent connection).
func (kr *keyring) authMethods(e endpoint) ([]ssh.AuthMethod, func(), error) {
	signers := kr.signers[e.alias]
	if e.agent == "" {
		return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, func() {}, nil
	}
	conn, err := net.Dial("unix", e.agent)
	if err != nil {
		if len(signers) > 0 {
			return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, func() {}, nil
		}
		return nil, nil, fmt.Errorf("agent: %w", err)
	}
	ag := agent.NewClient(conn)
	cb := func() ([]ssh.Signer, error) {
		fromAgent, err := ag.Signers()
		if err != nil {
			return signers, nil //nolint:nilerr // the files' keys still work without the agent
		}
		return append(append([]ssh.Signer(nil), signers...), fromAgent...), nil
	}
	return []ssh.AuthMethod{ssh.PublicKeysCallback(cb)}, func() { _ = conn.Close() }, nil
}
