package singularity

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/sifcache"
)

// envKeyRE is what a variable name passed into the container may be.
var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// invocation is the runtime command line and environment of one job.
type invocation struct {
	args []string
	env  []string
}

// image returns the image a job runs: its container.image, else the
// profile's.
func (b *Backend) image(spec backends.Spec) (string, error) {
	img := b.cfg.Image
	if spec.Container != nil && spec.Container.Image != "" {
		img = spec.Container.Image
		if err := sifcache.CheckRef(img); err != nil {
			return "", fmt.Errorf("%w: container.image: %w", backends.ErrPermanent, err)
		}
	}
	if img == "" {
		return "", fmt.Errorf("%w: no image: set the profile's image or the job's container.image", backends.ErrPermanent)
	}
	return img, nil
}

// binds returns the profile's binds plus the job's container.mounts,
// checked; the job's options the runtime cannot honour are permanent
// errors naming the field.
func (b *Backend) binds(spec backends.Spec) ([]string, error) {
	out := append([]string(nil), b.cfg.Binds...)
	o := spec.Container
	if o == nil {
		return out, nil
	}
	for i, m := range o.Mounts {
		if err := checkBind(m); err != nil {
			return nil, fmt.Errorf("%w: container.mounts[%d]: %w", backends.ErrPermanent, i, err)
		}
		out = append(out, m)
	}
	unsupported := map[string]bool{
		"container.privileged": o.Privileged, "container.pid_mode": o.PidMode != "",
		"container.ipc_mode": o.IpcMode != "", "container.uts_mode": o.UTSMode != "",
		"container.devices": len(o.Devices) > 0, "container.cap_add": len(o.CapAdd) > 0,
	}
	var asked []string
	for f, set := range unsupported {
		if set {
			asked = append(asked, f)
		}
	}
	if len(asked) > 0 {
		slices.Sort(asked)
		return nil, fmt.Errorf("%w: %s: not supported by the singularity backend", backends.ErrPermanent, strings.Join(asked, ", "))
	}
	return out, nil
}

// network returns the job's network mode: its container.network, else
// the profile's.
func (b *Backend) network(spec backends.Spec) (string, error) {
	n := b.cfg.Network
	if spec.Container != nil && spec.Container.Network != "" {
		n = spec.Container.Network
	}
	if n != "none" && n != "host" {
		return "", fmt.Errorf("%w: container.network: %q: want none or host", backends.ErrPermanent, n)
	}
	return n, nil
}

// invocation builds the runtime command for spec on the SIF at image.
// The flags, in this order: --containall --no-home --cleanenv, then
// --net --network none, --writable-tmpfs, --fakeroot, each --bind, --pwd.
// The job's environment is FLAVOUR ENV_K=V in the runtime's environment.
func (b *Backend) invocation(spec backends.Spec, image string) (invocation, error) {
	if strings.ContainsRune(spec.Command, 0) {
		return invocation{}, fmt.Errorf("%w: command: contains a NUL byte", backends.ErrPermanent)
	}
	binds, err := b.binds(spec)
	if err != nil {
		return invocation{}, err
	}
	netMode, err := b.network(spec)
	if err != nil {
		return invocation{}, err
	}
	args := []string{"exec", "--containall", "--no-home", "--cleanenv"}
	if netMode == "none" {
		args = append(args, "--net", "--network", "none")
	}
	if b.cfg.WritableTmpfs {
		args = append(args, "--writable-tmpfs")
	}
	if b.cfg.Fakeroot {
		args = append(args, "--fakeroot")
	}
	for _, bd := range binds {
		args = append(args, "--bind", bd)
	}
	pwd := b.cfg.Pwd
	if spec.Dir != "" {
		pwd = spec.Dir
	}
	if pwd != "" {
		if !filepath.IsAbs(pwd) {
			return invocation{}, fmt.Errorf("%w: cwd: %q must be an absolute path inside the container", backends.ErrPermanent, pwd)
		}
		args = append(args, "--pwd", pwd)
	}
	args = append(args, image, "/bin/sh", "-c", spec.Command)
	env := b.baseEnv()
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		if !envKeyRE.MatchString(k) {
			return invocation{}, fmt.Errorf("%w: env: %q is not a variable name", backends.ErrPermanent, k)
		}
		if strings.ContainsRune(spec.Env[k], 0) {
			return invocation{}, fmt.Errorf("%w: env: %s contains a NUL byte", backends.ErrPermanent, k)
		}
		env = append(env, b.flavour+"ENV_"+k+"="+spec.Env[k])
	}
	return invocation{args: args, env: env}, nil
}

