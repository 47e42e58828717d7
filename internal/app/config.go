// Package app wires sandrun's daemons (worker, scheduler, dev) from a
// validated configuration. cmd/* parse flags into a Config and call Run*.
package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/sandrun/sandrun/internal/backends/daytona"
	"github.com/sandrun/sandrun/internal/backends/modal"
	"github.com/sandrun/sandrun/internal/backends/plugin"
	"github.com/sandrun/sandrun/internal/backends/singularity"
	"github.com/sandrun/sandrun/internal/backends/vercel"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/policy"
	"github.com/sandrun/sandrun/internal/scheduler"
	"github.com/sandrun/sandrun/internal/worker"
)

// Config is the daemons' configuration: a YAML file, then SANDRUN_*
// environment variables, then flags, validated once at start-up.
type Config struct {
	// Deprecations are the warnings LoadFile has for the file: forms it
	// still reads that will go (daemons print them at start).
	Deprecations []string `yaml:"-"`

	NATS        NATSConfig `yaml:"nats"`
	MetricsAddr string     `yaml:"metrics_addr"`
	// Profiles adds Go's runtime profiles (/debug/pprof/) to the metrics
	// address. They need no credentials: keep that address private.
	Profiles bool                     `yaml:"profiles"`
	Layout   LayoutConfig             `yaml:"layout"`
	Worker   worker.Config            `yaml:"worker"`
	Backends map[string]BackendConfig `yaml:"backends"`
	Policy   PolicyConfig             `yaml:"policy"`
	// SchedulesFile is a YAML file with a top-level `schedules:` list.
	SchedulesFile string `yaml:"schedules_file"`
	// Schedules are added to those of SchedulesFile (sandrun dev's
	// example schedule).
	Schedules []scheduler.Schedule `yaml:"-"`
	// LogFormat is json (default for daemons) or text.
	LogFormat string `yaml:"log_format"`
	// Collectors are registered with the process's metrics (sandrun dev:
	// the embedded server's figures).
	Collectors []prometheus.Collector `yaml:"-"`
}

// NATSConfig says how to reach NATS.
type NATSConfig struct {
	URL     string `yaml:"url"`
	Creds   string `yaml:"creds"`
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	TLSCA   string `yaml:"tls_ca"`
}

// Conn converts to natsutil's form, with the fallbacks of
// natsutil.ConnConfig.Resolve (environment, contexts, the default URL).
func (n NATSConfig) Conn(name string, daemon bool) (natsutil.ConnConfig, error) {
	c, _, err := natsutil.ConnConfig{URL: n.URL, CredsFile: n.Creds, TLSCert: n.TLSCert, TLSKey: n.TLSKey, TLSCA: n.TLSCA, Name: name, Daemon: daemon}.Resolve()
	if err != nil {
		return c, fmt.Errorf("nats: %w", err)
	}
	return c, nil
}

// LayoutConfig sizes the JetStream assets.
type LayoutConfig struct {
	Replicas  int            `yaml:"replicas"`
	Retention jobs.Retention `yaml:"retention"`
}

func (l LayoutConfig) jobs() jobs.LayoutConfig {
	return jobs.LayoutConfig{Replicas: l.Replicas, Retention: l.Retention}
}

// BackendConfig is one backend profile. Kind selects the implementation;
// the other fields belong to it.
type BackendConfig struct {
	Kind string `yaml:"kind"`
	// ForwardEnv, for every kind: variables the worker supplies to this
	// profile's jobs that name them, NAME: env:VAR or file:/PATH.
	ForwardEnv worker.Forward `yaml:"forward_env"`
	// ProfileSettings are the local, docker, ssh and singularity
	// settings, written in the block named after the kind
	// (`docker: {image: …}`). They are still read from the profile's top
	// level for one release, with a warning that says where they go.
	ProfileSettings `yaml:",inline"`
	// The kinds' blocks; blockOf picks the profile's own.
	Local       *ProfileSettings `yaml:"local"`
	Docker      *ProfileSettings `yaml:"docker"`
	SSH         *ProfileSettings `yaml:"ssh"`
	Singularity *ProfileSettings `yaml:"singularity"`
	Apptainer   *ProfileSettings `yaml:"apptainer"`
	// Backends added since keep their settings in a block named after
	// their kind (see docs/configuration.md and docs/plugins.md).
	Modal   *modal.Config   `yaml:"modal"`
	Daytona *daytona.Config `yaml:"daytona"`
	Vercel  *vercel.Config  `yaml:"vercel"`
	Plugin  *plugin.Config  `yaml:"plugin"`
}

