package docker

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/sandrun/sandrun/internal/backends"
)

// HostAccess implements backends.HostAccessChecker: every way the job's
// container reaches the host. A job that joins a running session container
// is judged on that container's real configuration, inspected through the
// engine, not on its own options; and refused (ErrSessionOptions) if it
// asks for options the session container does not have.
func (d *Docker) HostAccess(ctx context.Context, spec backends.Spec) ([]string, bool, error) {
	allowed := d.cfg.AllowHostAccess
	_, host, err := d.containerConfig(spec)
	if err != nil {
		return nil, allowed, err
	}
	var joined *joinedSession
	if spec.Session != "" {
		if joined, err = d.joinSession(ctx, spec, host); err != nil {
			return nil, allowed, err
		}
		if joined != nil {
			host = joined.host
		}
	}
	reasons, err := hostAccess(ctx, host, d.volumeDriverOptions, d.cfg.AllowedVolumeDrivers)
	if err != nil {
		return nil, allowed, err
	}
	if spec.Session != "" {
		d.judged.record(spec, len(reasons) > 0)
	}
	if joined != nil {
		for i, r := range reasons {
			reasons[i] = joined.describe(r)
		}
	}
	return reasons, allowed, nil
}

// volumeInfo is what host-access detection needs of a named volume.
type volumeInfo struct {
	Driver  string
	Options map[string]string
}

func (d *Docker) volumeDriverOptions(ctx context.Context, name string) (volumeInfo, bool, error) {
	v, err := d.api.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if err != nil {
		if isNotFound(err) {
			return volumeInfo{}, false, nil
		}
		return volumeInfo{}, false, err
	}
	return volumeInfo{Driver: v.Volume.Driver, Options: v.Volume.Options}, true, nil
}

// hostAccess is the one function that judges a final host configuration.
// inspect looks a named volume up (found=false: it does not exist yet, and
// docker would create it with the local driver and no options).
func hostAccess(ctx context.Context, h *container.HostConfig, inspect func(context.Context, string) (volumeInfo, bool, error), allowedDrivers []string) ([]string, error) {
	var reasons []string
	add := func(format string, args ...any) { reasons = append(reasons, fmt.Sprintf(format, args...)) }
	if h.Privileged {
		add("privileged container")
	}
	for _, ns := range []struct{ name, mode string }{
		{"pid", string(h.PidMode)}, {"ipc", string(h.IpcMode)}, {"uts", string(h.UTSMode)},
		{"network", string(h.NetworkMode)}, {"user", string(h.UsernsMode)}, {"cgroup", string(h.CgroupnsMode)},
	} {
		switch mode := strings.ToLower(ns.mode); {
		case mode == "host":
			add("host %s namespace", ns.name)
		case strings.HasPrefix(mode, "container:"):
			add("%s namespace of another container (%s)", ns.name, ns.mode)
		}
	}
	for _, dev := range h.Devices {
		add("host device %s", dev.PathOnHost)
	}
	for _, r := range h.DeviceCgroupRules {
		add("device cgroup rule %q: host devices", r)
	}
	for _, r := range h.DeviceRequests {
		add("device request (driver %q): host devices such as GPUs", r.Driver)
	}
	reasons = append(reasons, capabilityReasons(h)...)
	for _, from := range h.VolumesFrom {
		add("volumes of another container (%s)", from)
	}
	mounts := slices.Clone(h.Mounts)
	for _, b := range h.Binds {
		mounts = append(mounts, bindsEntry(b))
	}
	for _, m := range mounts {
		switch m.Type {
		case mount.TypeBind:
			add("bind mount of host path %s", m.Source)
			if isDockerSocket(m.Source) {
				add("docker socket mounted (%s): control of the host's engine", m.Source)
			}
		case mount.TypeVolume:
			if m.Source == "" {
				continue // anonymous: a new local volume
			}
			info, found, err := inspect(ctx, m.Source)
			if err != nil {
				return nil, fmt.Errorf("inspect volume %s: %w", m.Source, err)
			}
			switch {
			case !found:
				// Created on first use by the local driver, with no options.
			case info.Driver == "local":
				if dev := info.Options["device"]; dev != "" && (strings.Contains(info.Options["o"], "bind") || info.Options["type"] == "none" || strings.HasPrefix(dev, "/")) {
					add("volume %s binds host path %s (local driver, o=%s)", m.Source, dev, info.Options["o"])
				}
			case !slices.Contains(allowedDrivers, info.Driver):
				add("volume %s uses driver %q, not allowed by the profile (its storage may be the host's)", m.Source, info.Driver)
			}
		case mount.TypeTmpfs:
		default:
			add("mount of type %s", m.Type)
		}
	}
	return reasons, nil
}

// parseMount turns "SOURCE:TARGET[:ro]" into a mount. A SOURCE that looks
// like a path in any form (absolute, ~, ., .., a Windows drive) is a bind
// mount of a host path; anything else names a volume.
func parseMount(s string) (mount.Mount, error) {
	parts := splitMountSpec(s)
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !path.IsAbs(parts[1]) {
		return mount.Mount{}, fmt.Errorf("mount %q: want SOURCE:/TARGET[:ro]", s)
	}
	m := mount.Mount{Source: parts[0], Target: parts[1], Type: mount.TypeVolume}
	if len(parts) == 3 {
		if parts[2] != "ro" && parts[2] != "rw" {
			return mount.Mount{}, fmt.Errorf("mount %q: mode must be ro or rw", s)
		}
		m.ReadOnly = parts[2] == "ro"
	}
	if looksLikeHostPath(m.Source) {
		m.Type = mount.TypeBind
	}
	return m, nil
}

// bindsEntry reads an entry of HostConfig.Binds ("SOURCE:TARGET[:OPTS]",
// or a bare TARGET for an anonymous volume) as a mount.
func bindsEntry(b string) mount.Mount {
	parts := splitMountSpec(b)
	if len(parts) == 1 {
		return mount.Mount{Type: mount.TypeVolume, Target: b}
	}
	m := mount.Mount{Type: mount.TypeVolume, Source: parts[0], Target: parts[1]}
	if len(parts) > 2 {
		m.ReadOnly = slices.Contains(strings.Split(parts[2], ","), "ro")
	}
	if looksLikeHostPath(m.Source) {
		m.Type = mount.TypeBind
	}
	return m
}

// splitMountSpec splits "SOURCE:TARGET[:MODE]" at its colons, keeping a
// Windows drive letter ("C:\x:/dst") with its path.
func splitMountSpec(s string) []string {
	parts := strings.Split(s, ":")
	if len(parts) >= 3 && len(parts[0]) == 1 && strings.HasPrefix(parts[1], `\`) {
		parts = append([]string{parts[0] + ":" + parts[1]}, parts[2:]...)
	}
	return parts
}

func looksLikeHostPath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || s == "." || s == ".." ||
		strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.Contains(s, `\`) ||
		(len(s) >= 2 && s[1] == ':') || strings.Contains(s, "/")
}

func isDockerSocket(p string) bool {
	clean := path.Clean(p)
	return strings.HasSuffix(clean, "docker.sock") || clean == "/var/run" || clean == "/run"
}
