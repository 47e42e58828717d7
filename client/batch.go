package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// BatchOptions shape a batch submit.
type BatchOptions struct {
	// ID names the batch; a re-submit with the same ID and items creates
	// nothing twice. Required (the CLI derives one from the input).
	ID string
	// Labels are added to every item.
	Labels map[string]string
	// InFlight bounds the writes awaiting JetStream's acknowledgement
	// (default 4096).
	InFlight int
	// MaxParallel bounds how many items run at once across all workers
	// (0: no bound beyond the workers' slots).
	MaxParallel int
}

// BatchSubmit reports a batch submit.
type BatchSubmit struct {
	Batch     jobs.Batch
	Submitted int // items recorded by this submit
	Existing  int // items already recorded (an earlier submit)
}

// SubmitBatch validates every item, then publishes its items
// asynchronously, at most InFlight writes unacknowledged; the batch record
// appears with the first claim. Item i
// is job BATCH.i (six digits at least), its message deduplicated by that ID: running the same
// submit again (after a crash half-way, say) records nothing twice and
// republishes the items whose message may have been lost.
func (c *Client) SubmitBatch(ctx context.Context, o BatchOptions, items []jobs.Spec) (BatchSubmit, error) {
	if err := jobs.CheckBatchID(o.ID); err != nil {
		return BatchSubmit{}, err
	}
	if len(items) == 0 {
		return BatchSubmit{}, errors.New("batch: no items")
	}
	if o.MaxParallel < 0 {
		return BatchSubmit{}, fmt.Errorf("batch.max_parallel: must be 0 (no bound) or more, got %d", o.MaxParallel)
	}
	if o.InFlight <= 0 {
		o.InFlight = 4096
	}
	now := c.now().UTC()
	specs := make([]jobs.Spec, len(items))
	for i, it := range items {
		s := it.WithDefaults()
		if s.ID != "" {
			return BatchSubmit{}, fmt.Errorf("item %d: id: batch items are named by the batch (%s)", i, jobs.BatchItemID(o.ID, i))
		}
		s.ID = jobs.BatchItemID(o.ID, i)
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		maps.Copy(s.Labels, o.Labels)
		s.Labels[jobs.LabelBatch] = o.ID
		s.Labels[jobs.LabelBatchIndex] = fmt.Sprint(i)
		s.Labels[jobs.LabelBatchTotal] = fmt.Sprint(len(items))
		if o.MaxParallel > 0 {
			s.Labels[jobs.LabelBatchMaxParallel] = fmt.Sprint(o.MaxParallel)
		}
		if s.Origin == "" {
			s.Origin = jobs.OriginBatch
		}
		if s.SubmittedAt.IsZero() {
			s.SubmittedAt = now
		}
		s, err := c.Seal(ctx, s)
		if err != nil {
			return BatchSubmit{}, fmt.Errorf("item %d: %w", i, err)
		}
		if err := s.Validate(); err != nil {
			return BatchSubmit{}, fmt.Errorf("item %d: %w", i, err)
		}
		specs[i] = s
	}
	// The batch record is written by the worker that first claims one of
	// its items (from the items' labels): submitters write no record.
	b := jobs.Batch{ID: o.ID, Owner: c.owner, Total: len(specs), Queue: specs[0].Queue, Labels: o.Labels, CreatedAt: now, MaxParallel: o.MaxParallel}
	res := BatchSubmit{Batch: b}
	ring := make([]jetstream.PubAckFuture, min(o.InFlight, len(specs))) // the writes in flight, oldest first by i
	settle := func(f jetstream.PubAckFuture) error {
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				res.Existing++
			} else {
				res.Submitted++
			}
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	for i, s := range specs {
		slot := &ring[i%len(ring)]
		if i >= len(ring) { // the slot's previous write must land first
			if err := settle(*slot); err != nil {
				return res, err
			}
		}
		f, err := c.store.PublishJobAsync(s, c.owner, s.ID)
		if err != nil {
			return res, err
		}
		*slot = f
	}
	for i := max(0, len(specs)-len(ring)); i < len(specs); i++ {
		if err := settle(ring[i%len(ring)]); err != nil {
			return res, err
		}
	}
	return res, nil
}

// BatchItem is one item of a batch as it stands.
type BatchItem struct {
	Index  int
	Run    jobs.Run
	Result *jobs.Result
}

// State is the item's current state.
func (i BatchItem) State() jobs.State {
	if i.Result != nil {
		return i.Result.State
	}
	return i.Run.State
}

// BatchView is a batch's record and its items, by index.
type BatchView struct {
	Batch jobs.Batch
	Items []BatchItem // index order; items not recorded yet are absent
}

// Counts returns the number of items in each state.
func (v BatchView) Counts() map[jobs.State]int {
	out := map[jobs.State]int{}
	for _, it := range v.Items {
		out[it.State()]++
	}
	return out
}

// Done returns how many items have ended.
func (v BatchView) Done() int {
	n := 0
	for _, it := range v.Items {
		if it.State().Terminal() {
			n++
		}
	}
	return n
}