// ProfileSettings are the settings of the local, docker, ssh and
// singularity kinds (each reads its own: the kinds table lists which).
type ProfileSettings struct {
	// local
	Shell   string            `yaml:"shell"`
	BaseEnv map[string]string `yaml:"base_env"`
	// Cgroup is auto, off or required (local.Config); CgroupParent the
	// cgroup v2 directory its job cgroups go under.
	Cgroup       string `yaml:"cgroup"`
	CgroupParent string `yaml:"cgroup_parent"`
	// WorkspaceRoot (local): where the profile's workspaces live.
	WorkspaceRoot string `yaml:"workspace_root"`
	// docker
	Host         string   `yaml:"host"`
	Image        string   `yaml:"image"`
	User         string   `yaml:"user"`
	Network      string   `yaml:"network"`
	MemoryBytes  int64    `yaml:"memory_bytes"`
	NanoCPUs     int64    `yaml:"nano_cpus"`
	PidsLimit    int64    `yaml:"pids_limit"`
	CapAdd       []string `yaml:"cap_add"`
	ReadOnlyRoot bool     `yaml:"read_only_root"`
	// AllowHostAccess and AllowedVolumeDrivers: see docs/configuration.md.
	AllowHostAccess      bool     `yaml:"allow_host_access"`
	AllowedVolumeDrivers []string `yaml:"allowed_volume_drivers"`
	// docker: images a job may name (patterns), mounts of every
	// container, /dev/shm and /tmp sizes, the writable layer's limit.
	AllowedImages []string `yaml:"allowed_images"`
	Volumes       []string `yaml:"volumes"`
	ShmSize       int64    `yaml:"shm_size"`
	TmpSize       int64    `yaml:"tmp_size"`
	DiskBytes     int64    `yaml:"disk_bytes"`
	// WarmPool (docker): containers kept created ahead of demand for the
	// profile's plain one-shot jobs (0: none).
	WarmPool    int           `yaml:"warm_pool"`
	SessionIdle time.Duration `yaml:"session_idle"`
	Pull        string        `yaml:"pull"`
	// ssh (host and user above name the remote host and login): see
	// docs/configuration.md.
	Port              int           `yaml:"port"`
	IdentityFiles     []string      `yaml:"identity_files"`
	CertificateFiles  []string      `yaml:"certificate_files"`
	PassphraseEnv     string        `yaml:"passphrase_env"`
	PassphraseFile    string        `yaml:"passphrase_file"`
	Agent             bool          `yaml:"agent"`
	AgentSocket       string        `yaml:"agent_socket"`
	KnownHosts        []string      `yaml:"known_hosts"`
	HostKeyPolicy     string        `yaml:"host_key_policy"`
	HashKnownHosts    bool          `yaml:"hash_known_hosts"`
	ProxyJump         string        `yaml:"proxy_jump"`
	SSHConfig         string        `yaml:"ssh_config"`
	RunRoot           string        `yaml:"run_root"`
	OnOrphan          string        `yaml:"on_orphan"`
	MaxSessions       int           `yaml:"max_sessions"`
	KeepaliveInterval time.Duration `yaml:"keepalive_interval"`
	KeepaliveCountMax int           `yaml:"keepalive_count_max"`
	ConnectTimeout    time.Duration `yaml:"connect_timeout"`
	ReconnectTimeout  time.Duration `yaml:"reconnect_timeout"`
	KeepFailed        time.Duration `yaml:"keep_failed"`
	PollInterval      time.Duration `yaml:"poll_interval"`
	WatchdogMargin    time.Duration `yaml:"watchdog_margin"`
	// singularity (image, network and allow_host_access above apply too):
	// see docs/configuration.md.
	Binary         string        `yaml:"binary"`
	Scratch        string        `yaml:"scratch"`
	WritableTmpfs  bool          `yaml:"writable_tmpfs"`
	Binds          []string      `yaml:"binds"`
	Pwd            string        `yaml:"pwd"`
	Fakeroot       bool          `yaml:"fakeroot"`
	CacheMaxBytes  int64         `yaml:"cache_max_bytes"`
	CacheMaxImages int           `yaml:"cache_max_images"`
	CacheMaxAge    time.Duration `yaml:"cache_max_age"`
	PullTimeout    time.Duration `yaml:"pull_timeout"`
}

