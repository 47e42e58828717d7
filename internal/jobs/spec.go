// Package jobs defines the job spec, its validation, the lifecycle records
// kept in JetStream, and the JetStream layout itself.
package jobs

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/sandrun/sandrun/internal/container"
)

// Origin says who asked for a job; the approval policy keys its defaults
// and the worker ceiling on it.
type Origin string

// Origins.
const (
	OriginManual   Origin = "manual"
	OriginCron     Origin = "cron"
	OriginBatch    Origin = "batch"
	OriginSubagent Origin = "subagent"
)

// Limits on a spec. They keep one job from filling a KV value or a NATS
// message, and they are part of the API: a spec over them is rejected.
const (
	MaxSpecBytes    = 256 << 10 // encoded spec
	MaxCommandBytes = 128 << 10
	MaxEnvVars      = 256
	MaxLabels       = 64
	MaxAttemptsCap  = 100
	MaxTimeout      = 7 * 24 * time.Hour
)

// Defaults filled by Spec.WithDefaults.
const (
	DefaultQueue       = "default"
	DefaultBackend     = "local"
	DefaultTimeout     = time.Hour
	DefaultMaxAttempts = 3
)

// DefaultBackoff is the retry backoff of a spec that sets none.
var DefaultBackoff = Backoff{Initial: Duration(2 * time.Second), Max: Duration(5 * time.Minute), Factor: 2, Jitter: 0.2}

// Spec is a job as submitted. Its JSON form (and the YAML form, which is
// decoded through the same rules) uses the json tags; durations are Go
// duration strings ("90s", "1h30m").
type Spec struct {
	// ID is a sortable ULID, assigned at submit when empty. A given ID is
	// accepted once: resubmitting it is an error, not a second job.
	ID string `json:"id,omitempty"`
	// Queue selects the workers that may claim the job.
	Queue string `json:"queue,omitempty"`
	// Backend is a profile name from the worker's configuration.
	Backend string `json:"backend,omitempty"`
	// Command is a shell command line, run with `sh -c`.
	Command string `json:"command"`
	// Cwd is the working directory on the backend.
	Cwd string `json:"cwd,omitempty"`
	// Env is the job's environment.
	Env map[string]string `json:"env,omitempty"`
	// SecretEnv lists keys of Env whose values are secret: they are
	// redacted wherever a spec is shown.
	SecretEnv []string `json:"secret_env,omitempty"`
	// ForwardEnv names variables the worker supplies from its own
	// environment or files, as the job's backend profile lists them
	// (forward_env): the job names them, never holds their values.
	ForwardEnv []string `json:"forward_env,omitempty"`
	// Timeout bounds one attempt's run time.
	Timeout Duration `json:"timeout,omitempty"`
	// Origin: manual, cron, batch or subagent.
	Origin Origin `json:"origin,omitempty"`
	// Approval is the requested approval mode (deny, approve, allowlist);
	// empty means the origin's default.
	Approval string `json:"approval,omitempty"`
	// MaxAttempts bounds attempts, counted at claim (so a job that crashes
	// its worker is bounded too).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Retry is the backoff between attempts.
	Retry *Backoff `json:"retry,omitempty"`
	// Container asks a container backend for mounts, network or more;
	// whatever reaches the host makes the job host access (refused unless
	// the backend profile allows it).
	Container *container.Options `json:"container,omitempty"`
	// Session runs the job in the backend's persistent session of this
	// key (a long-lived container shared by the jobs of the same key).
	Session string `json:"session,omitempty"`
	// Workspace names a durable filesystem of the submitter's that
	// outlives the job and the worker: the job's working directory (a
	// directory on local and ssh, a named volume on docker). Jobs of one
	// workspace run one at a time, in the order they were submitted.
	Workspace string `json:"workspace,omitempty"`
	// RemoveWorkspace makes the job remove Workspace's storage instead of
	// running a command (`sandrun workspace rm`), after the workspace's
	// jobs submitted before it.
	RemoveWorkspace bool `json:"remove_workspace,omitempty"`
	// Labels are free-form key/values for people and tools.
	Labels map[string]string `json:"labels,omitempty"`
	// SubmittedAt is set by the submitter.
	SubmittedAt time.Time `json:"submitted_at,omitzero"`
}

// Backoff is an exponential backoff with jitter.
type Backoff struct {
	Initial Duration `json:"initial,omitempty"`
	Max     Duration `json:"max,omitempty"`
	Factor  float64  `json:"factor,omitempty"`
	// Jitter is the fraction (0..1) of each delay that is randomised.
	Jitter float64 `json:"jitter,omitempty"`
	// NoRetryExitCodes are exit codes that end the job at once as failed.
	NoRetryExitCodes []int `json:"no_retry_exit_codes,omitempty"`
}

