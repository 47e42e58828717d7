package app

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"

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

const knownKinds = "local, docker, ssh, singularity, modal, daytona, vercel, plugin"

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
// at a time so that one broken profile does not hide the others.
func NewBackend(name string, bc BackendConfig, m *metrics.Metrics, log *slog.Logger) (backends.Backend, error) {
	var (
		b   backends.Backend
		err error
	)
	switch bc.Kind {
	case "local":
		b, err = local.New(local.Config{Shell: bc.Shell, BaseEnv: bc.BaseEnv, User: bc.User,
			Cgroup: bc.Cgroup, CgroupParent: bc.CgroupParent, WorkspaceRoot: bc.WorkspaceRoot, Logger: log.With("backend", name)})
	case "docker":
		b, err = docker.New(docker.Config{Host: bc.Host, Image: bc.Image, User: bc.User, Network: bc.Network,
			MemoryBytes: bc.MemoryBytes, NanoCPUs: bc.NanoCPUs, PidsLimit: bc.PidsLimit, CapAdd: bc.CapAdd,
			ReadOnlyRoot: bc.ReadOnlyRoot, AllowHostAccess: bc.AllowHostAccess, AllowedVolumeDrivers: bc.AllowedVolumeDrivers, SessionIdle: bc.SessionIdle, Pull: bc.Pull, Metrics: m, Profile: name,
			AllowedImages: bc.AllowedImages, Volumes: bc.Volumes, ShmSize: bc.ShmSize, TmpSize: bc.TmpSize, DiskBytes: bc.DiskBytes})
	case "ssh":
		b, err = ssh.New(ssh.Config{Host: bc.Host, Port: bc.Port, User: bc.User,
			IdentityFiles: bc.IdentityFiles, CertificateFiles: bc.CertificateFiles,
			PassphraseEnv: bc.PassphraseEnv, PassphraseFile: bc.PassphraseFile,
			Agent: bc.Agent, AgentSocket: bc.AgentSocket,
			KnownHosts: bc.KnownHosts, HostKeyPolicy: bc.HostKeyPolicy, HashKnownHosts: bc.HashKnownHosts,
			ProxyJump: bc.ProxyJump, SSHConfig: bc.SSHConfig, RunRoot: bc.RunRoot, OnOrphan: bc.OnOrphan,
			MaxSessions: bc.MaxSessions, KeepaliveInterval: bc.KeepaliveInterval, KeepaliveCountMax: bc.KeepaliveCountMax,
			ConnectTimeout: bc.ConnectTimeout, ReconnectTimeout: bc.ReconnectTimeout, KeepFailed: bc.KeepFailed,
			PollInterval: bc.PollInterval, WatchdogMargin: bc.WatchdogMargin, Metrics: m, Profile: name})
	case "singularity", "apptainer":
		b, err = singularity.New(bc.Singularity(name, m))
	case "modal":
		mc := modal.Config{}
		if bc.Modal != nil {
			mc = *bc.Modal
		}
		mc.Logger = log.With("backend", name)
		b, err = modal.New(mc) // its errors name modal.FIELD
	case "daytona":
		dc := daytona.Config{}
		if bc.Daytona != nil {
			dc = *bc.Daytona
		}
		dc.Logger = log.With("backend", name)
		b, err = daytona.New(dc) // its errors name daytona.FIELD
	case "vercel":
		vc := vercel.Config{}
		if bc.Vercel != nil {
			vc = *bc.Vercel
		}
		vc.Logger = log.With("backend", name)
		b, err = vercel.New(vc) // its errors name vercel.FIELD
	case "plugin":
		pc := plugin.Config{}
		if bc.Plugin != nil {
			pc = *bc.Plugin
		}
		pc.Profile, pc.Logger = name, log.With("backend", name)
		b, err = plugin.New(pc)
		err = inBlock("plugin", err)
	case "":
		err = fmt.Errorf("kind: required (known kinds: %s)", knownKinds)
	default:
		err = fmt.Errorf("kind: unknown backend kind %q (known kinds: %s)", bc.Kind, knownKinds)
	}
	if err != nil {
		return nil, fmt.Errorf("backends.%s.%w", name, err)
	}
	return b, nil
}

// inBlock prefixes a backend's configuration error with the block its
// settings live in (backends.NAME.plugin.path: ...).
func inBlock(block string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s.%w", block, err)
}
