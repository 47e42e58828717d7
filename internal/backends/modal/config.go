package modal

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"time"
)

// Config is a modal backend profile. Field names in errors are the yaml
// names.
type Config struct {
	// Mode says where credentials come from: auto (default: managed when
	// its gateway is ready, else direct), direct or managed. See Resolve.
	Mode Mode `yaml:"mode"`
	// Profile names a profile of the Modal config file for direct mode
	// (default: MODAL_PROFILE, else the profile marked active).
	Profile string `yaml:"profile"`
	// ConfigPath is the Modal config file (default: MODAL_CONFIG_PATH,
	// else ~/.modal.toml).
	ConfigPath string `yaml:"config_path"`
	// ServerURL is Modal's API in direct mode (default: MODAL_SERVER_URL,
	// else the profile's server_url, else https://api.modal.com:443).
	// http:// connects without TLS.
	ServerURL string `yaml:"server_url"`
	// Environment is the Modal environment (default: MODAL_ENVIRONMENT,
	// else the profile's, else the workspace default).
	Environment string `yaml:"environment"`
	// Gateway is the managed mode's endpoint.
	Gateway Gateway `yaml:"gateway"`

	// App is the Modal app that owns the sandboxes (default "sandrun").
	App string `yaml:"app"`
	// Image is a registry reference ("python:3.13-slim") every sandbox
	// runs. Required. It must provide /bin/sh.
	Image string `yaml:"image"`
	// CPU (cores) and MemoryMiB are each sandbox's request and hard limit
	// (defaults 1 and 1024).
	CPU       float64 `yaml:"cpu"`
	MemoryMiB int     `yaml:"memory_mib"`
	// Network is blocked (default), open, or allowlist (outbound to
	// AllowedCIDRs only).
	Network      string   `yaml:"network"`
	AllowedCIDRs []string `yaml:"allowed_cidrs"`
	// Regions restricts where sandboxes are scheduled (default: anywhere).
	Regions []string `yaml:"regions"`
	// Workdir is the sandbox's working directory for jobs without a Dir
	// (default: the image's). Absolute.
	Workdir string `yaml:"workdir"`
	// StateDir is a writable directory inside the sandbox for each
	// command's pid file, used to signal it (default /tmp). Absolute.
	StateDir string `yaml:"state_dir"`
	// SandboxTimeout bounds a sandbox's life on Modal's side, whole
	// seconds, at most 24h (default 24h, Modal's limit). A job sandbox
	// lives until its job's deadline plus kill grace and 30s, if sooner;
	// session sandboxes get the full value.
	SandboxTimeout time.Duration `yaml:"sandbox_timeout"`
	// SessionIdle terminates a session sandbox no job has used for this
	// long (default 10m).
	SessionIdle time.Duration `yaml:"session_idle"`

	// Logger receives the backend's and the SDK's warnings (default:
	// discarded). Secrets are never logged.
	Logger *slog.Logger `yaml:"-"`
	// LookupEnv reads the worker's environment (default os.LookupEnv).
	LookupEnv func(key string) (string, bool) `yaml:"-"`
}

// Gateway is a Modal-compatible endpoint that holds the real Modal
// credentials on the worker's behalf: the SDK talks to URL with the
// gateway's own token instead of Modal's.
type Gateway struct {
	// URL is the gateway's server URL (http:// or https://).
	URL string `yaml:"url"`
	// TokenIDEnv and TokenSecretEnv name the worker environment variables
	// holding the gateway token (defaults SANDRUN_MODAL_GATEWAY_TOKEN_ID
	// and SANDRUN_MODAL_GATEWAY_TOKEN_SECRET).
	TokenIDEnv     string `yaml:"token_id_env"`
	TokenSecretEnv string `yaml:"token_secret_env"`
	// CheckTimeout bounds the readiness check (default 5s).
	CheckTimeout time.Duration `yaml:"check_timeout"`
}

// Defaults and limits.
const (
	DefaultApp            = "sandrun"
	DefaultServerURL      = "https://api.modal.com:443"
	DefaultStateDir       = "/tmp"
	DefaultSandboxTimeout = 24 * time.Hour
	DefaultSessionIdle    = 10 * time.Minute
	// MaxSandboxTimeout is Modal's limit on a sandbox's life.
	MaxSandboxTimeout = 24 * time.Hour

	defaultCPU          = 1.0
	defaultMemoryMiB    = 1024
	defaultCheckTimeout = 5 * time.Second
	defaultTokenIDEnv   = "SANDRUN_MODAL_GATEWAY_TOKEN_ID"     //nolint:gosec // a variable's name, not a credential
	defaultSecretEnv    = "SANDRUN_MODAL_GATEWAY_TOKEN_SECRET" //nolint:gosec // a variable's name, not a credential
)

