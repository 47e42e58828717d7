// Package docker runs jobs in hardened, one-shot containers through the
// Docker Engine API (github.com/moby/moby/client, which negotiates down to
// API 1.40, so it works with Debian's 20.10 engine).
//
// One job attempt is one container: create (hardened: all capabilities
// dropped, no-new-privileges, no network, pids/memory/CPU limits, tmpfs
// /tmp, an init as PID 1, labels naming job, attempt and worker), attach, wait, start, and
// remove. A timeout or cancel signals the container itself — SIGTERM, then
// SIGKILL after the grace — so the whole workload dies, not just a client.
//
// Host access — bind mounts in every path form, named volumes whose local
// driver binds a host path (found by inspecting the volume), volumes of
// drivers the profile does not trust, privileged mode, host namespaces,
// another container's namespaces, devices, dangerous or unknown
// capabilities, the engine's socket — is detected by one
// function of the final container configuration and refused unless the
// profile sets AllowHostAccess.
//
// Jobs with a session key exec into a long-lived session container of that
// key instead (created once, removed after SessionIdle); a timeout signals
// the exec's process group inside the container. The session container has
// the options of the job that created it: a later job is judged on that
// container's real configuration (inspected), and refused if it asks for
// other options.
//
// A profile with a warm pool (WarmPool) keeps containers of its plain
// jobs' configuration created and started ahead of demand: a plain
// one-shot job claims one — renamed for its job and attempt, the labels
// being fixed at create — and its waiting wrapper reads the job's directory,
// environment and command from the container's stdin and execs it as a
// fresh container would (pool.go, poolrun.go, docs/backends/docker.md).
//
// Images follow a pull policy (if-not-present, always, never); concurrent
// pulls of one image are one pull. Container and pull figures go to the
// worker's metrics.
package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/metrics"
)

// Config is a docker backend profile.
type Config struct {
	// Host is the engine address (default: DOCKER_HOST, else the local socket).
	Host string
	// Image runs every job of the profile; it must exist locally.
	Image string
	// User runs the command (default "65534:65534", nobody).
	User string
	// Network is the network mode (default "none").
	Network string
	// MemoryBytes, NanoCPUs and PidsLimit bound the container (defaults
	// 512 MiB, 1 CPU, 256).
	MemoryBytes int64
	NanoCPUs    int64
	PidsLimit   int64
	// CapAdd adds capabilities back after all are dropped.
	CapAdd []string
	// ReadOnlyRoot mounts the image read-only (/tmp stays writable).
	ReadOnlyRoot bool
	// AllowHostAccess lets jobs whose container reaches the host run (the
	// policy then applies its host-only rules). Default: refused.
	AllowHostAccess bool
	// AllowedVolumeDrivers are volume drivers other than "local" trusted
	// not to expose host storage.
	AllowedVolumeDrivers []string
	// SessionIdle removes a session container unused this long (default
	// 10m). Jobs with a session key exec into their session's container.
	SessionIdle time.Duration
	// Pull is the image pull policy: if-not-present (default), always or
	// never. Concurrent pulls of one image are done once.
	Pull string
	// AllowedImages are patterns of the images a job may name in
	// container.image instead of Image ("python:3.*", "ghcr.io/acme/*";
	// * matches any run of characters, / included). Empty: only Image.
	AllowedImages []string
	// Volumes are mounts of every container of the profile, written as a
	// job's container.mounts ("NAME:/data", "/srv/cache:/cache:ro") and
	// judged for host access the same way.
	Volumes []string
	// ShmSize is /dev/shm's size in bytes (0: the engine's default, 64 MiB);
	// TmpSize /tmp's (default 64 MiB); DiskBytes the container's writable
	// layer (0: none; needs a storage driver that supports the size
	// option, such as overlay2 on xfs with pquota).
	ShmSize   int64
	TmpSize   int64
	DiskBytes int64
	// WarmPool is how many containers of the profile are kept created
	// ahead of demand, per deployment and worker, for plain one-shot jobs
	// (no session, workspace or container options, the profile's image):
	// such a job starts one instead of creating its own, and the pool
	// refills in the background (see pool.go). Default 0: none. Pull
	// always cannot have one (a pooled container's image predates its
	// job).
	WarmPool int
	// Metrics, if set, receive container and pull figures labelled with
	// Profile.
	Metrics *metrics.Metrics
	Profile string
}

