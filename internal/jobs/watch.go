package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Follow watches keys matching pattern in kv for changes from now on and
// calls fn for each, in order, until ctx is done. Unlike a bare KV watch,
// it re-creates the watch right after the connection comes back (a server
// restart), resuming after the last revision it delivered, so nothing is
// missed and nothing waits for the ordered consumer's heartbeat timeout.
// ready is called once the first watch is in place (nil if it failed).
func (s *Store) Follow(ctx context.Context, kv jetstream.KeyValue, pattern string, ready func(error), fn func(jetstream.KeyValueEntry)) {
	s.FollowLive(ctx, kv, pattern, ready, fn, nil)
}

// FollowLive is Follow that also reports whether the watch is live: live
// is called with true once a watch has delivered every change made before
// it was created (it has caught up), and with false as soon as the
// connection is lost or the watch ends. A caller may trust what it has
// seen as complete only while live, up to the delivery delay of one
// change.
func (s *Store) FollowLive(ctx context.Context, kv jetstream.KeyValue, pattern string, ready func(error), fn func(jetstream.KeyValueEntry), live func(bool)) {
	if live == nil {
		live = func(bool) {}
	}
	defer live(false)
	nc := s.JS.Conn()
	status := nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING)
	defer nc.RemoveStatusListener(status)
	// Start after the bucket's current last revision: changes from now on.
	var last uint64
	st, err := kv.Status(ctx)
	if err == nil {
		if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
			last = bs.StreamInfo().State.LastSeq
		}
	}
	if err != nil {
		if ready != nil {
			ready(fmt.Errorf("watch %s %s: %w", kv.Bucket(), pattern, err))
		}
		return
	}
	first := true
	for ctx.Err() == nil {
		w, err := kv.Watch(ctx, pattern, jetstream.ResumeFromRevision(last+1))
		if first {
			first = false
			if ready != nil {
				if err != nil {
					err = fmt.Errorf("watch %s %s: %w", kv.Bucket(), pattern, err)
				}
				ready(err)
			}
			if err != nil {
				return
			}
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		last = drain(ctx, w, status, last, fn, live)
		live(false)
		_ = w.Stop()
	}
}

// drain delivers w's updates until ctx is done, the watch ends, or the
// connection's status changes (lost, or re-established); it returns the
// last revision delivered.
func drain(ctx context.Context, w jetstream.KeyWatcher, status <-chan nats.Status, last uint64, fn func(jetstream.KeyValueEntry), live func(bool)) uint64 {
	for {
		select {
		case <-ctx.Done():
			return last
		case <-status:
			return last
		case e, ok := <-w.Updates():
			if !ok {
				return last
			}
			if e == nil {
				// The initial-values marker: every change made before
				// this watch was created has been delivered.
				live(true)
				continue
			}
			if e.Revision() <= last {
				continue // a replay
			}
			last = e.Revision()
			fn(e)
		}
	}
}
