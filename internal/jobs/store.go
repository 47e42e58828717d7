package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
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
	// Outputs is the object store of earlier versions' output, nil
	// where there never was one.
	Outputs jetstream.ObjectStore
	// Retention is the deployment's, as the jobstate bucket records it:
	// a record's terminal write carries the TTL of its state.
	Retention Retention

	// WriteWithin bounds how long each write below is retried through
	// transient trouble (Transient); 0 means DefaultWriteWithin. Every
	// retried write carries its own identity — a message ID, or a value
	// it recognises as its own — so that a retry of a write that was
	// stored but not acknowledged is not a second write.
	WriteWithin time.Duration
	// OnRetry, if set, is told of each retried attempt.
	OnRetry Retried

	// streams caches stream handles by name: a handle is the stream's
	// info as first read, and a direct get through it needs no second
	// round trip for that info.
	streams sync.Map // string -> jetstream.Stream
}

// Stream returns a handle on the named stream, read from the server the
// first time it is asked for. A failed read is not cached.
func (s *Store) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if st, ok := s.streams.Load(name); ok {
		return st.(jetstream.Stream), nil
	}
	st, err := s.JS.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	s.streams.Store(name, st)
	return st, nil
}

// Sentinel errors of the store.
var (
	// ErrNotFound: no such job.
	ErrNotFound = errors.New("job not found")
	// ErrExists: a job with this ID was already submitted.
	ErrExists = errors.New("job already exists")
	// ErrConflict: a CAS update lost a race; re-read and decide again.
	ErrConflict = errors.New("job record changed concurrently")
	// ErrFenced: a holder's write was refused because the job record
	// moved since its claim. The writer is a stale holder.
	ErrFenced = errors.New("job record moved since the claim: write fenced off")
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

// ErrExpired is returned for a job that ended and whose record was removed
// when its retention passed. It wraps ErrNotFound.
var ErrExpired = fmt.Errorf("%w: its record expired (finished jobs are kept for their state's retention)", ErrNotFound)

// Expired reports whether job id's record was removed by its retention,
// and when. The server marks such a removal for ExpiryMarkerTTL (the
// bucket's LimitMarkerTTL); after that, or for a job that never was, it reports
// false. Call it after GetRun found nothing.
func (s *Store) Expired(ctx context.Context, id string) (time.Time, bool) {
	st, err := s.Stream(ctx, "KV_"+s.State.Bucket())
	if err != nil {
		return time.Time{}, false
	}
	m, err := st.GetLastMsgForSubject(ctx, "$KV."+s.State.Bucket()+"."+RunKey(id))
	if err != nil || m.Header.Get(jetstream.MarkerReasonHeader) != "MaxAge" {
		return time.Time{}, false
	}
	return m.Time, true
}

// CreateRun writes a new job record; ErrExists if the ID is taken.
func (s *Store) CreateRun(ctx context.Context, r Run) (uint64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	key := RunKey(r.Spec.ID)
	var opts []jetstream.KVCreateOpt
	if ttl := s.Retention.For(r.Spec.Queue, r.State); ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	var rev uint64
	err = s.write(ctx, "create "+key, func(ctx context.Context, attempt int) (err error) {
		rev, err = s.State.Create(ctx, key, data, opts...)
		if errors.Is(err, jetstream.ErrKeyExists) {
			if own, ok := s.ownWrite(ctx, attempt, key, data); ok {
				rev = own
				return nil
			}
			return fmt.Errorf("%s: %w", r.Spec.ID, ErrExists)
		}
		return err
	})
	return rev, err
}

// SubmitPipelined dispatches a validated spec as owner, deduplicated by
// msgID, and returns ErrExists when the server already had that message
// (a slot fired twice). The job record is written by the worker that
// claims it: submitters write no record. The scheduler uses it.
func (s *Store) SubmitPipelined(ctx context.Context, spec Spec, owner, msgID string) error {
	job, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return s.write(ctx, "submit "+spec.ID, func(ctx context.Context, attempt int) error {
		ack, err := s.JS.Publish(ctx, LaneSubject(spec.Queue, spec.Backend, owner), job, jetstream.WithMsgID(msgID))
		if err != nil {
			return fmt.Errorf("dispatch %s: %w", spec.ID, err)
		}
		if ack.Duplicate && attempt == 1 {
			return fmt.Errorf("%s: %w", spec.ID, ErrExists)
		}
		return nil
	})
}

// UpdateRun replaces the job record if it is still at rev. A record that
// ends the job carries its state's retention as a TTL: the server removes
// it when the time is up.
func (s *Store) UpdateRun(ctx context.Context, r Run, rev uint64) (uint64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	key := RunKey(r.Spec.ID)
	ttl := s.Retention.For(r.Spec.Queue, r.State)
	var nrev uint64
	err = s.write(ctx, "update "+key, func(ctx context.Context, attempt int) (err error) {
		if ttl > 0 {
			nrev, err = s.updateTTL(ctx, key, data, rev, ttl)
		} else {
			nrev, err = s.State.Update(ctx, key, data, rev)
		}
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			if own, ok := s.ownWrite(ctx, attempt, key, data); ok {
				nrev = own
				return nil
			}
			return fmt.Errorf("%s: %w", r.Spec.ID, ErrConflict)
		}
		return err
	})
	return nrev, err
}

