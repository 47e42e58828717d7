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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
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

	// nonce tells this holder's renewals from any other's.
	nonce string
	// acquired is when the Create that made the lease was sent: the
	// server's TTL runs from no earlier, so the holder's validity does.
	acquired time.Time

	mu  sync.Mutex
	rev uint64
}

// Acquire creates key in kv with the given TTL, or returns ErrHeld. The
// TTL must be at least one second (the server's minimum).
func Acquire(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, key string, ttl time.Duration, value []byte) (*Lease, error) {
	if ttl < time.Second {
		return nil, fmt.Errorf("lease %s: ttl %s is below the 1s minimum", key, ttl)
	}
	sent := time.Now()
	rev, err := kv.Create(ctx, key, value, jetstream.KeyTTL(ttl))
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("%s: %w", key, ErrHeld)
		}
		return nil, fmt.Errorf("lease %s: %w", key, err)
	}
	return &Lease{
		js:       js,
		kv:       kv,
		key:      key,
		subject:  "$KV." + kv.Bucket() + "." + key,
		ttl:      ttl,
		rev:      rev,
		acquired: sent,
		nonce:    nuid.Next(),
	}, nil
}

// Acquired is when the lease was acquired (when its Create was sent).
func (l *Lease) Acquired() time.Time { return l.acquired }

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

// Renew extends the lease by its TTL, by a CAS on the current revision.
// It returns ErrLost if the lease expired or changed hands; any other
// error is transient (the lease may still be ours) and Renew may be
// called again.
//
// A renewal the server stored but whose acknowledgement was lost (a
// stream leader election) makes the retry's CAS fail on a revision that
// moved. Each renewal carries a header naming this lease and the revision
// it renews, so the retry recognises its own stored renewal and takes its
// revision, instead of declaring a healthy lease lost.
func (l *Lease) Renew(ctx context.Context, value []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := nats.NewMsg(l.subject)
	m.Data = value
	mark := fmt.Sprintf("%s@%d", l.nonce, l.rev)
	m.Header.Set(renewalHeader, mark)
	ack, err := l.js.PublishMsg(ctx, m,
		jetstream.WithExpectLastSequencePerSubject(l.rev),
		jetstream.WithMsgTTL(l.ttl))
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			if seq, ok := l.ownRenewal(ctx, mark); ok {
				l.rev = seq
				return nil
			}
			return fmt.Errorf("%s: %w", l.key, ErrLost)
		}
		return fmt.Errorf("renew %s: %w", l.key, err)
	}
	l.rev = ack.Sequence
	return nil
}

// renewalHeader names the lease and the revision a renewal renews.
const renewalHeader = "Sandrun-Lease-Renewal"

// ownRenewal reports whether the key's last message is the renewal mark
// names (this lease's, of the revision it held), and its sequence.
func (l *Lease) ownRenewal(ctx context.Context, mark string) (uint64, bool) {
	st, err := l.js.Stream(ctx, "KV_"+l.kv.Bucket())
	if err != nil {
		return 0, false
	}
	msg, err := st.GetLastMsgForSubject(ctx, l.subject)
	if err != nil || msg.Header.Get(renewalHeader) != mark {
		return 0, false
	}
	return msg.Sequence, true
}

// Release removes the lease if it is still ours. Releasing a lost lease
// is not an error. The removal is a purge whose marker goes after a
// second: a released lease leaves nothing on the server, where a delete
// would keep a tombstone per key for the bucket's whole age.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.kv.Purge(ctx, l.key, jetstream.LastRevision(l.rev), jetstream.PurgeTTL(releaseMarkerTTL))
	if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("release %s: %w", l.key, err)
	}
	return nil
}

// ReleaseAsync removes the lease if it is still ours, as Release does,
// without waiting for the server's answer: a holder that has committed
// its work has nothing left to decide on it, and a release that is lost
// costs only the TTL (the lease expires, and whoever looks next finds the
// work done).
func (l *Lease) ReleaseAsync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := nats.NewMsg(l.subject)
	m.Header.Set(kvOperation, "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	_, _ = l.js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(l.rev), jetstream.WithMsgTTL(releaseMarkerTTL))
}

// releaseMarkerTTL is how long a release's marker stays (the server's
// minimum TTL). Its expiry places no further marker.
const releaseMarkerTTL = time.Second

// kvOperation is the header by which a KV message marks a delete.
const kvOperation = "KV-Operation"