// blockOf returns the settings block a profile of bc's kind is written
// with, or nil when it has none.
func (bc BackendConfig) blockOf() *ProfileSettings {
	switch bc.Kind {
	case "local":
		return bc.Local
	case "docker":
		return bc.Docker
	case "ssh":
		return bc.SSH
	case "singularity", "apptainer":
		if bc.Apptainer != nil {
			return bc.Apptainer
		}
		return bc.Singularity
	}
	return nil
}

// settled returns bc with its kind's block, if it has one, as its
// settings (a profile cannot have both: checkProfileKeys refuses that).
func (bc BackendConfig) settled() BackendConfig {
	if b := bc.blockOf(); b != nil {
		bc.ProfileSettings = *b
	}
	bc.Local, bc.Docker, bc.SSH, bc.Singularity, bc.Apptainer = nil, nil, nil, nil, nil
	return bc
}

// SingularityConfig returns the singularity backend's configuration of a profile.
func (bc BackendConfig) SingularityConfig(name string, m *metrics.Metrics) singularity.Config {
	return singularity.Config{Binary: bc.Binary, Image: bc.Image, Scratch: bc.Scratch, Network: bc.Network,
		WritableTmpfs: bc.WritableTmpfs, Binds: bc.Binds, Pwd: bc.Pwd, Fakeroot: bc.Fakeroot,
		AllowHostAccess: bc.AllowHostAccess, CacheMaxBytes: bc.CacheMaxBytes, CacheMaxImages: bc.CacheMaxImages,
		CacheMaxAge: bc.CacheMaxAge, PullTimeout: bc.PullTimeout, Metrics: m, Profile: name}
}

// PolicyConfig is the worker's approval policy.
type PolicyConfig struct {
	Ceiling   map[string]string `yaml:"ceiling"`
	Allowlist []string          `yaml:"allowlist"`
	// Shell is the dialect commands are parsed in: sh (dash, busybox
	// ash: what backends run as /bin/sh -c; the default) or bash.
	Shell string `yaml:"shell"`
	// DisabledPacks turns rule packs off (`sandrun policy rules` lists
	// them): a deployment without Kubernetes may drop kube.
	DisabledPacks []string `yaml:"disabled_packs"`
	// TokenHosts names the deployment's own services a job may send a
	// service's credential to (a self-managed GitLab): a host name, or
	// *.domain for the names under it.
	TokenHosts []string `yaml:"token_hosts"`
}

// Engine builds the policy engine; errors name the field.
func (p PolicyConfig) Engine() (*policy.Engine, error) {
	cfg := policy.DefaultConfig()
	for origin, m := range p.Ceiling {
		mode, err := policy.ParseMode(m)
		if err != nil {
			return nil, fmt.Errorf("policy.ceiling.%s: %w", origin, err)
		}
		cfg.Ceiling[origin] = mode
	}
	cfg.Allowlist = append(cfg.Allowlist, p.Allowlist...)
	sh, err := policy.ParseShell(p.Shell)
	if err != nil {
		return nil, fmt.Errorf("policy.shell: %w", err)
	}
	cfg.Shell = sh
	cfg.DisabledPacks = p.DisabledPacks
	cfg.TokenHosts = p.TokenHosts
	return policy.New(cfg)
}