// Labels on every container sandrun creates.
const (
	LabelManaged = "io.sandrun.managed"
	LabelJob     = "io.sandrun.job"
	LabelAttempt = "io.sandrun.attempt"
	LabelWorker  = "io.sandrun.worker"
	LabelDeploy  = "io.sandrun.deployment"
)

// Docker is the backend.
type Docker struct {
	cfg   Config
	api   engine
	close func() error

	sessMu   sync.Mutex
	sessions map[string]*session // by session key
	judged   judgements          // HostAccess's verdicts on session jobs, for Run
	cleanups sync.WaitGroup      // leftover kills after session jobs
	pulls    puller
	pools    *pools // warm pools (pool.go)
	procRoot string // where the engine's processes are seen; "" is /proc (initReady)
}

// New checks cfg and connects (lazily: the first call dials).
func New(cfg Config) (*Docker, error) {
	if cfg.Image == "" {
		return nil, errors.New("image: required")
	}
	if cfg.User == "" {
		cfg.User = "65534:65534"
	}
	if cfg.Network == "" {
		cfg.Network = "none"
	}
	if cfg.MemoryBytes == 0 {
		cfg.MemoryBytes = 512 << 20
	}
	if cfg.NanoCPUs == 0 {
		cfg.NanoCPUs = 1e9
	}
	if cfg.PidsLimit == 0 {
		cfg.PidsLimit = 256
	}
	if cfg.SessionIdle == 0 {
		cfg.SessionIdle = 10 * time.Minute
	}
	if cfg.TmpSize == 0 {
		cfg.TmpSize = 64 << 20
	}
	switch {
	case cfg.ShmSize < 0:
		return nil, fmt.Errorf("shm_size: must not be negative, got %d", cfg.ShmSize)
	case cfg.TmpSize < 0:
		return nil, fmt.Errorf("tmp_size: must not be negative, got %d", cfg.TmpSize)
	case cfg.DiskBytes < 0:
		return nil, fmt.Errorf("disk_bytes: must not be negative, got %d", cfg.DiskBytes)
	case cfg.WarmPool < 0 || cfg.WarmPool > MaxWarmPool:
		return nil, fmt.Errorf("warm_pool: must be 0 (no pool) to %d, got %d", MaxWarmPool, cfg.WarmPool)
	}
	for i, v := range cfg.Volumes {
		m, err := parseMount(v)
		if err != nil {
			return nil, fmt.Errorf("volumes[%d]: %w", i, err)
		}
		if strings.HasPrefix(m.Source, workspacePrefix) || m.Target == WorkspaceDir {
			return nil, fmt.Errorf("volumes[%d]: %q: %s* volumes and %s are the workspaces'", i, v, workspacePrefix, WorkspaceDir)
		}
	}
	for i, p := range cfg.AllowedImages {
		if strings.TrimSpace(p) == "" || strings.ContainsAny(p, " \t\n") {
			return nil, fmt.Errorf("allowed_images[%d]: %q is not an image pattern", i, p)
		}
	}
	switch cfg.Pull {
	case "":
		cfg.Pull = PullIfNotPresent
	case PullIfNotPresent, PullAlways, PullNever:
	default:
		return nil, fmt.Errorf("pull: %q is not if-not-present, always or never", cfg.Pull)
	}
	if cfg.WarmPool > 0 && cfg.Pull == PullAlways {
		return nil, fmt.Errorf("warm_pool: %d with pull %q: a pooled container is created before its job, so its image is not pulled for the job; use %s or %s, or no pool",
			cfg.WarmPool, PullAlways, PullIfNotPresent, PullNever)
	}
	opts := []client.Opt{client.FromEnv}
	if cfg.Host != "" {
		opts = append(opts, client.WithHost(cfg.Host))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	return &Docker{cfg: cfg, api: c, close: c.Close, pools: newPools(cfg.WarmPool)}, nil
}

// Close removes this backend's session containers and idle pooled
// containers, waits for the removal of those its jobs used, and releases
// the engine connection.
func (d *Docker) Close() error {
	for _, id := range d.pools.close() {
		d.remove(context.Background(), id)
	}
	d.cleanups.Wait()
	d.closeSessions(context.Background())
	return d.close()
}

// Kind implements backends.Backend.
func (d *Docker) Kind() string { return "docker" }

// Validate checks that the engine answers and the image is present.
func (d *Docker) Validate(ctx context.Context) error {
	if _, err := d.api.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("host: engine unreachable: %w", err)
	}
	if _, err := d.api.ImageInspect(ctx, d.cfg.Image); err != nil && d.cfg.Pull == PullNever {
		return fmt.Errorf("image: %q is not on the engine and pull is never: %w", d.cfg.Image, err)
	}
	return nil
}

