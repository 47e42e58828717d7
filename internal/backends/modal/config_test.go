package modal

import (
	"strings"
	"testing"
	"time"
)

func TestNewFillsDefaults(t *testing.T) {
	t.Parallel()
	b, err := New(Config{Image: "alpine:3.21"})
	if err != nil {
		t.Fatal(err)
	}
	c := b.cfg
	if c.Mode != ModeAuto || c.App != DefaultApp || c.CPU != 1 || c.MemoryMiB != 1024 || c.Network != NetworkBlocked ||
		c.StateDir != DefaultStateDir || c.SandboxTimeout != DefaultSandboxTimeout || c.SessionIdle != DefaultSessionIdle ||
		c.Gateway.TokenIDEnv != "SANDRUN_MODAL_GATEWAY_TOKEN_ID" || c.Gateway.TokenSecretEnv != "SANDRUN_MODAL_GATEWAY_TOKEN_SECRET" ||
		c.Gateway.CheckTimeout != 5*time.Second || c.Logger == nil || c.LookupEnv == nil {
		t.Errorf("defaults not filled in: %+v", c)
	}
	if got := b.Resolution().String(); got != "modal: credentials not resolved" {
		t.Errorf("Resolution before Validate: %q", got)
	}
	if b.Kind() != "modal" || !b.Capabilities().Isolated || !b.Capabilities().ResourceLimits || !b.Capabilities().PersistentSessions {
		t.Errorf("Kind %q, Capabilities %+v", b.Kind(), b.Capabilities())
	}
}

// TestNewNamesTheField: each invalid setting is refused by New with an
// error naming its yaml field.
func TestNewNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Image = "" }, "image: required"},
		{func(c *Config) { c.Mode = "sometimes" }, `mode: "sometimes" is not auto, direct or managed`},
		{func(c *Config) { c.Mode = ModeManaged }, "gateway.url: required in managed mode"},
		{func(c *Config) { c.ServerURL = "grpc://api.modal.com" }, "server_url:"},
		{func(c *Config) { c.Gateway.URL = "https://user:hunter2@gw.example.com" }, "gateway.url: must not hold user information"},
		{func(c *Config) { c.Gateway.TokenIDEnv = "1BAD" }, "gateway.token_id_env:"},
		{func(c *Config) { c.App = "has space" }, "app:"},
		{func(c *Config) { c.CPU = -1 }, "cpu, memory_mib: must be positive"},
		{func(c *Config) { c.Network = "wide" }, `network: "wide" is not blocked, open or allowlist`},
		{func(c *Config) { c.AllowedCIDRs = []string{"10.0.0.0/8"} }, "allowed_cidrs: only with network: allowlist"},
		{func(c *Config) { c.Network, c.AllowedCIDRs = NetworkAllowlist, []string{"10.0.0.0"} }, "allowed_cidrs:"},
		{func(c *Config) { c.Workdir = "work" }, `workdir: "work" is not absolute`},
		{func(c *Config) { c.StateDir = "tmp" }, `state_dir: "tmp" is not absolute`},
		{func(c *Config) { c.SandboxTimeout = 25 * time.Hour }, "sandbox_timeout: 25h0m0s is not between 1s and 24h0m0s"},
		{func(c *Config) { c.SessionIdle = time.Millisecond }, "session_idle: 1ms is shorter than 1s"},
	} {
		cfg := Config{Image: "alpine:3.21"}
		tt.set(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), "modal.") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v): %v; want an error saying %q", cfg, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows a password: %v", err)
		}
	}
}
