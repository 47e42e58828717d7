package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Store is the JetStream layout as handles, with the record operations
// that more than one component needs (submit, worker, reaper, CLI).
type Store struct {
	// Deployment identifies this layout (see deploymentID).
	Deployment string
	JS         jetstream.JetStream
	State      jetstream.KeyValue
	Schedules  jetstream.KeyValue
	Elections  jetstream.KeyValue
	Workers    jetstream.KeyValue
	Outputs    jetstream.ObjectStore
}

// Sentinel errors of the store.
var (
	// ErrNotFound: no such job.
	ErrNotFound = errors.New("job not found")
	// ErrExists: a job with this ID was already submitted.
	ErrExists = errors.New("job already exists")
	// ErrConflict: a CAS update lost a race; re-read and decide again.
	ErrConflict = errors.New("job record changed concurrently")
	// ErrFenced: a fenced write was refused because the writer's lease
	// revision is no longer current. The writer is a stale holder.
	ErrFenced = errors.New("lease revision is stale: write fenced off")
)

// GetRun returns the job record and its revision.
func (s *Store) GetRun(ctx context.Context, id string) (Run, uint64, error) {
	e, err := s.State.Get(ctx, RunKey(id))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return Run{}, 0, fmt.Errorf("%s: %w", id, ErrNotFound)
		}
		return Run{}, 0, err
	}
	var r Run
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Run{}, 0, fmt.Errorf("run record %s: %w", id, err)
	}
	return r, e.Revision(), nil
}

// CreateRun writes a new job record; ErrExists if the ID is taken.
func (s *Store) CreateRun(ctx context.Context, r Run) (uint64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	rev, err := s.State.Create(ctx, RunKey(r.Spec.ID), data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("%s: %w", r.Spec.ID, ErrExists)
	}
	return rev, err
}

// SubmitPipelined records and dispatches a validated spec with both writes
// in flight at once (one round trip instead of two): the record is created
// only if absent, and the dispatch is deduplicated by msgID. It suits
// callers whose job IDs are deterministic (cron slots): if the record
// already exists, ErrExists is returned and the dispatch, deduplicated or
// not, is harmless — a worker drops a copy of a job that is running or
// ended. The scheduler uses it to keep fire lag low.
func (s *Store) SubmitPipelined(ctx context.Context, r Run, msgID string) error {
	rec, err := json.Marshal(r)
	if err != nil {
		return err
	}
	job, err := json.Marshal(r.Spec)
	if err != nil {
		return err
	}
	recAck, err := s.JS.PublishAsync(kvSubject(RunKey(r.Spec.ID)), rec, jetstream.WithExpectLastSequencePerSubject(0))
	if err != nil {
		return err
	}
	jobAck, err := s.JS.PublishAsync(JobSubject(r.Spec.Queue), job, jetstream.WithMsgID(msgID))
	if err != nil {
		return err
	}
	var recErr, jobErr error
	for _, f := range []struct {
		ack jetstream.PubAckFuture
		err *error
	}{{recAck, &recErr}, {jobAck, &jobErr}} {
		select {
		case <-f.ack.Ok():
		case e := <-f.ack.Err():
			*f.err = e
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if jobErr != nil {
		return fmt.Errorf("dispatch %s: %w", r.Spec.ID, jobErr)
	}
	if isWrongLastSequence(recErr) {
		return fmt.Errorf("%s: %w", r.Spec.ID, ErrExists)
	}
	return recErr
}

// UpdateRun replaces the job record if it is still at rev.
func (s *Store) UpdateRun(ctx context.Context, r Run, rev uint64) (uint64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	nrev, err := s.State.Update(ctx, RunKey(r.Spec.ID), data, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("%s: %w", r.Spec.ID, ErrConflict)
	}
	return nrev, err
}

// DeleteRun removes a job record (used to undo a submit whose publish
// failed).
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	return s.State.Purge(ctx, RunKey(id))
}

// PutRunFenced replaces the job record only while leaseRev is the current
// revision of the job's lease. It returns ErrFenced otherwise.
func (s *Store) PutRunFenced(ctx context.Context, r Run, leaseRev uint64) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.publishFenced(ctx, r.Spec.ID, RunKey(r.Spec.ID), data, leaseRev)
}

// GetResult returns the committed result of job id, or ErrNotFound.
func (s *Store) GetResult(ctx context.Context, id string) (Result, error) {
	e, err := s.State.Get(ctx, ResultKey(id))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return Result{}, fmt.Errorf("result %s: %w", id, ErrNotFound)
		}
		return Result{}, err
	}
	var r Result
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Result{}, fmt.Errorf("result record %s: %w", id, err)
	}
	return r, nil
}

// CommitResult writes the job's result, fenced on leaseRev: the write is
// accepted by the server only while leaseRev is the latest revision of
// lease.<id>. A stale holder gets ErrFenced and nothing is written.
func (s *Store) CommitResult(ctx context.Context, r Result, leaseRev uint64) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// The message ID makes a retried commit whose first try was stored
	// but not acknowledged (a stream leader lost in between) a duplicate,
	// not a second write: the fence alone would let it through, since
	// the lease has not moved.
	return s.publishFenced(ctx, r.JobID, ResultKey(r.JobID), data, leaseRev,
		jetstream.WithMsgID(fmt.Sprintf("%s@%d", ResultKey(r.JobID), leaseRev)))
}