// LoadFile reads a YAML config file strictly: unknown keys are errors.
// An empty path returns the zero Config.
func LoadFile(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	// The profiles' keys first: a key in the wrong place is named by
	// its path, before the decoder trips on its type.
	bad, deprecated := checkFileProfileKeys(data)
	for _, name := range slices.Sorted(maps.Keys(bad)) {
		return c, fmt.Errorf("config %s: %w", path, bad[name])
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	for _, name := range slices.Sorted(maps.Keys(deprecated)) {
		c.Deprecations = append(c.Deprecations, deprecated[name])
	}
	for name, bc := range c.Backends {
		c.Backends[name] = bc.settled()
	}
	if err := c.Layout.Retention.WithDefaults().Validate(); err != nil {
		return c, fmt.Errorf("config %s: layout.%w", path, err)
	}
	return c, nil
}

// Forwards returns each profile's forward_env, checked; errors name
// backends.NAME.forward_env.VAR.
func (c Config) Forwards() (map[string]worker.Forward, error) {
	out := map[string]worker.Forward{}
	for _, name := range slices.Sorted(maps.Keys(c.Backends)) {
		f := c.Backends[name].ForwardEnv
		if err := f.Validate("backends." + name + ".forward_env"); err != nil {
			return nil, err
		}
		if len(f) > 0 {
			out[name] = f
		}
	}
	return out, nil
}

// LoadFileProfiles reads a worker config file as LoadFile does, except
// that a backend profile that does not decode (an unknown field, a wrong
// type) is left out and its error returned under its name, instead of
// failing the whole file: doctor reports every broken profile and checks
// the rest. Errors outside backends fail the file as in LoadFile.
func LoadFileProfiles(path string) (Config, map[string]error, error) {
	c, err := LoadFile(path)
	if err == nil || path == "" {
		return c, nil, err
	}
	data, rerr := os.ReadFile(path)
	if rerr != nil {
		return c, nil, err
	}
	var doc yaml.Node
	if yerr := yaml.Unmarshal(data, &doc); yerr != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return c, nil, err
	}
	root := doc.Content[0]
	var profiles *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "backends" {
			profiles = root.Content[i+1]
			root.Content = append(root.Content[:i:i], root.Content[i+2:]...)
			break
		}
	}
	if profiles == nil || profiles.Kind != yaml.MappingNode {
		return c, nil, err
	}
	rest, merr := yaml.Marshal(root)
	if merr != nil {
		return c, nil, err
	}
	c = Config{}
	dec := yaml.NewDecoder(bytes.NewReader(rest))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, nil, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Layout.Retention.WithDefaults().Validate(); err != nil {
		return c, nil, fmt.Errorf("config %s: layout.%w", path, err)
	}
	bad := map[string]error{}
	c.Backends = map[string]BackendConfig{}
	for i := 0; i+1 < len(profiles.Content); i += 2 {
		name := profiles.Content[i].Value
		one, merr := yaml.Marshal(profiles.Content[i+1])
		if merr != nil {
			bad[name] = fmt.Errorf("backends.%s: %w", name, merr)
			continue
		}
		dep, kerr := checkProfileKeys(name, profiles.Content[i+1])
		if kerr != nil {
			bad[name] = kerr
			continue
		}
		var bc BackendConfig
		dec := yaml.NewDecoder(bytes.NewReader(one))
		dec.KnownFields(true)
		if derr := dec.Decode(&bc); derr != nil && !errors.Is(derr, io.EOF) {
			bad[name] = fmt.Errorf("backends.%s: %w", name, derr)
			continue
		}
		if dep != "" {
			c.Deprecations = append(c.Deprecations, dep)
		}
		c.Backends[name] = bc.settled()
	}
	return c, bad, nil
}

// LoadSchedules reads the schedules file, if any.
func (c Config) LoadSchedules() ([]scheduler.Schedule, error) {
	if c.SchedulesFile == "" {
		return c.Schedules, nil
	}
	data, err := os.ReadFile(c.SchedulesFile)
	if err != nil {
		return nil, fmt.Errorf("schedules_file: %w", err)
	}
	s, err := scheduler.DecodeFile(data)
	if err != nil {
		return nil, fmt.Errorf("schedules_file %s: %w", c.SchedulesFile, err)
	}
	return append(s, c.Schedules...), nil
}
