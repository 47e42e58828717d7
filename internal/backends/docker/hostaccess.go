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

// dangerousCaps reach past the container when added back.
var dangerousCaps = []string{"SYS_ADMIN", "SYS_PTRACE", "SYS_MODULE", "SYS_RAWIO", "SYS_BOOT", "SYS_TIME",
	"NET_ADMIN", "NET_RAW", "DAC_READ_SEARCH", "DAC_OVERRIDE", "MKNOD", "BPF", "PERFMON", "SYSLOG", "ALL"}

// HostAccess implements backends.HostAccessChecker: every way the job's
// final container configuration reaches the host.
func (d *Docker) HostAccess(ctx context.Context, spec backends.Spec) ([]string, bool, error) {
	_, host, err := d.containerConfig(spec)
	if err != nil {
		return nil, d.cfg.AllowHostAccess, err
	}
	reasons, err := hostAccess(ctx, host, d.volumeDriverOptions, d.cfg.AllowedVolumeDrivers)
	return reasons, d.cfg.AllowHostAccess, err
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
	for _, ns := range []struct{ name, mode string }{{"pid", string(h.PidMode)}, {"ipc", string(h.IpcMode)}, {"uts", string(h.UTSMode)}, {"network", string(h.NetworkMode)}} {
		if ns.mode == "host" {
			add("host %s namespace", ns.name)
		}
	}
	for _, dev := range h.Devices {
		add("host device %s", dev.PathOnHost)
	}
	for _, c := range h.CapAdd {
		if slices.Contains(dangerousCaps, strings.TrimPrefix(strings.ToUpper(c), "CAP_")) {
			add("capability %s added", strings.ToUpper(c))
		}
	}
	for _, m := range h.Mounts {
		switch m.Type {
		case mount.TypeBind:
			add("bind mount of host path %s", m.Source)
			if isDockerSocket(m.Source) {
				add("docker socket mounted (%s): control of the host's engine", m.Source)
			}
		case mount.TypeVolume:
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
	parts := strings.Split(s, ":")
	// A Windows drive letter ("C:\x:/dst") splits once more.
	if len(parts) >= 3 && len(parts[0]) == 1 && strings.HasPrefix(parts[1], `\`) {
		parts = append([]string{parts[0] + ":" + parts[1]}, parts[2:]...)
	}
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

func looksLikeHostPath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || s == "." || s == ".." ||
		strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.Contains(s, `\`) ||
		(len(s) >= 2 && s[1] == ':') || strings.Contains(s, "/")
}

func isDockerSocket(p string) bool {
	clean := path.Clean(p)
	return strings.HasSuffix(clean, "docker.sock") || clean == "/var/run" || clean == "/run"
}
