// Package singularity runs jobs in Apptainer (or Singularity) containers,
// the container runtime of HPC clusters where Docker is not available.
//
// Each job is one `apptainer exec --containall --no-home --cleanenv ...
// IMAGE /bin/sh -c COMMAND`, run as a process group through the local
// backend's runner: a timeout or cancel signals the whole group (the
// runtime and the container's processes), TERM then KILL after the grace.
// The job's environment goes in APPTAINERENV_* variables of the runtime's
// own environment — never on its command line, where `ps` would show
// secrets — and with --cleanenv the container sees exactly that: nothing
// of the worker's environment, nothing the job asked for lost.
//
// Images are SIF files from the SIF cache (internal/sifcache) on the
// profile's scratch directory: docker://, oras:// and library://
// references pulled once and checked before every use, or local .sif
// paths. Binds of host paths (the profile's, or a job's container.mounts)
// are host access, refused unless the profile allows it, as in the docker
// backend.
package singularity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/sifcache"
)

// Config is a singularity backend profile.
type Config struct {
	// Binary is the runtime; empty: apptainer, else singularity, on PATH.
	Binary string
	// Image is the profile's image: docker://, oras://, library:// or an
	// absolute .sif path. A job may name its own in container.image.
	Image string
	// Scratch holds the SIF cache and the runtime's temporary files.
	// Empty: /scratch/$USER/sandrun when /scratch exists and is
	// writable, else DataDir.
	Scratch string
	// DataDir is the fallback scratch (default: the user cache directory's
	// sandrun, such as ~/.cache/sandrun).
	DataDir string
	// Network is none (default: --net --network none, loopback only) or
	// host (the host's network, no --net).
	Network string
	// WritableTmpfs gives the container a writable overlay on tmpfs.
	WritableTmpfs bool
	// Binds are "SRC[:DST[:ro|rw]]" host paths bound into every job's
	// container: host access.
	Binds []string
	// Pwd is the default working directory inside the container (a job's
	// cwd wins).
	Pwd string
	// Fakeroot runs the container as root in a user namespace.
	Fakeroot bool
	// AllowHostAccess lets jobs with binds run (the policy then applies
	// its host-only rules). Default: refused.
	AllowHostAccess bool
	// CacheMaxBytes, CacheMaxImages and CacheMaxAge bound the SIF cache
	// (defaults 50 GiB, no count bound, 30 days).
	CacheMaxBytes  int64
	CacheMaxImages int
	CacheMaxAge    time.Duration
	// PullTimeout bounds one image pull (default 30m).
	PullTimeout time.Duration

	Metrics *metrics.Metrics
	Profile string
	// Now is the SIF cache's clock (tests); nil: time.Now.
	Now func() time.Time
}

// Backend is the singularity backend; safe for concurrent use.
type Backend struct {
	cfg     Config
	binary  string
	flavour string // "APPTAINER" or "SINGULARITY": the env prefix
	cache   *sifcache.Cache
}

// New finds the runtime, settles the scratch directory and opens the SIF
// cache there. Errors name the profile field at fault.
func New(cfg Config) (*Backend, error) {
	bin, err := findBinary(cfg.Binary)
	if err != nil {
		return nil, err
	}
	switch cfg.Network {
	case "":
		cfg.Network = "none"
	case "none", "host":
	default:
		return nil, fmt.Errorf("network: %q: want none or host (non-root users may only use none)", cfg.Network)
	}
	if cfg.Fakeroot && cfg.Network == "none" {
		return nil, errors.New("fakeroot: apptainer allows only its fakeroot network type with --fakeroot, not --network none: set network: host to use fakeroot")
	}
	if cfg.Image != "" {
		if err := sifcache.CheckRef(cfg.Image); err != nil {
			return nil, fmt.Errorf("image: %w", err)
		}
	}
	for i, b := range cfg.Binds {
		if err := checkBind(b); err != nil {
			return nil, fmt.Errorf("binds[%d]: %w", i, err)
		}
	}
	if cfg.Pwd != "" && !filepath.IsAbs(cfg.Pwd) {
		return nil, fmt.Errorf("pwd: %q must be an absolute path inside the container", cfg.Pwd)
	}
	if cfg.CacheMaxBytes == 0 {
		cfg.CacheMaxBytes = 50 << 30
	}
	if cfg.CacheMaxAge == 0 {
		cfg.CacheMaxAge = 30 * 24 * time.Hour
	}
	if cfg.PullTimeout == 0 {
		cfg.PullTimeout = 30 * time.Minute
	}
	scratch, err := scratchDir(cfg.Scratch, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.Scratch = scratch
	b := &Backend{cfg: cfg, binary: bin, flavour: "APPTAINER"}
	if strings.HasPrefix(filepath.Base(bin), "singularity") {
		b.flavour = "SINGULARITY"
	}
	b.cache, err = sifcache.New(sifcache.Config{
		Dir: filepath.Join(scratch, "sif"), MaxBytes: cfg.CacheMaxBytes, MaxImages: cfg.CacheMaxImages,
		MaxAge: cfg.CacheMaxAge, Pull: b.pull, Metrics: cfg.Metrics, Profile: cfg.Profile, Now: cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("scratch: %w", err)
	}
	return b, nil
}

// findBinary resolves the runtime: the configured one, else apptainer,
// else singularity, on PATH.
func findBinary(configured string) (string, error) {
	if configured != "" {
		if !filepath.IsAbs(configured) {
			p, err := local.LookPath(configured)
			if err != nil {
				return "", fmt.Errorf("binary: %q not found on PATH", configured)
			}
			return p, nil
		}
		if fi, err := os.Stat(configured); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("binary: %s is not an executable file", configured)
		}
		return configured, nil
	}
	for _, name := range []string{"apptainer", "singularity"} {
		if p, err := local.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("binary: neither apptainer nor singularity is on PATH: install Apptainer (https://apptainer.org/docs/admin/main/installation.html) or load its module (module load apptainer)")
}

// scratchDir settles the scratch directory and checks it is writable.
func scratchDir(configured, dataDir string) (string, error) {
	dir := configured
	if dir == "" {
		if u, err := user.Current(); err == nil && writable("/scratch") {
			dir = filepath.Join("/scratch", u.Username, "sandrun")
		}
	}
	if dir == "" {
		dir = dataDir
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("scratch: none configured, no writable /scratch, and no user cache directory: %w", err)
		}
		dir = filepath.Join(base, "sandrun")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("scratch: %w", err)
	}
	if !writable(dir) {
		return "", fmt.Errorf("scratch: %s is not writable", dir)
	}
	return dir, nil
}

// writable reports whether a file can be created in dir.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".sandrun-probe-")
	if err != nil {
		return false
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return true
}

// checkBind checks a bind "SRC[:DST[:ro|rw]]".
func checkBind(b string) error {
	parts := strings.Split(b, ":")
	if len(parts) > 3 || parts[0] == "" {
		return fmt.Errorf("%q: want SRC[:DST[:ro|rw]]", b)
	}
	if !filepath.IsAbs(parts[0]) {
		return fmt.Errorf("%q: the host path must be absolute", b)
	}
	if len(parts) >= 2 && !filepath.IsAbs(parts[1]) {
		return fmt.Errorf("%q: the container path must be absolute", b)
	}
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return fmt.Errorf("%q: the option must be ro or rw", b)
	}
	if strings.ContainsAny(b, ",") {
		return fmt.Errorf("%q: a comma would split the bind list", b)
	}
	return nil
}

