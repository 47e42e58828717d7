package client

import (
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/jobs"
)

// The job model, as the client takes and returns it. These are aliases of
// sandrun's own types, so a value built here is exactly what workers read;
// their JSON forms are documented in docs/jobs.md.
type (
	// Spec is a job as submitted.
	Spec = jobs.Spec
	// Backoff is a retry backoff (Spec.Retry).
	Backoff = jobs.Backoff
	// Duration is a duration whose JSON form is a Go duration string.
	Duration = jobs.Duration
	// ContainerOptions ask a container backend for mounts, network or an image.
	ContainerOptions = backends.ContainerOptions
	// Origin says who submitted a job (manual, cron, batch, subagent).
	Origin = jobs.Origin
	// State is a job's lifecycle state.
	State = jobs.State
	// Run is a job's record: its spec, state and attempt.
	Run = jobs.Run
	// Result is a job's committed outcome.
	Result = jobs.Result
	// OutputRef is a result's bounded output head/tail and where the full
	// output is stored.
	OutputRef = jobs.Output
	// Event is a lifecycle event (sandrun.events.<id>).
	Event = jobs.Event
	// Batch is a batch's record.
	Batch = jobs.Batch
	// BatchCompletion records a batch's announced completion.
	BatchCompletion = jobs.BatchCompletion
	// DLQEntry is a dead job as the dead-letter queue holds it.
	DLQEntry = jobs.DLQEntry
	// WorkspaceInfo is a workspace as its owner lists it.
	WorkspaceInfo = jobs.WorkspaceInfo
)

// Job states.
const (
	StateQueued    = jobs.StateQueued
	StateRunning   = jobs.StateRunning
	StateRetryWait = jobs.StateRetryWait
	StateSucceeded = jobs.StateSucceeded
	StateFailed    = jobs.StateFailed
	StateTimedOut  = jobs.StateTimedOut
	StateDenied    = jobs.StateDenied
	StateCanceled  = jobs.StateCanceled
	StateDead      = jobs.StateDead
)

// Origins.
const (
	OriginManual   = jobs.OriginManual
	OriginCron     = jobs.OriginCron
	OriginBatch    = jobs.OriginBatch
	OriginSubagent = jobs.OriginSubagent
)

// Errors callers act on (compare with errors.Is).
var (
	// ErrNotFound: no such job or batch.
	ErrNotFound = jobs.ErrNotFound
	// ErrExists: the ID was already submitted (or the batch has other items).
	ErrExists = jobs.ErrExists
)
