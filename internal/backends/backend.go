// Package backends defines the contract between the worker and the places
// where a job's command runs (a local process group, a container, a remote
// host, a cloud sandbox). One package per backend implements it; the
// conformance suite in backendtest checks every implementation the same way.
package backends

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sandrun/sandrun/internal/container"
)

// Backend runs one job command somewhere.
//
// Lifecycle:
//
//  1. The worker builds every configured backend at start-up and calls
//     Validate once. A backend that cannot work (binary missing, daemon
//     unreachable, credentials absent) returns an error that names the
//     setting at fault; the worker refuses to start. Validate must be
//     cheap and idempotent; `sandrun doctor` calls it too.
//  2. Run is called once per job attempt and may be called concurrently
//     from many goroutines. It starts the command, copies its output to
//     out as it is produced, and returns when the command has ended.
//  3. When ctx is done (timeout, cancel, lease loss or shutdown) Run must
//     stop the WHOLE workload — process group, container, remote process
//     group, sandbox — not just the client that launched it: first
//     gracefully, then by force once spec.KillGrace has passed. It returns
//     promptly after that, with whatever Result it has and an error that
//     wraps context.Cause(ctx).
//
// Run returns a nil error when the command ran to completion, whatever its
// exit code. A non-nil error that does not wrap context.Cause(ctx) is an
// infrastructure failure (the command may or may not have run); the worker
// treats it as retryable unless it wraps ErrPermanent.
type Backend interface {
	// Kind is the backend's implementation name ("local", "docker", ...).
	Kind() string
	// Validate checks configuration and reachability. See the lifecycle above.
	Validate(ctx context.Context) error
	// Run runs spec and copies its output to out. See the lifecycle above.
	Run(ctx context.Context, spec Spec, out Output) (Result, error)
	// Capabilities reports the optional features this backend supports.
	Capabilities() Capabilities
}

// Spec is one attempt of a job, as a backend sees it.
type Spec struct {
	// JobID, Attempt and Worker identify the run (for labels, names,
	// logs and orphan reaping).
	JobID   string
	Attempt int
	Worker  string
	// Deployment names the sandrun deployment the job belongs to; it
	// scopes orphan reaping when deployments share an engine.
	Deployment string
	// Command is a shell command line, run with `sh -c`.
	Command string
	// Dir is the working directory; empty means the backend's default.
	Dir string
	// Env is the job's environment. The backend adds nothing from the
	// worker's own environment except what its documentation says.
	Env map[string]string
	// KillGrace is how long the workload has to exit after the graceful
	// stop signal before it is killed by force. Zero means DefaultKillGrace.
	KillGrace time.Duration
	// Container holds the job's container options (container backends).
	Container *ContainerOptions
	// Session, when set, asks for a persistent workload shared by the
	// jobs of the same key (backends with PersistentSessions).
	Session string
	// Workspace, when set, names the durable filesystem the job works in
	// (backends with Workspaces): made on first use, kept after the job,
	// its working directory unless Dir says otherwise (a relative Dir is
	// taken inside it). The worker runs one job of a workspace at a time.
	Workspace string
	// StartGate, when set, is asked right before the workload starts —
	// after everything that can take time is ready — and an error from it
	// stops the run before anything starts (Run returns it). The worker
	// checks there that its lease still holds: a worker frozen between an
	// earlier check and the start would otherwise start a lost attempt's
	// process after another attempt took over. Backends that do not call
	// it leave the worker's own check, made just before Run, as the gate.
	//
	// until, when not zero, is the moment past which nothing may start:
	// a freeze can also fall between the question and the start, so a
	// backend that can (local, apptainer) has the started process check
	// its own clock against it before it runs the workload.
	StartGate func() (until time.Time, err error) `json:"-"`
}

// DefaultKillGrace is used when Spec.KillGrace is zero.
const DefaultKillGrace = 5 * time.Second

// Grace returns the kill grace period to use for s.
func (s Spec) Grace() time.Duration {
	if s.KillGrace <= 0 {
		return DefaultKillGrace
	}
	return s.KillGrace
}

// Output receives the command's output as it is produced. Writers are
// called from one goroutine each; Stdout and Stderr may be written
// concurrently with each other.
type Output struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Result is what a backend knows about a finished (or stopped) command.
type Result struct {
	// ExitCode is the command's exit status, or -1 when it was ended by a
	// signal or never reported one.
	ExitCode int
	// Signal names the signal that ended the command ("SIGKILL"), if any.
	Signal string
	// StartedAt and FinishedAt bound the run on the backend's clock.
	StartedAt  time.Time
	FinishedAt time.Time
	// UserCPU and SysCPU are CPU time used, when the backend can tell.
	UserCPU time.Duration
	SysCPU  time.Duration
	// MaxRSSBytes is the peak resident set size, when the backend can tell.
	MaxRSSBytes int64
}