func (s *Store) publishFenced(ctx context.Context, id, key string, data []byte, leaseRev uint64, opts ...jetstream.PublishOpt) error {
	_, err := s.JS.Publish(ctx, kvSubject(key), data,
		append(opts, jetstream.WithExpectLastSequenceForSubject(leaseRev, kvSubject(LeaseKey(id))))...)
	if isWrongLastSequence(err) {
		return fmt.Errorf("%s %s: %w", key, id, ErrFenced)
	}
	return err
}

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}

// RequestCancel records a cancel request for job id.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	_, err := s.State.Put(ctx, CancelKey(id), []byte(time.Now().UTC().Format(time.RFC3339Nano)))
	return err
}

// PublishJob dispatches spec to its queue. msgID dedupes the publish (the
// job ID on submit; a per-attempt ID on retries).
func (s *Store) PublishJob(ctx context.Context, spec Spec, msgID string) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	_, err = s.JS.Publish(ctx, JobSubject(spec.Queue), data, jetstream.WithMsgID(msgID))
	return err
}

// ScheduleJob dispatches spec to its queue at (or just after) at, by a
// server-side @at schedule. The schedule is rounded up to the next whole
// second because the server's schedule time has second precision and
// would otherwise fire early.
func (s *Store) ScheduleJob(ctx context.Context, spec Spec, at time.Time, msgID string) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	at = at.Truncate(time.Second).Add(time.Second)
	_, err = s.JS.Publish(ctx, DelaySubject(spec.ID), data,
		jetstream.WithMsgID(msgID),
		jetstream.WithScheduleAt(at),
		jetstream.WithScheduleTarget(JobSubject(spec.Queue)))
	return err
}

// DLQEntry is a dead-lettered job (or a message that was never a valid
// job) with the reason it is there.
type DLQEntry struct {
	JobID    string    `json:"job_id"`
	Queue    string    `json:"queue,omitempty"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts,omitempty"`
	Time     time.Time `json:"time"`
	// Spec is the job, when the message was a valid job.
	Spec *Spec `json:"spec,omitempty"`
	// Raw holds the first bytes of a message that was not a valid job,
	// and RawSize its full size.
	Raw     string `json:"raw,omitempty"`
	RawSize int    `json:"raw_size,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// PublishDLQ records e in the DLQ stream (one entry per job ID).
func (s *Store) PublishDLQ(ctx context.Context, e DLQEntry) error {
	if e.Spec != nil {
		r := e.Spec.Redacted()
		e.Spec = &r
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = s.JS.Publish(ctx, DLQSubject(e.JobID), data, jetstream.WithMsgID("dlq."+e.JobID+"."+e.Time.Format(time.RFC3339Nano)))
	return err
}

// GetDLQ returns the DLQ entry of job id and its stream sequence.
func (s *Store) GetDLQ(ctx context.Context, id string) (DLQEntry, uint64, error) {
	st, err := s.JS.Stream(ctx, StreamDLQ)
	if err != nil {
		return DLQEntry{}, 0, err
	}
	m, err := st.GetLastMsgForSubject(ctx, DLQSubject(id))
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return DLQEntry{}, 0, fmt.Errorf("dlq %s: %w", id, ErrNotFound)
		}
		return DLQEntry{}, 0, err
	}
	var e DLQEntry
	if err := json.Unmarshal(m.Data, &e); err != nil {
		return DLQEntry{}, 0, fmt.Errorf("dlq entry %s: %w", id, err)
	}
	return e, m.Sequence, nil
}

// Event is one lifecycle transition of a job, published on EVENTS.
type Event struct {
	Kind    string    `json:"kind"` // submitted, claimed, denied, retry, finished, ...
	JobID   string    `json:"job_id"`
	Attempt int       `json:"attempt,omitempty"`
	State   State     `json:"state,omitempty"`
	Worker  string    `json:"worker,omitempty"`
	Time    time.Time `json:"time"`
	Message string    `json:"message,omitempty"`
	// ExitCode is set on finished events.
	ExitCode *int `json:"exit_code,omitempty"`
}

// Event kinds with special meaning to readers.
const (
	EventFinished = "finished" // terminal; readers stop here
	EventOutput   = "out"      // live output chunk; body is raw bytes
)

// Header names on output events.
const (
	HeaderStream  = "Sandrun-Stream"  // stdout or stderr
	HeaderAttempt = "Sandrun-Attempt" // attempt number
)

// PublishEvent publishes e asynchronously. Events are best-effort
// telemetry: the KV records are the source of truth.
func (s *Store) PublishEvent(e Event) {
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	opts := []jetstream.PublishOpt{}
	if e.Kind == EventFinished {
		opts = append(opts, jetstream.WithMsgID("fin."+e.JobID))
	}
	_, _ = s.JS.PublishAsync(EventSubject(e.JobID, e.Kind), data, opts...)
}

// PublishOutput publishes a live output chunk of job id asynchronously.
func (s *Store) PublishOutput(id string, attempt int, stream string, chunk []byte) {
	m := nats.NewMsg(EventSubject(id, EventOutput))
	m.Header.Set(HeaderStream, stream)
	m.Header.Set(HeaderAttempt, fmt.Sprint(attempt))
	m.Data = chunk
	_, _ = s.JS.PublishMsgAsync(m)
}