// Delay returns the wait before attempt next (2 for the first retry), with
// rnd in [0,1) supplying the jitter.
func (b Backoff) Delay(next int, rnd float64) time.Duration {
	d := float64(b.Initial)
	for i := 2; i < next; i++ {
		d *= b.Factor
		if d >= float64(b.Max) {
			d = float64(b.Max)
			break
		}
	}
	d = min(d, float64(b.Max))
	d -= d * b.Jitter * rnd
	return time.Duration(d)
}

// Retryable reports whether exit code may be retried.
func (b Backoff) Retryable(exitCode int) bool {
	return !slices.Contains(b.NoRetryExitCodes, exitCode)
}

var (
	idRE    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}(\.[0-9]{1,9})?$`) // .N: a batch item
	queueRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	envRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ValidID reports whether id is a job ID Validate accepts.
func ValidID(id string) bool { return idRE.MatchString(id) }

// WithDefaults returns a copy of s with empty fields filled. The ID is not
// assigned here (see NewID); maps and slices are copied.
func (s Spec) WithDefaults() Spec {
	c := s
	c.Env = maps.Clone(s.Env)
	c.Labels = maps.Clone(s.Labels)
	c.SecretEnv = slices.Clone(s.SecretEnv)
	c.ForwardEnv = slices.Clone(s.ForwardEnv)
	if c.Queue == "" {
		c.Queue = DefaultQueue
	}
	if c.Backend == "" {
		c.Backend = DefaultBackend
	}
	if c.Timeout == 0 {
		c.Timeout = Duration(DefaultTimeout)
	}
	if c.Origin == "" {
		c.Origin = OriginManual
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	b := DefaultBackoff
	if s.Retry != nil {
		b = *s.Retry
		b.NoRetryExitCodes = slices.Clone(s.Retry.NoRetryExitCodes)
		if b.Initial == 0 {
			b.Initial = DefaultBackoff.Initial
		}
		if b.Max == 0 {
			b.Max = max(DefaultBackoff.Max, b.Initial)
		}
		if b.Factor == 0 {
			b.Factor = DefaultBackoff.Factor
		}
	}
	c.Retry = &b
	return c
}

// Validate checks a spec that has been through WithDefaults. Every error
// is a *FieldError naming the field at fault.
func (s Spec) Validate() error {
	switch {
	case s.ID != "" && !idRE.MatchString(s.ID):
		return fieldErr("id", "must be 1-128 characters of A-Z a-z 0-9 _ - (a batch item adds .INDEX), got %q", s.ID)
	case !queueRE.MatchString(s.Queue):
		return fieldErr("queue", "must be 1-64 characters of a-z 0-9 _ -, got %q", s.Queue)
	case !nameRE.MatchString(s.Backend):
		return fieldErr("backend", "must be a profile name (1-64 characters of A-Z a-z 0-9 _ -), got %q", s.Backend)
	case isBlank(s.Command):
		return fieldErr("command", "must not be empty")
	case len(s.Command) > MaxCommandBytes:
		return fieldErr("command", "is %d bytes, limit %d", len(s.Command), MaxCommandBytes)
	case s.Timeout <= 0 || s.Timeout.D() > MaxTimeout:
		return fieldErr("timeout", "must be > 0 and <= %s, got %s", MaxTimeout, s.Timeout)
	case s.MaxAttempts < 1 || s.MaxAttempts > MaxAttemptsCap:
		return fieldErr("max_attempts", "must be 1..%d, got %d", MaxAttemptsCap, s.MaxAttempts)
	case len(s.Env) > MaxEnvVars:
		return fieldErr("env", "has %d variables, limit %d", len(s.Env), MaxEnvVars)
	case s.Session != "" && !nameRE.MatchString(s.Session):
		return fieldErr("session", "must be 1-64 characters of A-Z a-z 0-9 _ -, got %q", s.Session)
	case s.Workspace != "" && !nameRE.MatchString(s.Workspace):
		return fieldErr("workspace", "must be 1-64 characters of A-Z a-z 0-9 _ -, got %q", s.Workspace)
	case s.RemoveWorkspace && s.Workspace == "":
		return fieldErr("remove_workspace", "needs workspace")
	case s.Workspace != "" && s.Session != "":
		return fieldErr("workspace", "and session cannot be combined: a workspace is the durable form of a session")
	case len(s.Labels) > MaxLabels:
		return fieldErr("labels", "has %d labels, limit %d", len(s.Labels), MaxLabels)
	}
	switch s.Origin {
	case OriginManual, OriginCron, OriginBatch, OriginSubagent:
	default:
		return fieldErr("origin", "must be one of manual, cron, batch, subagent; got %q", s.Origin)
	}
	switch s.Approval {
	case "", "deny", "approve", "allowlist":
	default:
		return fieldErr("approval", "must be one of deny, approve, allowlist; got %q", s.Approval)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !envRE.MatchString(k) {
			return fieldErr("env."+k, "is not a valid variable name")
		}
	}
	for i, k := range s.SecretEnv {
		if _, ok := s.Env[k]; !ok {
			return fieldErr(fmt.Sprintf("secret_env[%d]", i), "names %q, which is not in env", k)
		}
	}
	for i, k := range s.ForwardEnv {
		switch {
		case !envRE.MatchString(k):
			return fieldErr(fmt.Sprintf("forward_env[%d]", i), "%q is not a valid variable name", k)
		case slices.Contains(s.ForwardEnv[:i], k):
			return fieldErr(fmt.Sprintf("forward_env[%d]", i), "names %q twice", k)
		}
		if _, ok := s.Env[k]; ok {
			return fieldErr(fmt.Sprintf("forward_env[%d]", i), "names %q, which env sets too (the worker supplies it)", k)
		}
	}
	if len(s.ForwardEnv) > MaxLabels {
		return fieldErr("forward_env", "has %d names, limit %d", len(s.ForwardEnv), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if !nameRE.MatchString(k) {
			return fieldErr("labels."+k, "key must be 1-64 characters of A-Z a-z 0-9 _ -")
		}
	}
	if s.Retry != nil {
		b := s.Retry
		switch {
		case b.Initial < 0:
			return fieldErr("retry.initial", "must be >= 0, got %s", b.Initial)
		case b.Max < b.Initial:
			return fieldErr("retry.max", "must be >= retry.initial (%s), got %s", b.Initial, b.Max)
		case b.Factor < 1 || b.Factor > 100:
			return fieldErr("retry.factor", "must be 1..100, got %g", b.Factor)
		case b.Jitter < 0 || b.Jitter > 1:
			return fieldErr("retry.jitter", "must be 0..1, got %g", b.Jitter)
		}
	}
	if err := s.validText(); err != nil {
		return err
	}
	return s.validSize()
}

// validText refuses text that is not UTF-8: JSON would carry it as U+FFFD,
// and a different command than the one written would run.
func (s Spec) validText() error {
	switch {
	case !utf8.ValidString(s.Command):
		return fieldErr("command", "is not valid UTF-8")
	case !utf8.ValidString(s.Cwd):
		return fieldErr("cwd", "is not valid UTF-8")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !utf8.ValidString(s.Env[k]) {
			return fieldErr("env."+k, "is not valid UTF-8")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		if !utf8.ValidString(s.Labels[k]) {
			return fieldErr("labels."+k, "is not valid UTF-8")
		}
	}
	return nil
}

// validSize refuses a spec whose encoding is over MaxSpecBytes (a worker
// would refuse its message), naming the field that weighs most.
func (s Spec) validSize() error {
	data, err := json.Marshal(s)
	if err != nil {
		return fieldErr("spec", "does not encode: %v", err)
	}
	if len(data) <= MaxSpecBytes {
		return nil
	}
	field, most := "command", len(s.Command)
	weigh := func(name string, v any) {
		if b, err := json.Marshal(v); err == nil && len(b) > most {
			field, most = name, len(b)
		}
	}
	weigh("env", s.Env)
	weigh("labels", s.Labels)
	weigh("container", s.Container)
	return fieldErr(field, "makes the encoded spec %d bytes, limit %d", len(data), MaxSpecBytes)
}

// LogValue implements slog.LogValuer: a spec logged as a value shows its
// identity, never its environment, whatever the handler.
func (s Spec) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", s.ID), slog.String("queue", s.Queue), slog.String("backend", s.Backend),
		slog.String("origin", string(s.Origin)), slog.Int("env_vars", len(s.Env)), slog.Int("secret_env_vars", len(s.SecretEnv)))
}

// Redacted returns a copy of s whose secret env values are replaced, for
// showing to people and writing to events.
func (s Spec) Redacted() Spec {
	if len(s.SecretEnv) == 0 {
		return s
	}
	c := s
	c.Env = maps.Clone(s.Env)
	for _, k := range s.SecretEnv {
		if _, ok := c.Env[k]; ok {
			c.Env[k] = Redacted
		}
	}
	return c
}

// Redacted replaces secret values wherever they would be shown.
const Redacted = "[REDACTED]"

func isBlank(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}
