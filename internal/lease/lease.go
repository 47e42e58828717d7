// Package lease implements fenced, heartbeated leases on a JetStream
// key-value bucket, and leader election built on them.
//
// A lease is one key, created with KV Create (only if absent) and a
// per-key TTL. Its KV revision is a fencing token: revisions are stream
// sequences, strictly increasing and never reused, so a later holder's
// revision is always larger, and a write fenced on a stale revision is
// refused by the server. The holder renews by a compare-and-set publish
// that also resets the TTL (KV Update cannot set a TTL). The bucket must
// have History 1 and LimitMarkerTTL set (which enables per-key TTLs).
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrHeld is returned by Acquire when someone else holds the lease.
	ErrHeld = errors.New("lease is held")
	// ErrLost is returned by Renew when the lease is no longer ours:
	// it expired, or another holder took it.
	ErrLost = errors.New("lease lost")
)

// Lease is a held lease. Its methods are safe for concurrent use.
type Lease struct {
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	key     string
	subject string
	ttl     time.Duration

	mu  sync.Mutex
	rev uint64
}

// Acquire creates key in kv with the given TTL, or returns ErrHeld. The
// TTL must be at least one second (the server's minimum).
func Acquire(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, key string, ttl time.Duration, value []byte) (*Lease, error) {
	if ttl < time.Second {
		return nil, fmt.Errorf("lease %s: ttl %s is below the 1s minimum", key, ttl)
	}
	rev, err := kv.Create(ctx, key, value, jetstream.KeyTTL(ttl))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("%s: %w", key, ErrHeld)
		}
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	return &Lease{
		js:      js,
		kv:      kv,
		key:     key,
		subject: "$KV." + kv.Bucket() + "." + key,
		ttl:     ttl,
		rev:     rev,
	}, nil
}

// Key returns the lease's key.
func (l *Lease) Key() string { return l.key }

// TTL returns the lease's time to live.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Rev returns the current revision: the fencing token for writes made
// under this lease.
func (l *Lease) Rev() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rev
}

// Fenced runs write with the current revision while holding off renewals,
// so that the revision write is fenced on cannot change under it. write
// should be one fenced publish; it must not call other Lease methods.
func (l *Lease) Fenced(write func(rev uint64) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return write(l.rev)
}

// Renew extends the lease by its TTL, by a CAS on the current revision.
// It returns ErrLost if the lease expired or changed hands; any other
// error is transient (the lease may still be ours) and Renew may be
// called again.
func (l *Lease) Renew(ctx context.Context, value []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	ack, err := l.js.Publish(ctx, l.subject, value,
		jetstream.WithExpectLastSequencePerSubject(l.rev),
		jetstream.WithMsgTTL(l.ttl))
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return fmt.Errorf("%s: %w", l.key, ErrLost)
		}
		return fmt.Errorf("renew %s: %w", l.key, err)
	}
	l.rev = ack.Sequence
	return nil
}

// Release deletes the lease if it is still ours. Releasing a lost lease
// is not an error.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("release %s: %w", l.key, err)
	}
	return nil
}