// Wall returns the run's wall-clock duration.
func (r Result) Wall() time.Duration {
	if r.FinishedAt.IsZero() || r.StartedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// Capabilities lists optional features. The zero value means "none of
// them", which is what a backend that embeds nothing reports.
type Capabilities struct {
	// Isolated: the workload cannot touch the worker's host (a container
	// without host mounts, a remote sandbox). The approval policy skips
	// its host-only rules for isolated backends — and only those: no
	// backend skips the policy.
	Isolated bool
	// ResourceLimits: the backend enforces the CPU and memory limits its
	// profile sets: a job that needs more memory than the limit does not
	// succeed (it is killed, or its allocations fail), whatever it runs.
	ResourceLimits bool
	// PersistentSessions: the workload can outlive one Run, shared by the
	// jobs of one Spec.Session key.
	PersistentSessions bool
	// Container lists the fields of Spec.Container (by their JSON names:
	// "image", "mounts", "network", ...) the backend honours; nil: it
	// runs no container a job can shape. A backend may still refuse a
	// value of a field it lists (a network its profile does not allow).
	Container []string
	// ResumableOutput: Run survives a broken link to where the job runs:
	// it reconnects and resumes the output where it left off, with no
	// byte lost or repeated, and still reports the job's exit code.
	ResumableOutput bool
	// ResourceUsage: Result carries CPU time and peak RSS.
	ResourceUsage bool
	// Workspaces: the backend keeps Spec.Workspace between jobs (and
	// removes it through WorkspaceRemover, if it implements it).
	Workspaces bool
	// Shell is the shell that runs `Shell -c Command` (a path or a name);
	// empty means /bin/sh. The approval policy parses commands in its
	// dialect.
	Shell string
}

// Unsupported names the first thing spec asks for that a backend with
// these capabilities cannot do — "session", "workspace" or a container
// option such as "container.image" — or returns "". The worker refuses
// such a job with a permanent error instead of running it without what
// it asked for.
func (c Capabilities) Unsupported(spec Spec) string {
	switch {
	case spec.Session != "" && !c.PersistentSessions:
		return "session"
	case spec.Workspace != "" && !c.Workspaces:
		return "workspace"
	}
	if spec.Container != nil {
		for _, f := range spec.Container.Fields() {
			if !slices.Contains(c.Container, f) {
				return "container." + f
			}
		}
	}
	return ""
}

// ErrPermanent marks a backend error that retrying cannot fix (bad image,
// bad configuration for this job). Wrap it: fmt.Errorf("...: %w", ErrPermanent).
var ErrPermanent = errors.New("permanent backend error")

// ErrUnavailable marks a backend that cannot take work right now (daemon
// down, remote unreachable); the worker retries the job later.
var ErrUnavailable = errors.New("backend unavailable")

// Registry maps profile names (as jobs name them in spec.backend) to
// configured backends. It is built explicitly in cmd/*; there is no
// global registration.
type Registry struct {
	profiles map[string]Backend
	order    []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{profiles: make(map[string]Backend)}
}

// Add registers b under profile. It returns an error for an empty or
// duplicate profile name.
func (r *Registry) Add(profile string, b Backend) error {
	if profile == "" {
		return errors.New("backends: empty profile name")
	}
	if _, ok := r.profiles[profile]; ok {
		return errors.New("backends: duplicate profile " + profile)
	}
	r.profiles[profile] = b
	r.order = append(r.order, profile)
	return nil
}

// Get returns the backend for profile.
func (r *Registry) Get(profile string) (Backend, bool) {
	b, ok := r.profiles[profile]
	return b, ok
}

// Profiles returns the registered profile names in registration order.
func (r *Registry) Profiles() []string {
	return append([]string(nil), r.order...)
}

// Close closes every backend that holds resources (implements io.Closer).
func (r *Registry) Close() error {
	var errs []error
	for _, p := range r.order {
		if c, ok := r.profiles[p].(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// ValidateAll runs Validate on every backend and joins the errors, each
// prefixed with its profile name.
func (r *Registry) ValidateAll(ctx context.Context) error {
	var errs []error
	for _, p := range r.order {
		if err := r.profiles[p].Validate(ctx); err != nil {
			errs = append(errs, fmt.Errorf("backends.%s: %w", p, err)) // errors.Is(err, ErrUnavailable) still holds
		}
	}
	return errors.Join(errs...)
}

// ContainerOptions are a job spec's container options (see
// container.Options): the job model and the backends share the type
// without the model importing the backends.
type ContainerOptions = container.Options

// AllContainerOptions names every container option, for
// Capabilities.Container of a backend that honours them all.
var AllContainerOptions = container.AllFields

// HostAccessChecker is implemented by backends whose isolation depends on
// the job (containers with mounts). HostAccess returns, for spec, every
// reason the workload could reach the host, or none. The worker then
// applies the policy's host-only rules, and refuses the job unless the
// backend's profile allows host access.
type HostAccessChecker interface {
	HostAccess(ctx context.Context, spec Spec) (reasons []string, allowed bool, err error)
}

// Finisher is implemented by backends that keep an attempt's state after
// Run returns (an SSH run directory with the output files). The worker
// calls Finished once the attempt's outcome is recorded — the result
// committed, or the retry recorded — saying whether it succeeded; the
// backend may then clean up. Errors are only logged.
type Finisher interface {
	Finished(ctx context.Context, spec Spec, succeeded bool) error
}

// OrphanReaper is implemented by backends whose workloads can outlive a
// worker that dies (containers keep running after kill -9). ReapOrphans
// removes every workload of the deployment whose job attempt live reports
// as not live, and returns how many it removed. Workers call it at start and
// periodically.
type OrphanReaper interface {
	ReapOrphans(ctx context.Context, deployment string, live func(jobID string, attempt int, worker string) bool) (int, error)
}

// WorkspaceRemover is implemented by backends with Workspaces that can
// delete one: deployment and name are Spec.Deployment's and
// Spec.Workspace's.
type WorkspaceRemover interface {
	RemoveWorkspace(ctx context.Context, deployment, name string) error
}

// Describer is implemented by backends that can say, after Validate, how
// they resolved their configuration (which credentials, which runtime
// version). Workers publish it with their registration, and `sandrun
// doctor` prints it. It never includes a secret.
type Describer interface {
	Describe(ctx context.Context) (string, error)
}
