package vercel

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// Config is a vercel backend profile, as its YAML spells it.
type Config struct {
	// APIURL is the API's base URL (default DefaultAPIURL).
	APIURL string `yaml:"api_url"`
	// TokenEnv names the worker environment variable holding a Vercel
	// access token (default VERCEL_TOKEN). With it, TeamID and ProjectID
	// are required.
	TokenEnv  string `yaml:"token_env"`
	TeamID    string `yaml:"team_id"`
	ProjectID string `yaml:"project_id"`
	// OIDCTokenEnv names the variable holding an OIDC token, used when
	// TokenEnv's is unset (default VERCEL_OIDC_TOKEN). Its payload names
	// the team and, usually, the project; TeamID and ProjectID, if set,
	// must agree with it.
	OIDCTokenEnv string `yaml:"oidc_token_env"`

	// Runtime is the sandboxes' image: node26, node24 (default), node22
	// or python3.13.
	Runtime string `yaml:"runtime"`
	// VCPUs per sandbox: 1 or an even number, with 2048 MB of memory each
	// (default 2).
	VCPUs int `yaml:"vcpus"`
	// NetworkPolicy is allow-all (default) or deny-all.
	NetworkPolicy string `yaml:"network_policy"`
	// SandboxTimeout is the longest a sandbox lives: Vercel stops it then,
	// job or not (default 45m; the plan may allow up to 5h). A job with a
	// deadline asks for its remaining time plus its grace and a minute, up
	// to this.
	SandboxTimeout time.Duration `yaml:"sandbox_timeout"`
	// StartTimeout bounds creating a sandbox until it runs (default 5m).
	StartTimeout time.Duration `yaml:"start_timeout"`
	// RequestTimeout bounds one API call that does not wait for the job
	// (default 30s).
	RequestTimeout time.Duration `yaml:"request_timeout"`

	// LookupEnv reads the worker's environment (nil: os.LookupEnv).
	LookupEnv func(key string) (string, bool) `yaml:"-"`
	// Logger receives what cannot be returned, such as a sandbox that
	// could not be deleted after its job (nil: discarded).
	Logger *slog.Logger `yaml:"-"`
}

// Defaults filled in by New.
const (
	DefaultAPIURL         = "https://vercel.com/api"
	DefaultTokenEnv       = "VERCEL_TOKEN"      //nolint:gosec // G101: a variable's name, not a credential.
	DefaultOIDCTokenEnv   = "VERCEL_OIDC_TOKEN" //nolint:gosec // G101: a variable's name, not a credential.
	DefaultRuntime        = "node24"
	DefaultVCPUs          = 2
	DefaultSandboxTimeout = 45 * time.Minute
	DefaultStartTimeout   = 5 * time.Minute
	DefaultRequestTimeout = 30 * time.Second
)

// runtimes returns the runtimes the Sandbox API supports.
func runtimes() []string { return []string{"node26", "node24", "node22", "python3.13"} }

// Network policies.
const (
	NetworkAllowAll = "allow-all"
	NetworkDenyAll  = "deny-all"
)

// settings is a Config with its defaults filled in, checked, and its
// credentials read.
type settings struct {
	Config
	base  *url.URL
	creds credentials
}

// settle fills cfg's defaults into a copy and checks every field and the
// credentials together; errors name the field (never a token).
func settle(cfg Config) (settings, error) {
	s := settings{Config: cfg}
	for _, d := range []struct {
		v   *string
		def string
	}{{&s.APIURL, DefaultAPIURL}, {&s.TokenEnv, DefaultTokenEnv}, {&s.OIDCTokenEnv, DefaultOIDCTokenEnv},
		{&s.Runtime, DefaultRuntime}, {&s.NetworkPolicy, NetworkAllowAll}} {
		if *d.v == "" {
			*d.v = d.def
		}
	}
	if s.VCPUs == 0 {
		s.VCPUs = DefaultVCPUs
	}
	var errs []error
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"sandbox_timeout", &s.SandboxTimeout, DefaultSandboxTimeout}, {"start_timeout", &s.StartTimeout, DefaultStartTimeout},
		{"request_timeout", &s.RequestTimeout, DefaultRequestTimeout}} {
		switch {
		case *d.v < 0:
			errs = append(errs, fmt.Errorf("%s: %s: must not be negative", d.name, *d.v))
		case *d.v == 0:
			*d.v = d.def
		}
	}
	if s.LookupEnv == nil {
		s.LookupEnv = os.LookupEnv
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	errs = append(errs, s.check()...)
	if err := errors.Join(errs...); err != nil {
		return s, err
	}
	creds, err := s.credentials()
	if err != nil {
		return s, err
	}
	s.creds = creds
	return s, nil
}

// check returns what is wrong with s's fields, each error naming its field.
func (s *settings) check() []error {
	var errs []error
	u, err := url.Parse(s.APIURL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("api_url: %w", err))
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		errs = append(errs, fmt.Errorf("api_url: %q: want an http(s) URL such as %s", s.APIURL, DefaultAPIURL))
	default:
		u.Path = strings.TrimSuffix(u.Path, "/")
		s.base = u
	}
	for _, e := range []struct{ name, v string }{{"token_env", s.TokenEnv}, {"oidc_token_env", s.OIDCTokenEnv}} {
		if !httpsandbox.ValidEnvName(e.v) {
			errs = append(errs, fmt.Errorf("%s: %q is not an environment variable name", e.name, e.v))
		}
	}
	if !slices.Contains(runtimes(), s.Runtime) {
		errs = append(errs, fmt.Errorf("runtime: %q: want one of %s", s.Runtime, strings.Join(runtimes(), ", ")))
	}
	if s.VCPUs < 0 || (s.VCPUs != 1 && s.VCPUs%2 != 0) {
		errs = append(errs, fmt.Errorf("vcpus: %d: must be 1 or an even number", s.VCPUs))
	}
	if s.NetworkPolicy != NetworkAllowAll && s.NetworkPolicy != NetworkDenyAll {
		errs = append(errs, fmt.Errorf("network_policy: %q: want %s or %s", s.NetworkPolicy, NetworkAllowAll, NetworkDenyAll))
	}
	if s.SandboxTimeout > 0 && s.SandboxTimeout < time.Minute {
		errs = append(errs, fmt.Errorf("sandbox_timeout: %s: must be at least 1m", s.SandboxTimeout))
	}
	return errs
}