// Capabilities implements backends.Backend. A container is isolated unless
// its job's options reach the host; HostAccess says which jobs do.
func (d *Docker) Capabilities() backends.Capabilities {
	return backends.Capabilities{Isolated: true, ResourceLimits: true, PersistentSessions: true, Workspaces: true,
		Container: backends.AllContainerOptions}
}

// containerConfig is the hardened configuration of spec's container, with
// the job's container options applied.
func (d *Docker) containerConfig(spec backends.Spec) (*container.Config, *container.HostConfig, error) {
	image, err := d.image(spec)
	if err != nil {
		return nil, nil, err
	}
	env := make([]string, 0, len(spec.Env)+1)
	if _, ok := spec.Env["PATH"]; !ok {
		env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		env = append(env, k+"="+spec.Env[k])
	}
	pids := d.cfg.PidsLimit
	cfg := &container.Config{
		Image:        image,
		Cmd:          []string{"/bin/sh", "-c", spec.Command},
		Env:          env,
		WorkingDir:   spec.Dir,
		User:         d.cfg.User,
		AttachStdout: true,
		AttachStderr: true,
		Labels: map[string]string{
			LabelManaged: "true",
			LabelJob:     spec.JobID,
			LabelAttempt: fmt.Sprint(spec.Attempt),
			LabelWorker:  spec.Worker,
			LabelDeploy:  spec.Deployment,
		},
	}
	initProc := true
	host := &container.HostConfig{
		// An init as PID 1 forwards SIGTERM to the command: a shell or
		// program as PID 1 of its namespace would ignore it.
		Init:           &initProc,
		NetworkMode:    container.NetworkMode(d.cfg.Network),
		CapDrop:        []string{"ALL"},
		CapAdd:         d.cfg.CapAdd,
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: d.cfg.ReadOnlyRoot,
		Tmpfs:          map[string]string{"/tmp": fmt.Sprintf("rw,nosuid,size=%d,mode=1777", d.cfg.TmpSize)},
		ShmSize:        d.cfg.ShmSize,
		// Docker's default on cgroup v1 hosts is the host's cgroup
		// namespace, which is host access; engines before API 1.41
		// ignore the field (and have no cgroup namespaces).
		CgroupnsMode: container.CgroupnsModePrivate,
		Resources: container.Resources{
			Memory: d.cfg.MemoryBytes,
			// Swap equal to the memory limit: none beyond it, so the
			// limit holds on a host with swap too (Docker's default
			// lets a container swap as much again).
			MemorySwap: d.cfg.MemoryBytes,
			NanoCPUs:   d.cfg.NanoCPUs,
			PidsLimit:  &pids,
		},
	}
	if d.cfg.DiskBytes > 0 {
		host.StorageOpt = map[string]string{"size": fmt.Sprint(d.cfg.DiskBytes)}
	}
	for _, v := range d.cfg.Volumes {
		m, _ := parseMount(v) // checked by New
		host.Mounts = append(host.Mounts, m)
	}
	mountWorkspace(spec, cfg, host)
	if o := spec.Container; o != nil {
		if err := applyOptions(host, o); err != nil {
			return nil, nil, err
		}
	}
	return cfg, host, nil
}

