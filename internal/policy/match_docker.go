package policy

import (
	"encoding/csv"
	"slices"
	"strconv"
	"strings"
)

// dockerBoolFlags are docker/podman run options that take no value.
var dockerBoolFlags = []string{
	"d", "i", "t", "P", "q", "detach", "interactive", "tty", "rm", "privileged", "publish-all", "init",
	"read-only", "sig-proxy", "no-healthcheck", "oom-kill-disable", "disable-content-trust", "quiet", "help",
	"replace", "rootfs", "http-proxy", "no-hosts", "env-host", "tls-verify",
}

// dangerousCaps are capabilities that let a container reach its host.
var dangerousCaps = []string{"ALL", "SYS_ADMIN", "SYS_MODULE", "SYS_PTRACE", "SYS_RAWIO", "DAC_READ_SEARCH", "SYS_BOOT"}

// hostSockets are paths whose mount gives a container control of the host.
var hostSockets = []string{"/var/run/docker.sock", "/run/docker.sock", "/var/run", "/run", "/run/containerd/containerd.sock",
	"/run/podman/podman.sock", "/var/run/crio/crio.sock"}

// matchDocker judges docker/podman/nerdctl run, create and exec options
// that give the container its host: --privileged, host namespaces, bind
// mounts of system or home directories or the engine's socket, dangerous
// capabilities and devices, unconfined security profiles. Host networking
// is not flagged.
func matchDocker(c *command, h *hits) {
	rest, _ := skipOptions(c.args, optSpec{short: "cHl", long: []string{"context", "host", "log-level", "config", "tlscacert", "tlscert", "tlskey", "url", "connection", "root", "runroot", "storage-driver", "cgroup-manager"}})
	if len(rest) > 0 && rest[0].val == "container" {
		rest = rest[1:]
	}
	if len(rest) > 1 && rest[0].val == "volume" && rest[1].val == "create" {
		if dev, ok := volumeHostDevice(rest[2:]); ok {
			h.add(ruleDockerHost, c.name+" volume create -o device="+quoteDetail(dev))
		}
		return
	}
	if len(rest) == 0 || rest[0].val != "run" && rest[0].val != "create" && rest[0].val != "exec" {
		return
	}
	args := rest[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.lit || len(a.val) < 2 || a.val[0] != '-' {
			return // the image: the rest is the container's command
		}
		if a.val == "--" {
			return
		}
		name, val, hasVal := parseDockerFlag(a.val)
		if !hasVal && !isDockerBool(name) && i+1 < len(args) {
			i++
			val = args[i].val
		}
		if detail, ok := dockerHostFlag(name, val); ok {
			h.add(ruleDockerHost, c.name+" "+rest[0].val+" "+detail)
		}
	}
}

// parseDockerFlag splits --name=value, -v/x:y and short clusters (-it).
func parseDockerFlag(v string) (name, val string, hasVal bool) {
	if long, ok := strings.CutPrefix(v, "--"); ok {
		name, val, hasVal = strings.Cut(long, "=")
		return name, val, hasVal
	}
	cluster := v[1:]
	for j := 0; j < len(cluster); j++ {
		if !isDockerBool(cluster[j : j+1]) {
			if j+1 < len(cluster) {
				return cluster[j : j+1], strings.TrimPrefix(cluster[j+1:], "="), true
			}
			return cluster[j : j+1], "", false
		}
	}
	return cluster[len(cluster)-1:], "", false
}

func isDockerBool(name string) bool { return slices.Contains(dockerBoolFlags, name) }

// dockerHostFlag reports whether one option gives the container its host.
func dockerHostFlag(name, val string) (string, bool) {
	switch name {
	case "privileged":
		// A boolean flag reads its value as strconv.ParseBool does (1, t,
		// TRUE, ...); one docker would refuse counts as true.
		if on, err := strconv.ParseBool(val); val == "" || on || err != nil {
			return "--privileged", true
		}
	case "pid", "ipc", "userns", "uts", "cgroupns":
		if val == "host" {
			return "--" + name + "=host", true
		}
	case "cap-add":
		for _, cp := range strings.Split(val, ",") {
			cp = strings.TrimPrefix(strings.ToUpper(cp), "CAP_")
			if slices.Contains(dangerousCaps, cp) {
				return "--cap-add " + cp, true
			}
		}
	case "security-opt":
		if strings.Contains(val, "unconfined") || val == "label=disable" || val == "label:disable" {
			return "--security-opt " + quoteDetail(val), true
		}
	case "device":
		src, _, _ := strings.Cut(val, ":")
		if isBlockDevice(src) {
			return "--device " + quoteDetail(src), true
		}
	case "v", "volume":
		src, _, _ := strings.Cut(val, ":")
		if hostMount(src) {
			return "-v " + quoteDetail(src), true
		}
	case "mount":
		if src, ok := mountHostSource(val); ok {
			return "--mount source=" + quoteDetail(src), true
		}
	}
	return "", false
}

// mountHostSource reads a --mount value the way docker does: a CSV record
// (a field may be quoted: "source=/"), keys case-insensitive, type volume
// by default. It returns the host path the mount reaches: the source of a
// bind mount, or the device of a volume the local driver mounts from the
// host (volume-opt=device=/,volume-opt=o=bind, or a block device).
func mountHostSource(val string) (string, bool) {
	fields, err := csv.NewReader(strings.NewReader(val)).Read()
	if err != nil {
		fields = strings.Split(val, ",") // docker refuses it; judge the plain reading
	}
	typ, src, device := "volume", "", ""
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "type":
			typ = strings.ToLower(strings.TrimSpace(v))
		case "source", "src":
			src = v
		case "volume-opt":
			if ok, ov, _ := strings.Cut(v, "="); strings.TrimSpace(ok) == "device" {
				device = ov
			}
		}
	}
	switch {
	case typ == "bind" && hostMount(src):
		return src, true
	case typ == "volume" && (hostMount(device) || isBlockDevice(device)):
		return device, true
	}
	return "", false
}

// volumeHostDevice judges docker volume create with the local driver's
// device option: a named volume bound to a host directory or a block
// device (-o type=none -o o=bind -o device=/) gives every container that
// mounts it that path.
func volumeHostDevice(args []arg) (string, bool) {
	_, opts := operands(args, optSpec{short: "do", long: []string{"driver", "opt", "label", "scope", "sharing",
		"availability", "group", "required-bytes", "limit-bytes", "secret", "topology-preferred", "topology-required", "type"}})
	for _, o := range opts {
		if o.name != "o" && o.name != "opt" || !o.value.lit {
			continue
		}
		if k, v, _ := strings.Cut(o.value.val, "="); k == "device" && (hostMount(v) || isBlockDevice(v)) {
			return v, true
		}
	}
	return "", false
}

// hostMount reports whether bind-mounting src gives a container its host.
func hostMount(src string) bool {
	c, ok := cleanAbs(src)
	return ok && (protectedRoot(src, true) || slices.Contains(hostSockets, c))
}
