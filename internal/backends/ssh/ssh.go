// Package ssh runs jobs on a remote host over SSH (golang.org/x/crypto/ssh)
// so that they outlive the network and still die on timeout.
//
// Each attempt runs detached on the remote host, in a session and process
// group of its own, under a run directory (RunRoot/<job>-<attempt>) where a
// small supervisor records its pid, output and finally its exit status (see
// remote.go). The backend reads the output files by offset over SFTP, so a
// dropped connection loses nothing: the lease keeps renewing, the backend
// re-dials with backoff and resumes each stream where it stopped. A
// timeout or cancel signals the remote process group through a fresh
// session — TERM, then KILL after the grace — and a remote watchdog ends
// the job at its deadline even if no worker comes back. The next attempt of
// a job whose worker died kills (or, with on_orphan: adopt, takes over) the
// earlier attempt's remote process before anything else.
//
// One multiplexed connection per profile carries every job: keepalives
// find dead links, exec sessions are bounded by MaxSessions, and the host
// key is always verified against known_hosts (strict, or accept-new).
// Authentication: key files (encrypted ones with a passphrase from the
// worker's environment or a file), OpenSSH certificates, an ssh-agent.
// Jump hosts (ProxyJump) and ssh_config Host aliases are supported.
package ssh

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/sandrun/sandrun/internal/backends"
)

// Backend is the ssh backend. It is safe for concurrent use.
type Backend struct {
	cfg      Config
	target   target
	keys     *keyring
	hostKeys *hostKeys
	pool     *pool

	mu   sync.Mutex
	dirs map[string]string // job-attempt → run directory, for Finished
}

// New builds an ssh backend from a profile. It reads the key, certificate,
// known_hosts and ssh_config files; it does not connect (Validate does).
// Errors name the profile field at fault.
func New(cfg Config) (*Backend, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	var passphrase []byte
	switch {
	case cfg.PassphraseEnv != "":
		v, ok := os.LookupEnv(cfg.PassphraseEnv)
		if !ok {
			return nil, fmt.Errorf("passphrase_env: %s is not set in the worker's environment", cfg.PassphraseEnv)
		}
		passphrase = []byte(v)
	case cfg.PassphraseFile != "":
		v, err := os.ReadFile(expandHome(cfg.PassphraseFile))
		if err != nil {
			return nil, fmt.Errorf("passphrase_file: %w", err)
		}
		passphrase = []byte(strings.TrimRight(string(v), "\r\n"))
	}
	keys, err := loadKeys(t, passphrase)
	if err != nil {
		return nil, err
	}
	reject := func(reason string) {
		if cfg.Metrics != nil {
			cfg.Metrics.SSHHostKeyRejections.WithLabelValues(cfg.Profile, reason).Inc()
		}
	}
	hk, err := newHostKeys(t.host.knownHosts, cfg.HostKeyPolicy, cfg.HashKnownHosts, reject)
	if err != nil {
		return nil, err
	}
	b := &Backend{cfg: cfg, target: t, keys: keys, hostKeys: hk, dirs: make(map[string]string)}
	b.pool = &pool{b: b, sem: make(chan struct{}, cfg.MaxSessions)}
	return b, nil
}

// Kind implements backends.Backend.
func (b *Backend) Kind() string { return "ssh" }

// Capabilities implements backends.Backend. A remote host is not the
// worker's host, but it is a real machine that jobs can damage: the
// policy applies every rule (Isolated is false).
func (b *Backend) Capabilities() backends.Capabilities {
	return backends.Capabilities{ResumableOutput: true, Workspaces: true}
}

// Validate connects (verifying the host key), and checks that the remote
// side has what jobs need: sh, setsid, and a writable run root.
func (b *Backend) Validate(ctx context.Context) error {
	c, err := b.pool.get(ctx)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	out, err := b.exec(ctx, c, `main() {
	command -v setsid >/dev/null || { echo "setsid is not on PATH" >&2; exit 1; }
	mkdir -p "$1" || exit 1
	[ -w "$1" ] || { echo "$1 is not writable" >&2; exit 1; }
	echo ok
}
main "$@"
`, b.cfg.RunRoot)
	if err != nil {
		return fmt.Errorf("host: %s: %w", b.cfg.Host, err)
	}
	if strings.TrimSpace(out) != "ok" {
		return fmt.Errorf("host: %s: unexpected answer %q from the remote shell", b.cfg.Host, out)
	}
	return nil
}

// Close drops the connection. Remote jobs keep running; their next
// attempt finds them.
func (b *Backend) Close() error {
	b.pool.close()
	if b.cfg.Metrics != nil {
		b.cfg.Metrics.SSHConnected.WithLabelValues(b.cfg.Profile).Set(0)
	}
	return nil
}

// workspaceDir is the remote directory of a workspace: workspaces/
// DEPLOYMENT/NAME beside run_root (relative paths start at the remote
// home), made by the launch script, the SSH user's.
func (b *Backend) workspaceDir(deployment, name string) string {
	return path.Join(path.Dir(b.cfg.RunRoot), "workspaces", cmp.Or(deployment, "default"), name)
}

// RemoveWorkspace implements backends.WorkspaceRemover.
func (b *Backend) RemoveWorkspace(ctx context.Context, deployment, name string) error {
	if strings.Contains(name, "/") || name == "" || name == "." || name == ".." || strings.Contains(deployment, "/") {
		return fmt.Errorf("ssh: workspace %q: not a name", name)
	}
	c, err := b.pool.get(ctx)
	if err != nil {
		return err
	}
	_, err = b.exec(ctx, c, removeScript, b.workspaceDir(deployment, name))
	return err
}

// runDir returns the run directory of an attempt.
func (b *Backend) runDir(job string, attempt int) string {
	return path.Join(b.cfg.RunRoot, fmt.Sprintf("%s-%d", job, attempt))
}

// Finished implements backends.Finisher: once the worker has committed an
// attempt's outcome, a successful attempt's run directory is removed; a
// failed one's is kept for KeepFailed (the orphan reaper removes it then).
func (b *Backend) Finished(ctx context.Context, spec backends.Spec, succeeded bool) error {
	key := fmt.Sprintf("%s-%d", spec.JobID, spec.Attempt)
	b.mu.Lock()
	dir, ok := b.dirs[key]
	delete(b.dirs, key)
	b.mu.Unlock()
	if !ok || !succeeded {
		return nil
	}
	c, err := b.pool.get(ctx)
	if err != nil {
		return err
	}
	return b.removeRun(ctx, c, dir)
}

// removeRun removes a run directory over SFTP — no remote process to
// start — or, should it hold subdirectories, with rm -rf.
func (b *Backend) removeRun(ctx context.Context, c *conn, dir string) error {
	entries, err := c.sftp.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			_, err := b.exec(ctx, c, removeScript, dir)
			return err
		}
		if err := c.sftp.Remove(path.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := c.sftp.RemoveDirectory(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// errNotRemote reports a job option the ssh backend cannot honour.
func errNotRemote(field string) error {
	return fmt.Errorf("%w: %s is not supported by the ssh backend", backends.ErrPermanent, field)
}

var _ backends.Backend = (*Backend)(nil)

var errGone = errors.New("remote run directory is gone")
