package ssh

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/metrics"
)

// TestChangedHostKeyRefused: a server whose key differs from the one
// known_hosts holds for it is refused, and the error names the host and
// the known_hosts line.
func TestChangedHostKeyRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := sshtest.NewKey(t, f.dir, "impostor", "")
	kh := filepath.Join(f.dir, "known_hosts_changed")
	appendFile(t, kh, knownhosts.Line([]string{"elsewhere.example"}, other.Public)+"\n")
	appendFile(t, kh, knownhosts.Line([]string{knownhosts.Normalize(f.srv.Addr)}, other.Public)+"\n")
	m := metrics.New()
	cfg := f.config(t)
	cfg.KnownHosts, cfg.Metrics, cfg.Profile = []string{kh}, m, "lab"
	for _, policy := range []string{policyStrict, policyAcceptNew} {
		cfg.HostKeyPolicy = policy
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = b.Validate(t.Context())
		_ = b.Close()
		if !errors.Is(err, ErrHostKey) || !errors.Is(err, backends.ErrPermanent) {
			t.Fatalf("%s: Validate error %v, want a permanent ErrHostKey", policy, err)
		}
		for _, want := range []string{"127.0.0.1", "CHANGED", kh + ":2"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %q", policy, err, want)
			}
		}
	}
	if n := testutil.ToFloat64(m.SSHHostKeyRejections.WithLabelValues("lab", "changed")); n != 2 {
		t.Errorf("changed-key rejections %v, want 2", n)
	}
	data, _ := os.ReadFile(kh)
	if strings.Count(string(data), "\n") != 2 {
		t.Errorf("known_hosts was modified on a changed key:\n%s", data)
	}
}

// TestUnknownHostStrictRefused: under the default policy a host that is
// not in known_hosts is refused, with the way to add it.
func TestUnknownHostStrictRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(t)
	cfg.KnownHosts = []string{filepath.Join(f.dir, "absent_known_hosts")}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	err = b.Validate(t.Context())
	if !errors.Is(err, ErrHostKey) || !strings.Contains(err.Error(), "strict") || !strings.Contains(err.Error(), "ssh-keyscan") {
		t.Fatalf("Validate error %v, want an unknown-host refusal explaining strict and ssh-keyscan", err)
	}
	if _, err := os.Stat(cfg.KnownHosts[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("strict policy created or wrote %s", cfg.KnownHosts[0])
	}
}

// TestAcceptNewRecordsKey: accept-new records an unknown host's key (in
// plain or hashed form), after which strict accepts the host.
func TestAcceptNewRecordsKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, hashed := range []bool{false, true} {
		kh := filepath.Join(t.TempDir(), "sub", "known_hosts")
		cfg := f.config(t)
		cfg.KnownHosts, cfg.HostKeyPolicy, cfg.HashKnownHosts = []string{kh}, policyAcceptNew, hashed
		backend(t, cfg)
		data, err := os.ReadFile(kh)
		if err != nil {
			t.Fatal(err)
		}
		line := strings.TrimSpace(string(data))
		if strings.Count(line, "\n") != 0 || !strings.HasSuffix(line, f.srv.HostKey.AuthorizedLine()) {
			t.Fatalf("hashed=%v: recorded %q, want one line with the server's key", hashed, line)
		}
		if got := strings.HasPrefix(line, "|1|"); got != hashed {
			t.Errorf("hashed=%v: line %q", hashed, line)
		}
		cfg.HostKeyPolicy = policyStrict
		backend(t, cfg) // fails the test if the recorded key does not verify
	}
}

// TestKnownHostsForms: several keys for one host (one of them right), and
// a host certificate signed by an @cert-authority.
func TestKnownHostsForms(t *testing.T) {
	t.Parallel()
	t.Run("MultipleKeys", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		kh := filepath.Join(f.dir, "known_hosts_multi")
		old := sshtest.NewKey(t, f.dir, "old_host_key", "")
		addr := knownhosts.Normalize(f.srv.Addr)
		appendFile(t, kh, knownhosts.Line([]string{addr}, old.Public)+"\n"+
			knownhosts.Line([]string{knownhosts.HashHostname(addr)}, f.srv.HostKey.Public)+"\n")
		cfg := f.config(t)
		cfg.KnownHosts = []string{kh}
		backend(t, cfg)
	})
	t.Run("CertAuthority", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ca := sshtest.NewCA(t, dir, "host_ca")
		hostKey := sshtest.NewKey(t, dir, "host_key", "")
		cert := ca.SignHost(t, hostKey, "127.0.0.1")
		user := sshtest.NewKey(t, dir, "id", "")
		srv := sshtest.Start(t, sshtest.ServerOptions{HostKey: hostKey, HostCert: cert, AuthorizedKeys: []*sshtest.Key{user}})
		kh := filepath.Join(dir, "known_hosts")
		appendFile(t, kh, ca.KnownHostsLine(srv.Addr)+"\n")
		backend(t, Config{Host: "127.0.0.1", Port: srv.Port, User: srv.User, IdentityFiles: []string{user.Path},
			KnownHosts: []string{kh}, RunRoot: filepath.Join(dir, "runs")})
	})
}

// TestNoOptionIgnoresHostKeys: the settings that would skip verification
// are refused, naming the field.
func TestNoOptionIgnoresHostKeys(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"no", "off", "ignore", "yolo"} {
		_, err := New(Config{Host: "h", IdentityFiles: []string{"/nonexistent"}, HostKeyPolicy: v})
		if err == nil || !strings.HasPrefix(err.Error(), "host_key_policy:") {
			t.Errorf("host_key_policy %q: error %v, want one naming host_key_policy", v, err)
		}
	}
}
