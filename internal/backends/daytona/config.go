package daytona

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// Config is a daytona backend profile, as its YAML spells it.
type Config struct {
	// APIURL is the control-plane API (default DefaultAPIURL).
	APIURL string `yaml:"api_url"`
	// APIKeyEnv names the worker environment variable holding the API key
	// (default DAYTONA_API_KEY).
	APIKeyEnv string `yaml:"api_key_env"`
	// OrganizationID, when set, is sent as X-Daytona-Organization-ID; the
	// API reads it with JWT credentials (an API key names its own).
	OrganizationID string `yaml:"organization_id"`
	// Target is the region sandboxes are created in (default: the
	// organization's).
	Target string `yaml:"target"`

	// Image (an OCI reference, built as `FROM image`) or Snapshot (a
	// snapshot's name or ID) is what sandboxes start from; at most one.
	// Neither: the organization's default snapshot. A job's
	// container.image replaces the image.
	Image    string `yaml:"image"`
	Snapshot string `yaml:"snapshot"`
	// CPU (cores), MemoryGB and DiskGB size sandboxes built from an image
	// (a snapshot fixes its own). Zero: the API's defaults.
	CPU      int `yaml:"cpu"`
	MemoryGB int `yaml:"memory_gb"`
	DiskGB   int `yaml:"disk_gb"`
	// AutoStopMinutes stops a sandbox this long after its last activity,
	// then it deletes itself: the backstop for a worker that died. Nil
	// means DefaultAutoStopMinutes; it cannot be turned off (0 is refused).
	AutoStopMinutes *int `yaml:"auto_stop_minutes"`
	// NetworkBlockAll cuts the sandboxes off the network.
	NetworkBlockAll bool `yaml:"network_block_all"`

	// Mode is session (default: streamed output, stdout and stderr apart,
	// resumed after a broken connection) or execute (one synchronous call,
	// output combined at the end, lost with the connection: the attempt
	// then fails with ErrUnavailable).
	Mode string `yaml:"mode"`
	// ExecuteTimeout is the execute mode's API timeout for a job without
	// a deadline (default 1h).
	ExecuteTimeout time.Duration `yaml:"execute_timeout"`
	// StartTimeout bounds creating a sandbox until it is started (default 5m).
	StartTimeout time.Duration `yaml:"start_timeout"`
	// RequestTimeout bounds one API call that does not wait for the job
	// (default 30s).
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// PollInterval is the slowest poll of a running command's exit code;
	// polls start faster (default 1s).
	PollInterval time.Duration `yaml:"poll_interval"`

	// LookupEnv reads the worker's environment (nil: os.LookupEnv).
	LookupEnv func(key string) (string, bool) `yaml:"-"`
	// Logger receives what cannot be returned, such as a sandbox that
	// could not be deleted after its job (nil: discarded).
	Logger *slog.Logger `yaml:"-"`
}

// Defaults filled in by New.
const (
	DefaultAPIURL          = "https://app.daytona.io/api"
	DefaultAPIKeyEnv       = "DAYTONA_API_KEY"
	DefaultAutoStopMinutes = 15
	DefaultExecuteTimeout  = time.Hour
	DefaultStartTimeout    = 5 * time.Minute
	DefaultRequestTimeout  = 30 * time.Second
	DefaultPollInterval    = time.Second
)

// Modes.
const (
	ModeSession = "session"
	ModeExecute = "execute"
)

// settings is a Config with its defaults filled in, checked, and its
// credentials read.
type settings struct {
	Config
	base     *url.URL
	key      string
	autoStop int
}

// settle fills cfg's defaults into a copy and checks every field; errors
// name the field (never a credential's value).
func settle(cfg Config) (settings, error) {
	s := settings{Config: cfg}
	if s.APIURL == "" {
		s.APIURL = DefaultAPIURL
	}
	if s.APIKeyEnv == "" {
		s.APIKeyEnv = DefaultAPIKeyEnv
	}
	if s.Mode == "" {
		s.Mode = ModeSession
	}
	s.autoStop = DefaultAutoStopMinutes
	if s.AutoStopMinutes != nil {
		s.autoStop = *s.AutoStopMinutes
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"execute_timeout", &s.ExecuteTimeout, DefaultExecuteTimeout},
		{"start_timeout", &s.StartTimeout, DefaultStartTimeout},
		{"request_timeout", &s.RequestTimeout, DefaultRequestTimeout},
		{"poll_interval", &s.PollInterval, DefaultPollInterval},
	}
	var errs []error
	for _, d := range durations {
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
	key, ok := s.LookupEnv(s.APIKeyEnv)
	if !ok || strings.TrimSpace(key) == "" {
		return s, fmt.Errorf("api_key_env: %s is not set in the worker's environment (the Daytona API key)", s.APIKeyEnv)
	}
	s.key = strings.TrimSpace(key)
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
	if !httpsandbox.ValidEnvName(s.APIKeyEnv) {
		errs = append(errs, fmt.Errorf("api_key_env: %q is not an environment variable name", s.APIKeyEnv))
	}
	if s.Image != "" && s.Snapshot != "" {
		errs = append(errs, errors.New("image, snapshot: set one, not both"))
	}
	if strings.ContainsAny(s.Image, "\n\r") {
		errs = append(errs, errors.New("image: must be one line (it becomes `FROM image`)"))
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"cpu", s.CPU}, {"memory_gb", s.MemoryGB}, {"disk_gb", s.DiskGB}} {
		switch {
		case r.v < 0:
			errs = append(errs, fmt.Errorf("%s: %d: must not be negative", r.name, r.v))
		case r.v > 0 && s.Snapshot != "":
			errs = append(errs, fmt.Errorf("%s: a snapshot fixes the sandbox's resources: set image instead of snapshot, or drop %s", r.name, r.name))
		}
	}
	if s.autoStop <= 0 {
		errs = append(errs, fmt.Errorf("auto_stop_minutes: %d: must be > 0 (auto-stop cannot be turned off: it ends the sandboxes of a worker that died)", s.autoStop))
	}
	if s.Mode != ModeSession && s.Mode != ModeExecute {
		errs = append(errs, fmt.Errorf("mode: %q: want %s or %s", s.Mode, ModeSession, ModeExecute))
	}
	return errs
}
