package ssh

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// runEcho runs `echo ok` on b and fails the test unless it prints ok.
func runEcho(t *testing.T, b *Backend) {
	t.Helper()
	var stdout testenv.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := b.Run(ctx, backends.Spec{JobID: "echo", Attempt: 1, Command: "echo ok"}, backends.Output{Stdout: &stdout, Stderr: io.Discard})
	if err != nil || res.ExitCode != 0 || stdout.String() != "ok\n" {
		t.Fatalf("Run: %+v, %v, stdout %q", res, err, stdout.String())
	}
}

// TestAuthMethods logs in with an encrypted key (passphrase from the
// environment or a file), an OpenSSH user certificate, and an ssh-agent.
func TestAuthMethods(t *testing.T) {
	dir := t.TempDir()
	encrypted := sshtest.NewKey(t, dir, "id_encrypted", "correct horse")
	certified := sshtest.NewKey(t, dir, "id_certified", "")
	agentOnly := sshtest.NewKey(t, dir, "id_agent", "")
	ca := sshtest.NewCA(t, dir, "user_ca")
	srv := sshtest.Start(t, sshtest.ServerOptions{
		AuthorizedKeys: []*sshtest.Key{encrypted, agentOnly},
		TrustedUserCA:  ca,
		ExtraConfig:    sshdExtra,
	})
	ca.SignUser(t, certified, srv.User) // certified is not in authorized_keys: only its certificate lets it in
	kh := srv.WriteKnownHosts(t)
	base := func() Config {
		return Config{Host: "127.0.0.1", Port: srv.Port, User: srv.User, KnownHosts: []string{kh}, RunRoot: filepath.Join(dir, "runs")}
	}

	t.Run("PassphraseEnv", func(t *testing.T) {
		t.Setenv("SANDRUN_TEST_PASSPHRASE", "correct horse")
		cfg := base()
		cfg.IdentityFiles, cfg.PassphraseEnv = []string{encrypted.Path}, "SANDRUN_TEST_PASSPHRASE"
		runEcho(t, backend(t, cfg))
	})
	t.Run("PassphraseFile", func(t *testing.T) {
		pf := filepath.Join(t.TempDir(), "passphrase")
		if err := os.WriteFile(pf, []byte("correct horse\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := base()
		cfg.IdentityFiles, cfg.PassphraseFile = []string{encrypted.Path}, pf
		runEcho(t, backend(t, cfg))
	})
	t.Run("WrongOrMissingPassphrase", func(t *testing.T) {
		t.Setenv("SANDRUN_TEST_PASSPHRASE", "battery staple")
		cfg := base()
		cfg.IdentityFiles, cfg.PassphraseEnv = []string{encrypted.Path}, "SANDRUN_TEST_PASSPHRASE"
		_, err := New(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "identity_files[0]:") || !strings.Contains(err.Error(), "passphrase does not open") {
			t.Errorf("wrong passphrase: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "battery") {
			t.Errorf("the passphrase leaked into the error: %v", err)
		}
		cfg.PassphraseEnv = ""
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "encrypted") {
			t.Errorf("no passphrase: %v", err)
		}
	})
	t.Run("Certificate", func(t *testing.T) {
		cfg := base()
		cfg.IdentityFiles = []string{certified.Path} // KEY-cert.pub is found next to it
		runEcho(t, backend(t, cfg))
	})
	t.Run("CertificateFile", func(t *testing.T) {
		moved := filepath.Join(t.TempDir(), "my-cert.pub")
		data, err := os.ReadFile(certified.Path + "-cert.pub")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(moved, data, 0o600); err != nil {
			t.Fatal(err)
		}
		key := filepath.Join(t.TempDir(), "key")
		priv, err := os.ReadFile(certified.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, priv, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := base()
		cfg.IdentityFiles, cfg.CertificateFiles = []string{key}, []string{moved}
		runEcho(t, backend(t, cfg))
	})
	t.Run("Agent", func(t *testing.T) {
		sock := sshtest.StartAgent(t, agentOnly)
		cfg := base()
		cfg.Agent, cfg.AgentSocket = true, sock
		runEcho(t, backend(t, cfg))
	})
}

// TestJumpHost reaches a host through a bastion (ProxyJump), given in the
// profile or through an ssh_config Host alias.
func TestJumpHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := sshtest.NewKey(t, dir, "id", "")
	target := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key}})
	bastion := sshtest.Start(t, sshtest.ServerOptions{AuthorizedKeys: []*sshtest.Key{key},
		ExtraConfig: fmt.Sprintf("PermitOpen %s\n", target.Addr)})
	// The bastion is reached through a proxy that counts its connections.
	front := sshtest.NewProxy(t, bastion.Addr)
	kh := filepath.Join(dir, "known_hosts")
	appendFile(t, kh, target.KnownHostsLine()+"\n")
	appendFile(t, kh, knownhosts.Line([]string{knownhosts.Normalize(front.Addr)}, bastion.HostKey.Public)+"\n")

	t.Run("ProxyJump", func(t *testing.T) {
		before := front.Accepted()
		b := backend(t, Config{Host: "127.0.0.1", Port: target.Port, User: target.User, IdentityFiles: []string{key.Path},
			KnownHosts: []string{kh}, RunRoot: filepath.Join(dir, "runs1"),
			ProxyJump: fmt.Sprintf("%s@127.0.0.1:%d", bastion.User, front.Port)})
		runEcho(t, b)
		if front.Accepted() == before {
			t.Fatal("the bastion saw no connection: the job did not go through the jump host")
		}
	})
	t.Run("SSHConfigAlias", func(t *testing.T) {
		conf := filepath.Join(dir, "ssh_config")
		text := fmt.Sprintf(`Host lab
	HostName 127.0.0.1
	Port %d
	User %s
	IdentityFile %s
	ProxyJump bastion

Host bastion
	HostName 127.0.0.1
	Port %d
	IdentityFile %s
`, target.Port, target.User, key.Path, front.Port, key.Path)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		before := front.Accepted()
		b := backend(t, Config{Host: "lab", SSHConfig: conf, KnownHosts: []string{kh}, RunRoot: filepath.Join(dir, "runs2")})
		runEcho(t, b)
		if front.Accepted() == before {
			t.Fatal("the bastion saw no connection: the ssh_config ProxyJump was not followed")
		}
	})
}