// Network settings.
const (
	NetworkBlocked   = "blocked"
	NetworkOpen      = "open"
	NetworkAllowlist = "allowlist"
)

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	appNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
)

// withDefaults returns a copy of c with every empty field set to its
// default, or an error naming the first field that is wrong.
func (c Config) withDefaults() (Config, error) {
	c.Mode = Mode(firstNonEmpty(string(c.Mode), string(ModeAuto)))
	c.App = firstNonEmpty(c.App, DefaultApp)
	c.Network = firstNonEmpty(c.Network, NetworkBlocked)
	c.StateDir = firstNonEmpty(c.StateDir, DefaultStateDir)
	c.Gateway.TokenIDEnv = firstNonEmpty(c.Gateway.TokenIDEnv, defaultTokenIDEnv)
	c.Gateway.TokenSecretEnv = firstNonEmpty(c.Gateway.TokenSecretEnv, defaultSecretEnv)
	if c.CPU == 0 {
		c.CPU = defaultCPU
	}
	if c.MemoryMiB == 0 {
		c.MemoryMiB = defaultMemoryMiB
	}
	if c.SandboxTimeout == 0 {
		c.SandboxTimeout = DefaultSandboxTimeout
	}
	if c.SessionIdle == 0 {
		c.SessionIdle = DefaultSessionIdle
	}
	if c.Gateway.CheckTimeout == 0 {
		c.Gateway.CheckTimeout = defaultCheckTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, c.validate()
}

// validate checks a Config whose defaults are filled in.
func (c Config) validate() error {
	switch c.Mode {
	case ModeAuto, ModeDirect, ModeManaged:
	default:
		return fmt.Errorf("mode: %q is not auto, direct or managed", c.Mode)
	}
	if c.Mode == ModeManaged && c.Gateway.URL == "" {
		return errors.New("gateway.url: required in managed mode")
	}
	if err := checkServerURL(c.ServerURL); err != nil {
		return fmt.Errorf("server_url: %w", err)
	}
	if err := checkServerURL(c.Gateway.URL); err != nil {
		return fmt.Errorf("gateway.url: %w", err)
	}
	if !envNameRE.MatchString(c.Gateway.TokenIDEnv) {
		return fmt.Errorf("gateway.token_id_env: %q is not an environment variable name", c.Gateway.TokenIDEnv)
	}
	if !envNameRE.MatchString(c.Gateway.TokenSecretEnv) {
		return fmt.Errorf("gateway.token_secret_env: %q is not an environment variable name", c.Gateway.TokenSecretEnv)
	}
	if !appNameRE.MatchString(c.App) {
		return fmt.Errorf("app: %q must be 1-64 letters, digits, '.', '-' or '_'", c.App)
	}
	if c.Image == "" {
		return errors.New("image: required (a registry reference such as python:3.13-slim)")
	}
	if c.CPU < 0 || c.MemoryMiB < 0 {
		return errors.New("cpu, memory_mib: must be positive")
	}
	if err := c.validateNetwork(); err != nil {
		return err
	}
	if c.Workdir != "" && !path.IsAbs(c.Workdir) {
		return fmt.Errorf("workdir: %q is not absolute", c.Workdir)
	}
	if !path.IsAbs(c.StateDir) {
		return fmt.Errorf("state_dir: %q is not absolute", c.StateDir)
	}
	if c.SandboxTimeout < time.Second || c.SandboxTimeout > MaxSandboxTimeout {
		return fmt.Errorf("sandbox_timeout: %s is not between 1s and %s", c.SandboxTimeout, MaxSandboxTimeout)
	}
	if c.SessionIdle < time.Second {
		return fmt.Errorf("session_idle: %s is shorter than 1s", c.SessionIdle)
	}
	if c.Gateway.CheckTimeout < 0 {
		return fmt.Errorf("gateway.check_timeout: %s is negative", c.Gateway.CheckTimeout)
	}
	return nil
}

func (c Config) validateNetwork() error {
	switch c.Network {
	case NetworkBlocked, NetworkOpen:
		if len(c.AllowedCIDRs) > 0 {
			return fmt.Errorf("allowed_cidrs: only with network: %s", NetworkAllowlist)
		}
	case NetworkAllowlist:
		for _, cidr := range c.AllowedCIDRs {
			if _, err := netip.ParsePrefix(cidr); err != nil {
				return fmt.Errorf("allowed_cidrs: %w", err)
			}
		}
	default:
		return fmt.Errorf("network: %q is not blocked, open or allowlist", c.Network)
	}
	return nil
}

// checkServerURL accepts "" and http(s)://host[:port] URLs, as the SDK
// dials them. A URL with user information is refused without being
// repeated: it may hold a password.
func checkServerURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.User != nil {
		return errors.New("must not hold user information; tokens go in the environment")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("%q is not http(s)://host[:port]", s)
	}
	return nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