// Batch reads a batch and every item's record and result with two KV
// watches (one pass over the keys each, not one request per item).
func (c *Client) Batch(ctx context.Context, id string) (BatchView, error) {
	b, err := c.store.GetBatch(ctx, id)
	if errors.Is(err, jobs.ErrNotFound) {
		return BatchView{}, fmt.Errorf("%w (workers write a batch's record when they claim its first item)", err)
	}
	if err != nil {
		return BatchView{}, err
	}
	items := map[int]*BatchItem{}
	item := func(key, prefix string) (*BatchItem, bool) {
		jid := strings.TrimPrefix(key, prefix)
		idx, ok := jobs.BatchItemIndex(id, jid)
		if !ok {
			return nil, false
		}
		if items[idx] == nil {
			items[idx] = &BatchItem{Index: idx}
		}
		return items[idx], true
	}
	err = c.scan(ctx, jobs.RunKey(id+".*"), func(key string, value []byte) error {
		it, ok := item(key, "run.")
		if !ok {
			return nil
		}
		if err := json.Unmarshal(value, &it.Run); err != nil {
			return err
		}
		it.Result = it.Run.Result
		return nil
	})
	if err != nil {
		return BatchView{}, err
	}
	v := BatchView{Batch: b, Items: make([]BatchItem, 0, len(items))}
	for _, idx := range slices.Sorted(maps.Keys(items)) {
		v.Items = append(v.Items, *items[idx])
	}
	return v, nil
}

// BatchPage reads the items of batch id with indexes [from, from+limit)
// and returns them with the index of the next page (-1 after the last):
// one read per item, so a page costs its size, not the batch's. Items
// with no record (not claimed yet, or expired after the batch ended)
// are absent, as in Batch.
func (c *Client) BatchPage(ctx context.Context, id string, from, limit int) (BatchView, int, error) {
	b, err := c.store.GetBatch(ctx, id)
	if err != nil {
		return BatchView{}, -1, err
	}
	if from < 0 || limit < 1 {
		return BatchView{}, -1, fmt.Errorf("batch page: from %d, limit %d: want from >= 0 and limit >= 1", from, limit)
	}
	end := min(from+limit, b.Total)
	items := make([]*BatchItem, max(end-from, 0))
	var g errgroup.Group
	g.SetLimit(8)
	for i := range items {
		g.Go(func() error {
			run, _, err := c.store.GetRun(ctx, jobs.BatchItemID(id, from+i))
			if errors.Is(err, jobs.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			run.Spec = run.Spec.Redacted()
			items[i] = &BatchItem{Index: from + i, Run: run, Result: run.Result}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return BatchView{}, -1, err
	}
	v := BatchView{Batch: b}
	for _, it := range items {
		if it != nil {
			v.Items = append(v.Items, *it)
		}
	}
	next := end
	if next >= b.Total {
		next = -1
	}
	return v, next, nil
}

// scan calls f with the latest value of every key matching filter.
func (c *Client) scan(ctx context.Context, filter string, f func(key string, value []byte) error) error {
	w, err := c.store.State.Watch(ctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	defer func() { _ = w.Stop() }()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	// A key written while the watch starts can come after the end-of-
	// initial-values marker (its earlier value is no longer the last one):
	// read on until the updates pause.
	var settle <-chan time.Time
	for {
		select {
		case <-settle:
			return nil
		case e := <-w.Updates():
			if e == nil {
				settle = time.After(50 * time.Millisecond)
				continue
			}
			if err := f(e.Key(), e.Value()); err != nil {
				return fmt.Errorf("%s: %w", e.Key(), err)
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("scan %s: no end of the initial values within 30s", filter)
		}
	}
}

// failedStates are the outcomes `batch retry --failed` runs again.
var failedStates = []jobs.State{jobs.StateFailed, jobs.StateTimedOut, jobs.StateDead, jobs.StateCanceled}

// RetryFailed runs again every ended item of batch id that did not
// succeed (failed, timed out, dead, canceled), with a fresh attempt
// budget, and returns how many. It takes every such item's lease before
// it runs any of them again, so no retried item can end — and the batch
// look complete — before all of them are open again. (A worker offered a
// retried item meanwhile puts it back for half its lease TTL.)
func (c *Client) RetryFailed(ctx context.Context, id string) (int, error) {
	v, err := c.Batch(ctx, id)
	if err != nil {
		return 0, err
	}
	var again []string
	for _, it := range v.Items {
		if it.Result != nil && slices.Contains(failedStates, it.Result.State) {
			again = append(again, it.Run.Spec.ID)
		}
	}
	held := make([]*lease.Lease, 0, len(again))
	defer func() {
		for _, l := range held {
			c.release(ctx, l)
		}
	}()
	for _, jid := range again {
		l, err := c.acquireLease(ctx, jid, 10*time.Second)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", jid, err)
		}
		held = append(held, l)
	}
	for i, jid := range again {
		if err := c.requeueHeld(ctx, jid, rerunMsgID(jid), rerunCheck(jid)); err != nil {
			return i, err
		}
	}
	return len(again), nil
}

// Rerun runs an ended job again under its ID with a fresh attempt
// budget: its result is cleared, its record reset to queued and its
// message published again. It works under the job's lease.
func (c *Client) Rerun(ctx context.Context, id string) error {
	return c.requeue(ctx, id, rerunMsgID(id), rerunCheck(id))
}

// rerunMsgID names a rerun's message after the revision of the record it
// reset, so that each rerun is a new message and a repeated request for
// the same one is not.
func rerunMsgID(id string) func(rev uint64) string {
	return func(rev uint64) string { return fmt.Sprintf("%s.rerun.%d", id, rev) }
}

func rerunCheck(id string) func(jobs.Run) (string, error) {
	return func(r jobs.Run) (string, error) {
		if !r.State.Terminal() {
			return "", fmt.Errorf("rerun %s: job is %s, not ended", id, r.State)
		}
		return "run again after: " + string(r.State), nil
	}
}

// CancelBatch cancels every item of a batch that has not ended and
// returns how many it asked to stop.
func (c *Client) CancelBatch(ctx context.Context, id string) (int, error) {
	v, err := c.Batch(ctx, id)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, it := range v.Items {
		if it.State().Terminal() {
			continue
		}
		if _, err := c.Cancel(ctx, it.Run.Spec.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
