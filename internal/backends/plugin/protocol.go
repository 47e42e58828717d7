package plugin

import (
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// Protocol is the version of the plugin protocol this package speaks. The
// host announces it in the session line, the plugin its own in its hello;
// any other version is a protocol error. docs/plugins.md is the
// protocol's specification. Version 2 signs the plugin's lines (auth.go);
// version 1 plugins, which do not, are refused with a clear error.
const Protocol = 2

// ProtocolEnv is set in every plugin's environment to the protocol version
// the host speaks, so that a plugin can tell it was started by sandrun
// (and not by hand) and, one day, pick a version.
const ProtocolEnv = "SANDRUN_PLUGIN_PROTOCOL"

// Message types. Requests go from the host to the plugin on its stdin,
// one JSON object per line; events from the plugin to the host on its
// stdout, one signed JSON object per line.
const (
	typeSession  = "session"  // request: always the host's first line: the session key
	typeValidate = "validate" // request: check configuration and reachability
	typeRun      = "run"      // request: run one job attempt
	typeCancel   = "cancel"   // request: stop the run, gracefully or by force

	typeHello   = "hello"   // event: always the plugin's first line
	typeValid   = "valid"   // event: the validate request succeeded
	typeStarted = "started" // event: the workload runs
	typeStdout  = "stdout"  // event: a chunk of the workload's stdout
	typeStderr  = "stderr"  // event: a chunk of the workload's stderr
	typeExit    = "exit"    // event: the workload ended; the run's last event
	typeError   = "error"   // event: the request failed; its last event
)

// validateRequest asks the plugin to check that it can work.
type validateRequest struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// runRequest asks the plugin to run one job attempt.
type runRequest struct {
	Type string  `json:"type"`
	ID   string  `json:"id"`
	Spec runSpec `json:"spec"`
}

// runSpec is backends.Spec as plugins see it. Container options are not
// passed: the protocol has no host-access check (see docs/plugins.md).
type runSpec struct {
	JobID       string            `json:"job_id"`
	Attempt     int               `json:"attempt"`
	Worker      string            `json:"worker"`
	Deployment  string            `json:"deployment"`
	Command     string            `json:"command"`
	Dir         string            `json:"dir"`
	Env         map[string]string `json:"env"`
	KillGraceMS int64             `json:"kill_grace_ms"`
	Session     string            `json:"session"`
}

// newRunRequest converts spec for request id. Env is never null.
func newRunRequest(id string, spec backends.Spec) runRequest {
	env := spec.Env
	if env == nil {
		env = map[string]string{}
	}
	return runRequest{Type: typeRun, ID: id, Spec: runSpec{
		JobID: spec.JobID, Attempt: spec.Attempt, Worker: spec.Worker, Deployment: spec.Deployment,
		Command: spec.Command, Dir: spec.Dir, Env: env,
		KillGraceMS: spec.Grace().Milliseconds(), Session: spec.Session,
	}}
}

// cancelRequest asks the plugin to stop the run: gracefully, or by force.
type cancelRequest struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Force bool   `json:"force"`
}

// event is any message from the plugin: the fields of every type in one
// struct, each used by the types its comment names. Unknown fields are
// ignored, so that plugins may carry more.
type event struct {
	Type string `json:"type"`
	ID   string `json:"id"` // All but hello.

	// hello
	Protocol     int          `json:"protocol"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Capabilities capabilities `json:"capabilities"`

	// stdout, stderr: base64 (standard, padded) in JSON.
	Data []byte `json:"data"`

	// started, exit
	StartedAt *time.Time `json:"started_at"`
	// exit
	FinishedAt  *time.Time `json:"finished_at"`
	ExitCode    *int       `json:"exit_code"` // Required.
	Signal      string     `json:"signal"`
	UserCPUNS   int64      `json:"user_cpu_ns"`
	SysCPUNS    int64      `json:"sys_cpu_ns"`
	MaxRSSBytes int64      `json:"max_rss_bytes"`

	// error
	Message   string `json:"message"`
	Permanent bool   `json:"permanent"`
}

// capabilities are the optional features a plugin announces in its hello:
// those of backends.Capabilities that the protocol can carry. File copy
// and resumable output need requests that it does not have.
type capabilities struct {
	Isolated           bool `json:"isolated"`
	ResourceLimits     bool `json:"resource_limits"`
	PersistentSessions bool `json:"persistent_sessions"`
	ResourceUsage      bool `json:"resource_usage"`
}

func (c capabilities) backends() backends.Capabilities {
	return backends.Capabilities{
		Isolated: c.Isolated, ResourceLimits: c.ResourceLimits,
		PersistentSessions: c.PersistentSessions, ResourceUsage: c.ResourceUsage,
	}
}

// result converts an exit event. A signal means no exit code, as in
// backends.Result; missing times are the host's (received, the time the
// exit event arrived).
func (ev event) result(received backends.Result) backends.Result {
	res := received
	res.ExitCode, res.Signal = *ev.ExitCode, ev.Signal
	if res.Signal != "" {
		res.ExitCode = -1
	}
	if ev.StartedAt != nil {
		res.StartedAt = *ev.StartedAt
	}
	if ev.FinishedAt != nil {
		res.FinishedAt = *ev.FinishedAt
	}
	res.UserCPU = time.Duration(ev.UserCPUNS)
	res.SysCPU = time.Duration(ev.SysCPUNS)
	res.MaxRSSBytes = ev.MaxRSSBytes
	return res
}