// updateTTL is the KV's Update with a TTL on the new value (the KV API
// sets TTLs on creates only): a publish on the key's subject, expecting
// rev as the subject's last sequence.
func (s *Store) updateTTL(ctx context.Context, key string, data []byte, rev uint64, ttl time.Duration) (uint64, error) {
	m := nats.NewMsg("$KV." + s.State.Bucket() + "." + key)
	m.Data = data
	ack, err := s.JS.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
	if isWrongLastSequence(err) {
		return 0, jetstream.ErrKeyRevisionMismatch
	}
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// DeleteRun removes a job record (used to undo a submit whose publish
// failed).
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	return s.State.Purge(ctx, RunKey(id), jetstream.PurgeTTL(markerTTL))
}

// markerTTL is how long a purge's marker stays: long enough for a watch
// that reconnects to see it, short enough that a deleted key costs the
// server nothing for long.
const markerTTL = time.Minute

// GetResult returns the committed result of job id, from its record, or
// ErrNotFound while it has none.
func (s *Store) GetResult(ctx context.Context, id string) (Result, error) {
	run, _, err := s.GetRun(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if run.Result == nil {
		return Result{}, fmt.Errorf("result %s: %w", id, ErrNotFound)
	}
	return *run.Result, nil
}

// End writes the job's terminal record, carrying r, over revision rev: the
// one write that commits the result. ErrFenced when the record moved since
// rev (another attempt claimed the job, the reaper requeued it, it ended):
// the writer is a stale holder and nothing is written.
func (s *Store) End(ctx context.Context, run Run, r Result, rev uint64) (Run, uint64, error) {
	run.State = r.State
	run.Attempt = max(run.Attempt, r.Attempt)
	run.NextAttemptAt = time.Time{}
	if r.Error != "" {
		run.LastError = r.Error
	}
	run.UpdatedAt = r.FinishedAt
	run.Result = &r
	nrev, err := s.Move(ctx, run, rev)
	return run, nrev, err
}

// Move writes run over revision rev as its holder: ErrFenced when the
// record moved since (the holder is stale).
func (s *Store) Move(ctx context.Context, run Run, rev uint64) (uint64, error) {
	nrev, err := s.UpdateRun(ctx, run, rev)
	if errors.Is(err, ErrConflict) {
		return 0, fmt.Errorf("%s: %w", run.Spec.ID, ErrFenced)
	}
	return nrev, err
}

// RequestCancel records owner's request to cancel job id. The request
// goes by itself after the longest retention: a job may wait in its queue
// that long (it has no record until a worker claims it).
func (s *Store) RequestCancel(ctx context.Context, owner, id string) error {
	at := []byte(time.Now().UTC().Format(time.RFC3339Nano))
	var opts []jetstream.KVCreateOpt
	if ttl := s.Retention.Longest(); ttl > 0 {
		opts = append(opts, jetstream.KeyTTL(ttl))
	}
	return s.write(ctx, "cancel "+id, func(ctx context.Context, _ int) error {
		_, err := s.State.Create(ctx, CancelKey(owner, id), at, opts...)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil // asked already
		}
		return err
	})
}

// CancelRequested reads whether owner asked to cancel job id, from the
// server (a worker's watch of the requests may lag behind it, for seconds
// after a reconnect).
func (s *Store) CancelRequested(ctx context.Context, owner, id string) (bool, error) {
	_, err := s.State.Get(ctx, CancelKey(owner, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return false, nil
	}
	return false, err
}

// PublishJob dispatches spec to its queue as owner's. msgID dedupes the
// publish (the job ID on submit; a per-attempt ID on retries).
func (s *Store) PublishJob(ctx context.Context, spec Spec, owner, msgID string) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return s.write(ctx, "dispatch "+spec.ID, func(ctx context.Context, _ int) error {
		_, err := s.JS.Publish(ctx, LaneSubject(spec.Queue, spec.Backend, owner), data, jetstream.WithMsgID(msgID))
		return err
	})
}

// ScheduleJob dispatches spec to its queue at (or just after) at, by a
// server-side @at schedule. The schedule is rounded up to the next whole
// second because the server's schedule time has second precision and
// would otherwise fire early.
func (s *Store) ScheduleJob(ctx context.Context, spec Spec, owner string, at time.Time, msgID string) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	at = at.Truncate(time.Second).Add(time.Second)
	return s.write(ctx, "schedule "+spec.ID, func(ctx context.Context, _ int) error {
		_, err := s.JS.Publish(ctx, DelaySubject(spec.ID), data,
			jetstream.WithMsgID(msgID),
			jetstream.WithScheduleAt(at),
			jetstream.WithScheduleTarget(LaneSubject(spec.Queue, spec.Backend, owner)))
		return err
	})
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
	msgID := "dlq." + e.JobID + "." + e.Time.Format(time.RFC3339Nano)
	return s.write(ctx, "dead-letter "+e.JobID, func(ctx context.Context, _ int) error {
		_, err := s.JS.Publish(ctx, DLQSubject(e.JobID), data, jetstream.WithMsgID(msgID))
		return err
	})
}

// GetDLQ returns the DLQ entry of job id and its stream sequence.
func (s *Store) GetDLQ(ctx context.Context, id string) (DLQEntry, uint64, error) {
	st, err := s.Stream(ctx, StreamDLQ)
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

func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}