// HostAccess implements backends.HostAccessChecker: every bind of a host
// path, the profile's or the job's, reaches the host.
func (b *Backend) HostAccess(_ context.Context, spec backends.Spec) ([]string, bool, error) {
	binds, err := b.binds(spec)
	if err != nil {
		return nil, false, err
	}
	var reasons []string
	for _, bd := range binds {
		src := strings.SplitN(bd, ":", 2)[0]
		reasons = append(reasons, "bind mount of host path "+src)
	}
	if n, err := b.network(spec); err == nil && n == "host" {
		reasons = append(reasons, "the host's network")
	}
	return reasons, b.cfg.AllowHostAccess, nil
}

// Run implements backends.Backend.
func (b *Backend) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	res := backends.Result{ExitCode: -1}
	if ctx.Err() != nil {
		return res, fmt.Errorf("singularity: not started: %w", context.Cause(ctx))
	}
	if spec.Session != "" {
		return res, fmt.Errorf("%w: session: not supported by the singularity backend", backends.ErrPermanent)
	}
	ref, err := b.image(spec)
	if err != nil {
		return res, err
	}
	// Check what can be checked before a pull.
	if _, err := b.invocation(spec, ref); err != nil {
		return res, err
	}
	path, release, err := b.cache.Acquire(ctx, ref)
	if err != nil {
		if ctx.Err() != nil {
			return res, fmt.Errorf("singularity: image: %w", context.Cause(ctx))
		}
		if sifcache.IsLocal(ref) {
			err = fmt.Errorf("%w: %w", backends.ErrPermanent, err)
		}
		return res, fmt.Errorf("singularity: image: %w", err)
	}
	defer release()
	inv, err := b.invocation(spec, path)
	if err != nil {
		return res, err
	}
	stderr := &headWriter{w: out.Stderr}
	res, err = local.RunProcess(ctx, local.Process{Path: b.binary, Args: inv.args, Env: inv.env, StartGate: spec.StartGate},
		spec.Grace(), backends.Output{Stdout: out.Stdout, Stderr: stderr})
	if err != nil {
		// Stopped by ctx: the runtime reports the payload's signal as
		// 128+N; say which signal it was.
		if ctx.Err() != nil && res.Signal == "" && res.ExitCode > 128 && res.ExitCode < 128+65 {
			res.Signal, res.ExitCode = unix.SignalName(syscall.Signal(res.ExitCode-128)), -1
		}
		return res, fmt.Errorf("singularity: %w", err)
	}
	// The runtime's own failures: FATAL (exit 255) after any WARNING
	// lines, and its command-line errors (exit 1), which are ours.
	runtime := filepath.Base(b.binary)
	for _, line := range strings.Split(stderr.head(), "\n") {
		switch {
		case res.ExitCode == 255 && strings.HasPrefix(line, "FATAL:"):
			return res, fmt.Errorf("singularity: %s failed: %s", runtime, strings.TrimSpace(line))
		case res.ExitCode == 1 && strings.HasPrefix(line, "Error for command"):
			return res, fmt.Errorf("%w: singularity: %s refused its command line: %s", backends.ErrPermanent, runtime, strings.TrimSpace(line))
		case strings.HasPrefix(line, "WARNING:") || strings.HasPrefix(line, "INFO:"):
			continue
		}
		break
	}
	return res, nil
}

// headWriter passes writes through and keeps the first bytes written, to
// tell the runtime's own fatal errors (exit 255, "FATAL:") from a job's.
type headWriter struct {
	w  io.Writer
	mu sync.Mutex
	b  []byte
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	if n := 2048 - len(h.b); n > 0 {
		h.b = append(h.b, p[:min(n, len(p))]...)
	}
	h.mu.Unlock()
	if h.w == nil {
		return len(p), nil
	}
	return h.w.Write(p)
}

func (h *headWriter) head() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}

var _ backends.HostAccessChecker = (*Backend)(nil)
