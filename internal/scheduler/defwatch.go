package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// watchDefs delivers the schedule definitions in kv to fn, then every
// change of one, in order, until ctx is done; listed is called once the
// definitions present at the start have been delivered.
//
// The listing is the watch's own initial values (the last entry of each
// key, then a nil marker) and the changes come from the same watch, so
// no edit can fall between listing and watching. Every entry carries its
// value: fn must build the schedule from it, never re-read the key — a
// KV get is a direct get, which any replica may answer, one that has not
// applied the change yet among them (nats-server#6557).
//
// Like jobs.Store.Follow, the watch is re-created as soon as the
// connection comes back (a server restart), resuming after the last
// revision delivered. An error is returned only if the first watch
// cannot be created.
func watchDefs(ctx context.Context, nc *nats.Conn, kv jetstream.KeyValue, listed func(), fn func(jetstream.KeyValueEntry)) error {
	status := nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING)
	defer nc.RemoveStatusListener(status)
	d := defWatch{fn: fn, listed: listed}
	for first := true; ctx.Err() == nil; first = false {
		var opts []jetstream.WatchOpt
		if d.last > 0 {
			// Every definition delivered is current up to last; the
			// entries after it (the rest of the listing included) follow.
			opts = append(opts, jetstream.ResumeFromRevision(d.last+1))
		}
		w, err := kv.Watch(ctx, defKey("*"), opts...)
		if err != nil {
			if first {
				return fmt.Errorf("watch schedules: %w", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		}
		d.drain(ctx, w, status)
		_ = w.Stop()
	}
	return nil
}

// defWatch is the progress of watchDefs across re-created watches.
type defWatch struct {
	fn     func(jetstream.KeyValueEntry)
	listed func()
	last   uint64 // revision of the last entry delivered
	done   bool   // listed was called
}

// drain delivers w's entries until ctx is done, the watch ends, or the
// connection's status changes (lost, or re-established).
func (d *defWatch) drain(ctx context.Context, w jetstream.KeyWatcher, status <-chan nats.Status) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-status:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil {
				if !d.done {
					d.done = true
					d.listed()
				}
				continue
			}
			if e.Revision() <= d.last {
				continue // a replay
			}
			d.last = e.Revision()
			d.fn(e)
		}
	}
}
