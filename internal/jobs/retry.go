package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultWriteWithin bounds how long a Store write is retried through
// transient trouble: a stream leader election (5–9 s of failed publishes
// were measured when a leader is lost, ../shared/DESIGN.md), a node
// restarting, a client reconnecting to another node.
const DefaultWriteWithin = 30 * time.Second

// attemptTimeout bounds one attempt of a write, so that a request lost
// with its leader is tried again instead of waiting out the caller.
const attemptTimeout = 5 * time.Second

// The JetStream API error codes the store reacts to (nats-server's
// errors.json; nats.go names only some of them).
const (
	// ErrCodeNoPeers: no suitable peers for placement (a forming cluster).
	ErrCodeNoPeers jetstream.ErrorCode = 10005
	// ErrCodeTemporarilyUnavailable: JetStream system temporarily
	// unavailable (a leader election).
	ErrCodeTemporarilyUnavailable jetstream.ErrorCode = 10008
	// ErrCodeInsufficientResources: insufficient resources (placement).
	ErrCodeInsufficientResources jetstream.ErrorCode = 10023
	// ErrCodeReplicasNeedCluster: replicas > 1 not supported in
	// non-clustered mode.
	ErrCodeReplicasNeedCluster jetstream.ErrorCode = 10074
)

// Transient reports whether err is what a write gets while the cluster
// elects a leader, a node restarts or the connection moves to another
// node: a retry may succeed, and a write that carries its own identity
// (a message ID, a known value) can be retried safely.
func Transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == ErrCodeTemporarilyUnavailable
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionReconnecting)
}

// Retried is told about each failed attempt that is tried again. what is
// the write's kind (one of WriteOps), a space, and its key or job ID.
type Retried func(what string, attempt int, err error)

// WriteOps are the kinds of Store writes that are retried: the first word
// of what a Retried is told.
var WriteOps = []string{"create", "submit", "update", "write", "cancel", "dispatch", "schedule", "dead-letter"}

// retry runs op until it succeeds, fails with an error that is not
// transient, ctx is done or within has passed since the first attempt.
// Each attempt gets its own timeout; attempt counts from 1, so that an
// op can tell a conflict with its own earlier, unacknowledged write from
// a real one.
func retry(ctx context.Context, within time.Duration, transient func(error) bool, told Retried, what string,
	op func(ctx context.Context, attempt int) error) error {
	deadline := time.Now().Add(within)
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, min(attemptTimeout, max(time.Until(deadline), time.Millisecond)))
		err := op(actx, attempt)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%s: still failing after %s: %w", what, within, err)
		}
		if told != nil {
			told(what, attempt, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// write retries op for the store's write budget.
func (s *Store) write(ctx context.Context, what string, op func(ctx context.Context, attempt int) error) error {
	within := s.WriteWithin
	if within == 0 {
		within = DefaultWriteWithin
	}
	return retry(ctx, within, Transient, s.OnRetry, what, op)
}

// ownWrite reports whether key holds exactly data, on a retry (attempt >
// 1; a first attempt never finds its own write): after a retried create
// or compare-and-set fails its check, it tells an earlier attempt of this
// very write (stored, its ack lost in an election) from somebody else's
// write. It returns the revision of the value.
func (s *Store) ownWrite(ctx context.Context, attempt int, key string, data []byte) (uint64, bool) {
	if attempt < 2 {
		return 0, false
	}
	e, err := s.State.Get(ctx, key)
	if err != nil || !bytes.Equal(e.Value(), data) {
		return 0, false
	}
	return e.Revision(), true
}

// committedWithin bounds how long a read of something a committed write
// names (a result's output object) retries "not found": a replica that
// has not applied the write yet may answer the read (JetStream's direct
// get), while the write itself is committed.
const committedWithin = 5 * time.Second

// errNoObjectStore is OutputObject's error where the object store of
// earlier versions never existed.
var errNoObjectStore = errors.New("this deployment has no outputs object store (output is in the OUTPUTS stream)")

// OutputObject opens the output object name, which a committed result of
// an earlier version names: it exists, so "not found" is a replica behind
// the leader, and the read is tried again for a few seconds.
func (s *Store) OutputObject(ctx context.Context, name string) (jetstream.ObjectResult, error) {
	if s.Outputs == nil {
		return nil, errNoObjectStore
	}
	return untilFound(ctx, func() (jetstream.ObjectResult, error) { return s.Outputs.Get(ctx, name) })
}

// OutputInfo is OutputObject's metadata (size, digest).
func (s *Store) OutputInfo(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	if s.Outputs == nil {
		return nil, errNoObjectStore
	}
	return untilFound(ctx, func() (*jetstream.ObjectInfo, error) { return s.Outputs.GetInfo(ctx, name) })
}

func untilFound[T any](ctx context.Context, read func() (T, error)) (T, error) {
	deadline := time.Now().Add(committedWithin)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		v, err := read()
		notFound := errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrMsgNotFound)
		if !notFound || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
	}
}
