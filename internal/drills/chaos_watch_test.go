package drills

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// watch starts the watches that record every write of the job records
// and results from before the first submit: one per node, each on a
// connection to its node alone, and the history is what any of them saw.
//
// A write replaced while a watch is away is lost to it (the bucket keeps
// one value per key). So each watch comes back fast: its connection tries
// again every 50 ms (a client's waits 2 s), and when a cluster node is
// killed (h.rewatch) each watch opens a new one at once, as the node may
// have held its consumer, which the consumer's heartbeats take seconds to
// notice; it keeps the old one until the new one is open, which can take
// as long as the cluster takes to elect leaders. A new watch resumes
// after the last revision seen, but its consumer may land on a node still
// catching up, whose copy lacks what was replaced meanwhile: the other
// watches cover that.
func (h *chaosRun) watch() {
	for i := range h.servers.size() {
		rewatch := make(chan struct{}, 1)
		h.rewatch = append(h.rewatch, rewatch)
		h.watchVia("nats://"+h.servers.addr(i), rewatch)
	}
}

// restartWatches asks every watch to start again.
func (h *chaosRun) restartWatches() {
	for _, c := range h.rewatch {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (h *chaosRun) watchVia(url string, rewatch <-chan struct{}) {
	ctx := h.t.Context()
	nc, err := nats.Connect(url, nats.Name("chaos-watch"), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
	if err != nil {
		h.t.Fatal(err)
	}
	connected := nc.StatusChanged(nats.CONNECTED)
	kv, w, last, err := startWatch(ctx, js, nc.ConnectedServerVersion())
	if err != nil {
		nc.RemoveStatusListener(connected)
		h.t.Fatal(err)
	}
	go func() {
		defer nc.RemoveStatusListener(connected)
		var next chan jetstream.KeyWatcher // the watch being opened on a rewatch, if any
		for w != nil {
			select {
			case <-ctx.Done():
				_ = w.Stop()
				return
			case <-connected:
				// The old connection's subscription is gone.
				_ = w.Stop()
				w = openWatch(ctx, kv, last)
			case <-rewatch:
				// Open the new watch before stopping this one, which
				// may still deliver: while the cluster elects leaders
				// the opening can take seconds.
				if next == nil {
					next = make(chan jetstream.KeyWatcher, 1)
					go func(next chan<- jetstream.KeyWatcher, from uint64) { next <- openWatch(ctx, kv, from) }(next, last)
				}
			case nw := <-next:
				next = nil
				_ = w.Stop()
				w = nw
			case e, ok := <-w.Updates():
				switch {
				case !ok:
					w = openWatch(ctx, kv, last)
				case e != nil && e.Revision() > last: // not the initial-values marker, or a replay
					last = e.Revision()
					h.add(e)
				}
			}
		}
	}()
}

// startWatch opens the job-state bucket and watches it from its next
// write. A cluster just formed may still be electing the leaders of its
// streams, and a request can time out meanwhile (CI once saw "bucket
// workers: context deadline exceeded" here), so it tries again for up
// to 30 s.
func startWatch(ctx context.Context, js jetstream.JetStream, serverVersion string) (jetstream.KeyValue, jetstream.KeyWatcher, uint64, error) {
	opening, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var (
		kv   jetstream.KeyValue
		w    jetstream.KeyWatcher
		last uint64
		err  error
	)
	sandruntest.PollCtx(opening, time.Hour, func() (bool, string) {
		// Each try has its own deadline: a request the cluster drops
		// while it has no leader (CI once lost the first one and waited
		// out the whole window on it, seed 16) is sent again.
		try, cancelTry := context.WithTimeout(opening, 5*time.Second)
		defer cancelTry()
		kv, w, last, err = tryStartWatch(ctx, try, js, serverVersion)
		return err == nil, ""
	})
	return kv, w, last, err
}

func tryStartWatch(ctx, opening context.Context, js jetstream.JetStream, serverVersion string) (jetstream.KeyValue, jetstream.KeyWatcher, uint64, error) {
	st, err := jobs.OpenLayout(opening, js, serverVersion)
	if err != nil {
		return nil, nil, 0, err
	}
	status, err := st.State.Status(opening)
	if err != nil {
		return nil, nil, 0, err
	}
	bs, ok := status.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return nil, nil, 0, fmt.Errorf("bucket status %T", status)
	}
	last := bs.StreamInfo().State.LastSeq
	// The watch outlives the opening's deadline: it runs on ctx.
	w, err := st.State.Watch(ctx, ">", jetstream.ResumeFromRevision(last+1))
	if err != nil {
		return nil, nil, 0, err
	}
	return st.State, w, last, nil
}

// openWatch watches kv from the revision after last, trying again until
// it can or ctx is done (nil).
func openWatch(ctx context.Context, kv jetstream.KeyValue, last uint64) jetstream.KeyWatcher {
	var w jetstream.KeyWatcher
	sandruntest.PollCtx(ctx, time.Hour, func() (bool, string) {
		var err error
		w, err = kv.Watch(ctx, ">", jetstream.ResumeFromRevision(last+1))
		return err == nil, ""
	})
	return w
}

// barrier writes a key of the test's own to the bucket and waits until a
// watch has delivered it: every write before it has then been recorded
// (but those a watch lost while it was away, which the check reports).
func (h *chaosRun) barrier(ctx context.Context) {
	var rev uint64
	h.retry(ctx, "write the barrier", func() error {
		var err error
		rev, err = h.cl.Store().State.Put(ctx, "test.barrier", []byte("barrier"))
		return err
	})
	if ok, _ := sandruntest.PollCtx(ctx, time.Minute, func() (bool, string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		_, seen := h.revs[rev]
		return seen, ""
	}); !ok {
		h.t.Fatalf("seed %d: no watch delivered the barrier (revision %d)", h.seed, rev)
	}
}

// add records one write of the bucket, once, whichever watches saw it.
func (h *chaosRun) add(e jetstream.KeyValueEntry) {
	w := chaosWrite{rev: e.Revision(), op: e.Operation(), at: e.Created()}
	id, isRun := strings.CutPrefix(e.Key(), jobs.RunKey(""))
	if !isRun {
		id, w.result = strings.CutPrefix(e.Key(), resultKey(""))
	}
	if (isRun || w.result) && e.Operation() == jetstream.KeyValuePut {
		if w.result {
			var r chaosResult
			w.bad = json.Unmarshal(e.Value(), &r)
			w.outcome, w.why = &r.chaosOutcome, r.why()
			w.state, w.try, w.worker = r.State, r.Attempt, r.Worker
		} else {
			var r chaosRecord
			w.bad = json.Unmarshal(e.Value(), &r)
			w.state, w.try, w.worker = r.State, r.Attempt, r.Worker
			if r.Result != nil {
				w.outcome, w.why = &r.Result.chaosOutcome, r.Result.why()
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, seen := h.revs[w.rev]; seen {
		return
	}
	h.revs[w.rev] = w.at
	if isRun || w.result {
		history := h.history[id]
		i, _ := slices.BinarySearchFunc(history, w.rev, func(x chaosWrite, rev uint64) int { return cmp.Compare(x.rev, rev) })
		h.history[id] = slices.Insert(history, i, w)
	}
}
