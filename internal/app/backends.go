package app

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/daytona"
	"github.com/sandrun/sandrun/internal/backends/docker"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/backends/modal"
	"github.com/sandrun/sandrun/internal/backends/plugin"
	"github.com/sandrun/sandrun/internal/backends/singularity"
	"github.com/sandrun/sandrun/internal/backends/ssh"
	"github.com/sandrun/sandrun/internal/backends/vercel"
	"github.com/sandrun/sandrun/internal/metrics"
)

// Env is what every backend kind's factory receives: the profile's name,
// its logger and the worker's metrics, never nil.
type Env struct {
	Profile string
	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

// kind is one backend kind: the profile keys it reads (besides kind and
// forward_env: checkProfileKeys refuses the others) and its factory,
// whose errors name the field under the profile.
type kind struct {
	keys  []string
	build func(env Env, bc BackendConfig) (backends.Backend, error)
}

// kinds is the registration table of backend kinds, in the order the docs
// list them. Adding a kind is adding an entry.
var kinds = []struct {
	name string
	kind
}{
	{"local", kind{keys: []string{"shell", "base_env", "user", "cgroup", "cgroup_parent", "workspace_root"},
		build: func(env Env, bc BackendConfig) (backends.Backend, error) {
			return local.New(local.Config{Shell: bc.Shell, BaseEnv: bc.BaseEnv, User: bc.User,
				Cgroup: bc.Cgroup, CgroupParent: bc.CgroupParent, WorkspaceRoot: bc.WorkspaceRoot, Logger: env.Logger})
		}}},
	{"docker", kind{keys: []string{"host", "image", "user", "network", "memory_bytes", "nano_cpus", "pids_limit", "cap_add",
		"read_only_root", "allow_host_access", "allowed_volume_drivers", "session_idle", "pull", "allowed_images", "volumes",
		"shm_size", "tmp_size", "disk_bytes", "warm_pool"},
		build: func(env Env, bc BackendConfig) (backends.Backend, error) {
			return docker.New(docker.Config{Host: bc.Host, Image: bc.Image, User: bc.User, Network: bc.Network,
				MemoryBytes: bc.MemoryBytes, NanoCPUs: bc.NanoCPUs, PidsLimit: bc.PidsLimit, CapAdd: bc.CapAdd,
				ReadOnlyRoot: bc.ReadOnlyRoot, AllowHostAccess: bc.AllowHostAccess, AllowedVolumeDrivers: bc.AllowedVolumeDrivers,
				SessionIdle: bc.SessionIdle, Pull: bc.Pull, Metrics: env.Metrics, Profile: env.Profile,
				AllowedImages: bc.AllowedImages, Volumes: bc.Volumes, ShmSize: bc.ShmSize, TmpSize: bc.TmpSize, DiskBytes: bc.DiskBytes,
				WarmPool: bc.WarmPool})
		}}},
	{"ssh", kind{keys: []string{"host", "port", "user", "identity_files", "certificate_files", "passphrase_env", "passphrase_file",
		"agent", "agent_socket", "known_hosts", "host_key_policy", "hash_known_hosts", "proxy_jump", "ssh_config", "run_root",
		"on_orphan", "max_sessions", "keepalive_interval", "keepalive_count_max", "connect_timeout", "reconnect_timeout",
		"keep_failed", "poll_interval", "watchdog_margin"},
		build: func(env Env, bc BackendConfig) (backends.Backend, error) {
			return ssh.New(ssh.Config{Host: bc.Host, Port: bc.Port, User: bc.User,
				IdentityFiles: bc.IdentityFiles, CertificateFiles: bc.CertificateFiles,
				PassphraseEnv: bc.PassphraseEnv, PassphraseFile: bc.PassphraseFile,
				Agent: bc.Agent, AgentSocket: bc.AgentSocket,
				KnownHosts: bc.KnownHosts, HostKeyPolicy: bc.HostKeyPolicy, HashKnownHosts: bc.HashKnownHosts,
				ProxyJump: bc.ProxyJump, SSHConfig: bc.SSHConfig, RunRoot: bc.RunRoot, OnOrphan: bc.OnOrphan,
				MaxSessions: bc.MaxSessions, KeepaliveInterval: bc.KeepaliveInterval, KeepaliveCountMax: bc.KeepaliveCountMax,
				ConnectTimeout: bc.ConnectTimeout, ReconnectTimeout: bc.ReconnectTimeout, KeepFailed: bc.KeepFailed,
				PollInterval: bc.PollInterval, WatchdogMargin: bc.WatchdogMargin, Metrics: env.Metrics, Profile: env.Profile})
		}}},
	{"singularity", singularityKind},
	{"apptainer", singularityKind},
	{"modal", kind{keys: []string{"modal"}, build: func(env Env, bc BackendConfig) (backends.Backend, error) {
		mc := modal.Config{}
		if bc.Modal != nil {
			mc = *bc.Modal
		}
		mc.Logger = env.Logger
		return modal.New(mc) // its errors name modal.FIELD
	}}},
	{"daytona", kind{keys: []string{"daytona"}, build: func(env Env, bc BackendConfig) (backends.Backend, error) {
		dc := daytona.Config{}
		if bc.Daytona != nil {
			dc = *bc.Daytona
		}
		dc.Logger = env.Logger
		return daytona.New(dc) // its errors name daytona.FIELD
	}}},
	{"vercel", kind{keys: []string{"vercel"}, build: func(env Env, bc BackendConfig) (backends.Backend, error) {
		vc := vercel.Config{}
		if bc.Vercel != nil {
			vc = *bc.Vercel
		}
		vc.Logger = env.Logger
		return vercel.New(vc) // its errors name vercel.FIELD
	}}},
	{"plugin", kind{keys: []string{"plugin"}, build: func(env Env, bc BackendConfig) (backends.Backend, error) {
		pc := plugin.Config{}
		if bc.Plugin != nil {
			pc = *bc.Plugin
		}
		pc.Profile, pc.Logger = env.Profile, env.Logger
		b, err := plugin.New(pc)
		return b, inBlock("plugin", err)
	}}},
}

var singularityKind = kind{keys: []string{"binary", "image", "scratch", "network", "writable_tmpfs", "binds", "pwd", "fakeroot",
	"allow_host_access", "cache_max_bytes", "cache_max_images", "cache_max_age", "pull_timeout"},
	build: func(env Env, bc BackendConfig) (backends.Backend, error) {
		return singularity.New(bc.SingularityConfig(env.Profile, env.Metrics))
	}}

// kindNamed returns the kind called name.
func kindNamed(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k.kind, true
		}
	}
	return kind{}, false
}

