package scheduler

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// stateWriter stores the leader's records of the slots it handled — each
// schedule's last slot, last job and history — off the fire path:
//
//  1. The dispatcher adds changes (add) as slots are handled, and kicks
//     the writer once a burst's publishes are settled.
//  2. A round writes every schedule with changes once, all at once
//     (asynchronous publishes on the keys' subjects, a bounded number in
//     flight), each a compare-and-set on the revision the writer last
//     stored or read: changes made while a round is under way wait for
//     the next, so a schedule that fired twice meanwhile costs one write.
//  3. A write refused because the key moved (a CLI trigger, the previous
//     leader's last records) reads the key again and re-applies its
//     changes in the next round; any other failure retries them too.
//  4. While a burst publishes (pause held), no state write is published.
//  5. When leadership ends (stop closed), one last round stores what is
//     left, bounded by finalFlushTimeout.
//
// The records are eventually consistent with the fires. A record lost
// (the leader killed before its round) costs nothing but a second
// publish: the next leader fires the slot again under the same message
// ID, which JetStream drops.
type stateWriter struct {
	js  jetstream.JetStream
	cat *Catalog
	log *slog.Logger
	// pause is held by the dispatcher while a burst publishes.
	pause sync.Mutex

	mu    sync.Mutex
	keys  map[string]*keyState
	dirty []string // the keys with changes pending, each once
	kicks chan struct{}
}

// keyState is the writer's view of one schedule's state: st and rev are
// the writer goroutine's alone; pending is guarded by mu.
type keyState struct {
	st      State
	rev     uint64 // 0: to be read before it is written
	pending []func(*State)
}

// Defaults of the state writer.
const (
	stateInFlight     = 256
	finalFlushTimeout = 5 * time.Second
	stateRetryWait    = 100 * time.Millisecond
)

func newStateWriter(js jetstream.JetStream, cat *Catalog, log *slog.Logger) *stateWriter {
	return &stateWriter{js: js, cat: cat, log: log, keys: map[string]*keyState{}, kicks: make(chan struct{}, 1)}
}

// track starts following schedule name, whose state is st at rev.
func (w *stateWriter) track(name string, st State, rev uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys[name] = &keyState{st: st, rev: rev}
}

// forget stops following a schedule (removed): its changes not stored yet
// are dropped.
func (w *stateWriter) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.keys, name)
}

// add queues a change of a schedule's state.
func (w *stateWriter) add(name string, change func(*State)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keys[name]
	if k == nil {
		k = &keyState{} // read before written
		w.keys[name] = k
	}
	w.queue(name, k, change)
}

// queue appends changes to k's pending ones; mu is held.
func (w *stateWriter) queue(name string, k *keyState, changes ...func(*State)) {
	if len(k.pending) == 0 {
		w.dirty = append(w.dirty, name)
	}
	k.pending = append(k.pending, changes...)
}

// kick asks for a round; it never blocks.
func (w *stateWriter) kick() {
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

// run writes rounds when kicked until stop is closed, then a last one.
func (w *stateWriter) run(ctx context.Context, stop <-chan struct{}) {
	var again <-chan time.Time // a round that failed in part is retried
	for {
		select {
		case <-stop:
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
			defer cancel()
			more := true
			for more && fctx.Err() == nil {
				more = w.round(fctx) // rounds until every state is stored, or the time is up
			}
			if n := w.unsaved(); n > 0 {
				w.log.Warn("leadership ended with schedule states not stored; the next leader fires their last slots again (deduplicated)", "schedules", n)
			}
			return
		case <-w.kicks:
		case <-again:
		}
		again = nil
		if w.round(ctx) {
			again = time.After(stateRetryWait)
		}
	}
}

func (w *stateWriter) unsaved() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dirty)
}

// stateWrite is one key's write in a round.
type stateWrite struct {
	name    string
	k       *keyState
	changes []func(*State)
	next    State
	ack     jetstream.PubAckFuture
	err     error
}

// round writes every key with changes once; it reports whether some
// changes are left to retry.
func (w *stateWriter) round(ctx context.Context) (retry bool) {
	w.mu.Lock()
	var batch []*stateWrite
	for _, name := range w.dirty {
		if k := w.keys[name]; k != nil && len(k.pending) > 0 {
			batch = append(batch, &stateWrite{name: name, k: k, changes: k.pending})
			k.pending = nil
		}
	}
	w.dirty = w.dirty[:0]
	w.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	var queue []*stateWrite
	settle := func(sw *stateWrite) {
		t := time.NewTimer(ackTimeout)
		defer t.Stop()
		select {
		case ack := <-sw.ack.Ok():
			sw.k.st, sw.k.rev = sw.next, ack.Sequence
		case sw.err = <-sw.ack.Err():
		case <-t.C:
			sw.err = errAckTimeout
		case <-ctx.Done():
			sw.err = ctx.Err()
		}
	}
	for _, sw := range batch {
		if sw.k.rev == 0 {
			if sw.err = w.read(ctx, sw); sw.err != nil || sw.k.rev == 0 {
				continue
			}
		}
		if len(queue) >= stateInFlight {
			settle(queue[0])
			queue = queue[1:]
		}
		sw.next = sw.k.st
		sw.next.History = slices.Clone(sw.k.st.History)
		for _, change := range sw.changes {
			change(&sw.next)
		}
		data, err := json.Marshal(sw.next)
		if err != nil {
			sw.err = err
			continue
		}
		m := nats.NewMsg("$KV." + w.cat.kv.Bucket() + "." + stateKey(sw.name))
		m.Data = data
		w.pause.Lock()
		sw.ack, sw.err = w.js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(sw.k.rev))
		w.pause.Unlock()
		if sw.err == nil {
			queue = append(queue, sw)
		}
	}
	for _, sw := range queue {
		settle(sw)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sw := range batch {
		if sw.err == nil && sw.k.rev != 0 {
			continue
		}
		if w.keys[sw.name] != sw.k {
			continue // forgotten (or tracked anew) meanwhile
		}
		if sw.k.rev == 0 && sw.err == nil {
			// The state was removed (its schedule is being removed).
			w.log.Debug("schedule state gone; its records dropped", "schedule", sw.name)
			continue
		}
		if jobs.IsExists(sw.err) {
			sw.k.rev = 0 // moved under us: read it again, then re-apply
		} else if ctx.Err() == nil {
			w.log.Warn("store schedule state, retrying", "schedule", sw.name, "err", sw.err)
		}
		pending := sw.k.pending
		sw.k.pending = nil
		w.queue(sw.name, sw.k, append(sw.changes, pending...)...)
		retry = true
	}
	return retry
}

// read loads sw's key as stored (rev stays 0 if it does not exist).
func (w *stateWriter) read(ctx context.Context, sw *stateWrite) error {
	st, rev, err := w.cat.state(ctx, sw.name)
	if err != nil {
		return err
	}
	sw.k.st, sw.k.rev = st, rev
	return nil
}