// TestConfigErrors: bad profiles fail at New with the field named.
func TestConfigErrors(t *testing.T) {
	key := sshtest.NewKey(t, t.TempDir(), "id", "")
	ok := Config{Host: "h", IdentityFiles: []string{key.Path}, KnownHosts: []string{filepath.Join(t.TempDir(), "kh")}}
	for _, tc := range []struct {
		name  string
		mut   func(*Config)
		field string
	}{
		{"no host", func(c *Config) { c.Host = "" }, "host:"},
		{"bad port", func(c *Config) { c.Port = 70000 }, "port:"},
		{"bad orphan", func(c *Config) { c.OnOrphan = "ignore" }, "on_orphan:"},
		{"run root escapes", func(c *Config) { c.RunRoot = "runs/../../etc" }, "run_root:"},
		{"run root with space", func(c *Config) { c.RunRoot = "my runs" }, "run_root:"},
		{"missing key", func(c *Config) { c.IdentityFiles = []string{"/nonexistent/id"} }, "identity_files[0]:"},
		{"no key, no agent", func(c *Config) { c.IdentityFiles = nil }, "host:"},
		{"missing ssh_config", func(c *Config) { c.SSHConfig = "/nonexistent/config" }, "ssh_config:"},
		{"bad jump port", func(c *Config) { c.ProxyJump = "bastion:99999" }, "proxy_jump:"},
		{"two passphrases", func(c *Config) { c.PassphraseEnv, c.PassphraseFile = "A", "/f" }, "passphrase_env, passphrase_file:"},
		{"unset passphrase env", func(c *Config) { c.PassphraseEnv = "SANDRUN_TEST_UNSET_VARIABLE" }, "passphrase_env:"},
		{"negative duration", func(c *Config) { c.KeepFailed = -time.Second }, "keep_failed:"},
		{"no agent socket", func(c *Config) { c.IdentityFiles, c.Agent, c.AgentSocket = nil, true, "" }, "agent:"},
	} {
		cfg := ok
		tc.mut(&cfg)
		if tc.name == "no agent socket" {
			t.Setenv("SSH_AUTH_SOCK", "")
		}
		_, err := New(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one starting %q", tc.name, err, tc.field)
		}
	}
}