// image is the image a job runs: its container.image when the profile's
// allowed_images admit it, else the profile's. A job in a session runs
// in the session's container, so it may not name another image.
func (d *Docker) image(spec backends.Spec) (string, error) {
	if spec.Container == nil || spec.Container.Image == "" || spec.Container.Image == d.cfg.Image {
		return d.cfg.Image, nil
	}
	ref := spec.Container.Image
	switch {
	case spec.Session != "":
		return "", fmt.Errorf("%w: container.image: a session's jobs run in its container, of the profile's image (%s)", backends.ErrPermanent, d.cfg.Image)
	case len(d.cfg.AllowedImages) == 0:
		return "", fmt.Errorf("%w: container.image: %q: this profile runs only its image (%s); list patterns in allowed_images to admit others", backends.ErrPermanent, ref, d.cfg.Image)
	case !imageAllowed(d.cfg.AllowedImages, ref):
		return "", fmt.Errorf("%w: container.image: %q matches none of the profile's allowed_images %v", backends.ErrPermanent, ref, d.cfg.AllowedImages)
	}
	return ref, nil
}

// imageAllowed reports whether ref matches one of patterns, where * is
// any run of characters (/ included) and everything else is literal.
func imageAllowed(patterns []string, ref string) bool {
	for _, p := range patterns {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$"
		if ok, _ := regexp.MatchString(re, ref); ok {
			return true
		}
	}
	return false
}

// applyOptions widens host by the job's container options.
func applyOptions(host *container.HostConfig, o *backends.ContainerOptions) error {
	for _, s := range o.Mounts {
		m, err := parseMount(s)
		if err != nil {
			return fmt.Errorf("container.mounts: %w", err)
		}
		if m.Type == mount.TypeVolume && strings.HasPrefix(m.Source, workspacePrefix) {
			return fmt.Errorf("container.mounts: %q: volumes named %s* are workspaces, reached by naming the workspace (workspace:)", s, workspacePrefix)
		}
		host.Mounts = append(host.Mounts, m)
	}
	if o.Network != "" {
		host.NetworkMode = container.NetworkMode(o.Network)
	}
	host.Privileged = o.Privileged
	host.PidMode = container.PidMode(o.PidMode)
	host.IpcMode = container.IpcMode(o.IpcMode)
	host.UTSMode = container.UTSMode(o.UTSMode)
	for _, dev := range o.Devices {
		onHost, inCtr, _ := strings.Cut(dev, ":")
		if inCtr == "" {
			inCtr = onHost
		}
		host.Devices = append(host.Devices, container.DeviceMapping{PathOnHost: onHost, PathInContainer: inCtr, CgroupPermissions: "rwm"})
	}
	host.CapAdd = append(host.CapAdd, o.CapAdd...)
	return nil
}

// remove deletes a container whatever the job's context says.
func (d *Docker) remove(ctx context.Context, id string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, _ = d.api.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
}

var (
	_ backends.Backend           = (*Docker)(nil)
	_ backends.HostAccessChecker = (*Docker)(nil)
)

// observe records d into h for this profile, when metrics are wired.
func (d *Docker) observe(h func(*metrics.Metrics) prometheus.Observer, since time.Time) {
	if d.cfg.Metrics != nil {
		h(d.cfg.Metrics).Observe(time.Since(since).Seconds())
	}
}

func (d *Docker) count(c func(*metrics.Metrics) prometheus.Counter) {
	if d.cfg.Metrics != nil {
		c(d.cfg.Metrics).Inc()
	}
}