// knownKinds lists the kinds for errors (apptainer is singularity's
// other name).
func knownKinds() string {
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if k.name != "apptainer" {
			names = append(names, k.name)
		}
	}
	return strings.Join(names, ", ")
}

// Backends builds the registry of backend profiles. With no profiles
// configured there is one, "local", with the local backend's defaults.
// Errors name the profile and field.
func Backends(profiles map[string]BackendConfig, m *metrics.Metrics, log *slog.Logger) (*backends.Registry, error) {
	if len(profiles) == 0 {
		profiles = map[string]BackendConfig{"local": {Kind: "local"}}
	}
	reg := backends.NewRegistry()
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		b, err := NewBackend(name, profiles[name], m, log)
		if err != nil {
			return nil, err
		}
		if err := reg.Add(name, b); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// NewBackend constructs the backend of one profile; its error names the
// profile's field (backends.NAME.FIELD: ...). doctor builds profiles one
// at a time so that one broken profile does not hide the others. m may be
// nil (doctor): the backend then gets metrics of its own, unexported.
func NewBackend(name string, bc BackendConfig, m *metrics.Metrics, log *slog.Logger) (backends.Backend, error) {
	if m == nil {
		m = metrics.New()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var err error
	if bc.Kind == "" {
		err = fmt.Errorf("kind: required (known kinds: %s)", knownKinds())
	} else if k, ok := kindNamed(bc.Kind); !ok {
		err = fmt.Errorf("kind: unknown backend kind %q (known kinds: %s)", bc.Kind, knownKinds())
	} else {
		var b backends.Backend
		if b, err = k.build(Env{Profile: name, Logger: log.With("backend", name), Metrics: m}, bc); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("backends.%s.%w", name, err)
}

// inBlock prefixes a backend's configuration error with the block its
// settings live in (backends.NAME.plugin.path: ...).
func inBlock(block string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s.%w", block, err)
}