// Kind implements backends.Backend.
func (b *Backend) Kind() string { return "singularity" }

// Capabilities implements backends.Backend: a contained job does not see
// the host's files, processes or (with network none) network; binds are
// host access (see HostAccess).
func (b *Backend) Capabilities() backends.Capabilities {
	return backends.Capabilities{Isolated: true, Container: []string{"image", "mounts", "network"}}
}

// Cache returns the backend's SIF cache (for `sandrun sif`).
func (b *Backend) Cache() *sifcache.Cache { return b.cache }

// Binary returns the runtime in use.
func (b *Backend) Binary() string { return b.binary }

// Validate runs `RUNTIME version` and checks the scratch directory.
func (b *Backend) Validate(ctx context.Context) error {
	var out strings.Builder
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := local.RunProcess(ctx, local.Process{Path: b.binary, Args: []string{"version"}, Env: b.baseEnv()},
		time.Second, backends.Output{Stdout: &out, Stderr: &out})
	if err != nil {
		return fmt.Errorf("binary: %s version: %w", b.binary, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("binary: %s version: exit %d: %s", b.binary, res.ExitCode, strings.TrimSpace(out.String()))
	}
	if !writable(b.cfg.Scratch) {
		return fmt.Errorf("scratch: %s is not writable", b.cfg.Scratch)
	}
	return nil
}

// baseEnv is the runtime's own environment: PATH, HOME and USER of the
// worker, and the runtime's cache and temporary directories on scratch.
func (b *Backend) baseEnv() []string {
	env := []string{
		"PATH=" + envOr("PATH", local.DefaultPath),
		"HOME=" + envOr("HOME", "/"),
		b.flavour + "_CACHEDIR=" + filepath.Join(b.cfg.Scratch, "runtime-cache"),
		b.flavour + "_TMPDIR=" + filepath.Join(b.cfg.Scratch, "tmp"),
	}
	if u := os.Getenv("USER"); u != "" {
		env = append(env, "USER="+u)
	}
	return env
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// pull fetches ref into out with `RUNTIME pull --force OUT REF`.
func (b *Backend) pull(ctx context.Context, out, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.PullTimeout)
	defer cancel()
	for _, d := range []string{"runtime-cache", "tmp"} {
		if err := os.MkdirAll(filepath.Join(b.cfg.Scratch, d), 0o750); err != nil {
			return err
		}
	}
	var log strings.Builder
	res, err := local.RunProcess(ctx, local.Process{Path: b.binary, Args: []string{"pull", "--force", out, ref}, Env: b.baseEnv()},
		5*time.Second, backends.Output{Stdout: &log, Stderr: &log})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(log.String())
		if len(msg) > 1000 {
			msg = msg[len(msg)-1000:]
		}
		return fmt.Errorf("%s pull exited %d: %s", filepath.Base(b.binary), res.ExitCode, msg)
	}
	return nil
}

// Describe reports the runtime's version, the scratch directory and the
// SIF cache (for `sandrun doctor`).
func (b *Backend) Describe(ctx context.Context) (string, error) {
	var out strings.Builder
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := local.RunProcess(ctx, local.Process{Path: b.binary, Args: []string{"version"}, Env: b.baseEnv()},
		time.Second, backends.Output{Stdout: &out, Stderr: &out}); err != nil {
		return "", fmt.Errorf("binary: %w", err)
	}
	entries, err := b.cache.List()
	if err != nil {
		return "", fmt.Errorf("scratch: %w", err)
	}
	var bytes int64
	for _, e := range entries {
		bytes += e.Size
	}
	return fmt.Sprintf("%s (%s), scratch %s, SIF cache %d image(s) %d bytes of %d", strings.TrimSpace(out.String()), b.binary,
		b.cfg.Scratch, len(entries), bytes, b.cfg.CacheMaxBytes), nil
}

var _ backends.Backend = (*Backend)(nil)
