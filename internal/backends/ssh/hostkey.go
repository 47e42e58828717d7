package ssh

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// ErrHostKey marks a connection refused because of the server's host key
// (unknown under the strict policy, changed, or revoked). It is permanent:
// retrying cannot fix it, an operator must look.
var ErrHostKey = errors.New("host key verification failed")

// hostKeys verifies servers against known_hosts files, and under the
// accept-new policy records the keys of hosts it has never seen.
type hostKeys struct {
	files  []string
	policy string
	hash   bool
	reject func(reason string)

	mu sync.Mutex
	db *knownhosts.HostKeyDB
}

func newHostKeys(files []string, policy string, hash bool, reject func(string)) (*hostKeys, error) {
	h := &hostKeys{files: files, policy: policy, hash: hash, reject: reject}
	if policy == policyAcceptNew {
		// accept-new records into the first file: make sure it can.
		if err := os.MkdirAll(filepath.Dir(files[0]), 0o700); err != nil {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
		f, err := os.OpenFile(files[0], os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
		_ = f.Close()
	}
	if err := h.load(); err != nil {
		return nil, err
	}
	return h, nil
}

// load (re)reads the files that exist. A missing file holds no keys;
// under the strict policy every host is then unknown, and refused.
func (h *hostKeys) load() error {
	var present []string
	for _, f := range h.files {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return fmt.Errorf("known_hosts: %w", err)
		}
		present = append(present, f)
	}
	db, err := knownhosts.NewDB(present...)
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	h.mu.Lock()
	h.db = db
	h.mu.Unlock()
	return nil
}

// algorithms returns the host key algorithms known_hosts has for addr, so
// that the server offers a key that can be checked (nil: any).
func (h *hostKeys) algorithms(addr string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.db.HostKeyAlgorithms(addr)
}

// callback returns the host key check for one endpoint; alias names it in
// errors as the profile does.
func (h *hostKeys) callback(alias string) ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		h.mu.Lock()
		check := h.db.HostKeyCallback()
		h.mu.Unlock()
		err := check(hostname, remote, key)
		if err == nil {
			return nil
		}
		var keyErr *xknownhosts.KeyError
		var revoked *xknownhosts.RevokedError
		switch {
		case errors.As(err, &revoked):
			h.reject("revoked")
			return fmt.Errorf("%w: %s (%s) offered %s %s, which %s:%d revokes", ErrHostKey, alias, hostname,
				key.Type(), ssh.FingerprintSHA256(key), revoked.Revoked.Filename, revoked.Revoked.Line)
		case errors.As(err, &keyErr) && len(keyErr.Want) > 0:
			h.reject("changed")
			var known []string
			for _, w := range keyErr.Want {
				known = append(known, fmt.Sprintf("%s:%d (%s %s)", w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key)))
			}
			return fmt.Errorf("%w: the host key of %s (%s) has CHANGED: it offered %s %s, but known_hosts has %s. "+
				"This may be an attack. If the change is expected, remove the line (ssh-keygen -R '%s' -f %s) and record the new key",
				ErrHostKey, alias, hostname, key.Type(), ssh.FingerprintSHA256(key), strings.Join(known, ", "),
				knownhosts.Normalize(hostname), keyErr.Want[0].Filename)
		case errors.As(err, &keyErr) && h.policy == policyAcceptNew:
			return h.record(hostname, remote, key)
		case errors.As(err, &keyErr):
			h.reject("unknown")
			host, port, _ := net.SplitHostPort(hostname)
			return fmt.Errorf("%w: %s (%s) is not in known_hosts (%s) and host_key_policy is strict; "+
				"add its key (ssh-keyscan -p %s %s >> %s, then check the fingerprint %s %s) or set host_key_policy: accept-new",
				ErrHostKey, alias, hostname, strings.Join(h.files, ", "), port, host, h.files[0], key.Type(), ssh.FingerprintSHA256(key))
		default:
			h.reject("invalid")
			return fmt.Errorf("%w: %s (%s): %w", ErrHostKey, alias, hostname, err)
		}
	}
}

// record appends a new host's key to the first known_hosts file and
// reloads, under accept-new.
func (h *hostKeys) record(hostname string, remote net.Addr, key ssh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Another connection may have recorded it meanwhile.
	if err := h.db.HostKeyCallback()(hostname, remote, key); err == nil {
		return nil
	}
	addr := knownhosts.Normalize(hostname)
	if h.hash {
		addr = xknownhosts.HashHostname(addr)
	}
	f, err := os.OpenFile(h.files[0], os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("known_hosts: recording %s: %w", hostname, err)
	}
	line := knownhosts.Line([]string{addr}, key) + "\n"
	if _, err := f.WriteString(line); err != nil {
		_ = f.Close()
		return fmt.Errorf("known_hosts: recording %s: %w", hostname, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("known_hosts: recording %s: %w", hostname, err)
	}
	var present []string
	for _, f := range h.files {
		if _, err := os.Stat(f); err == nil {
			present = append(present, f)
		}
	}
	db, err := knownhosts.NewDB(present...)
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	h.db = db
	return nil
}
