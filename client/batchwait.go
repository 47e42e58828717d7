package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/sandrun/sandrun/internal/jobs"
)

// BatchProgress is a batch's state at one moment.
type BatchProgress struct {
	ID      string        `json:"id"`
	Total   int           `json:"total"`
	Done    int           `json:"done"`    // items that ended (have a result)
	Running int           `json:"running"` // items running now
	Counts  map[State]int `json:"counts"`  // items by state: results first, else records
	// PerSecond is the rate items ended at, from the first start to the
	// last end; ETA is the time the items left take at that rate.
	PerSecond float64       `json:"per_second"`
	ETA       time.Duration `json:"eta_ns,omitempty"`
	// Completed is the batch's last announced completion, as its record
	// held it when the batch was read.
	Completed *BatchCompletion `json:"completed,omitempty"`
	// Expired counts the items whose records were removed by their
	// retention; the counts are then the batch's completion's.
	Expired int `json:"expired,omitempty"`
}

// Succeeded reports whether every item ended and succeeded.
func (p BatchProgress) Succeeded() bool { return p.Counts[StateSucceeded] == p.Total }

// WaitOptions direct WaitBatch.
type WaitOptions struct {
	// OnItem is called once for each item that ends, in the order the
	// ends are seen, with the item's result (its Run holds only the ID,
	// state and attempt: read the spec with Status if needed). Items that had already ended when WaitBatch started
	// are reported first, so an interrupted wait started again picks up
	// where it was. An item run again (batch retry) is reported again
	// when it ends again.
	OnItem func(BatchItem)
	// OnProgress is called with the batch's progress once the items that
	// had ended are read, then at most every Interval while it changes,
	// and once at the end.
	OnProgress func(BatchProgress)
	// Interval paces OnProgress (default 500ms).
	Interval time.Duration
}

// WaitBatch follows batch id until every item has ended and returns the
// final progress. It reads each item's record and result once and then
// only what changes (one KV watch), so a tick costs nothing per item.
func (c *Client) WaitBatch(ctx context.Context, id string, o WaitOptions) (BatchProgress, error) {
	return c.followBatch(ctx, id, o, false)
}

// BatchStatus returns a batch's progress now.
func (c *Client) BatchStatus(ctx context.Context, id string) (BatchProgress, error) {
	return c.followBatch(ctx, id, WaitOptions{}, true)
}

func (c *Client) followBatch(ctx context.Context, id string, o WaitOptions, once bool) (BatchProgress, error) {
	b, err := c.store.GetBatch(ctx, id)
	// The record appears when a worker claims the batch's first item:
	// waiting for the batch waits for that too.
	for !once && errors.Is(err, jobs.ErrNotFound) {
		select {
		case <-ctx.Done():
			return BatchProgress{}, fmt.Errorf("batch %s: no item claimed yet: %w", id, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		b, err = c.store.GetBatch(ctx, id)
	}
	if errors.Is(err, jobs.ErrNotFound) {
		return BatchProgress{}, fmt.Errorf("%w (workers write a batch's record when they claim its first item)", err)
	}
	if err != nil {
		return BatchProgress{}, err
	}
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := c.store.State.Watch(ctx, jobs.RunKey(id+".*"))
	if err != nil {
		return BatchProgress{}, err
	}
	defer func() { _ = w.Stop() }()
	t := newTally(b)
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	report := func() {
		if o.OnProgress != nil {
			o.OnProgress(t.progress())
		}
	}
	initial, dirty := true, false
	for {
		select {
		case <-ctx.Done():
			return t.progress(), ctx.Err()
		case <-tick.C:
			if dirty && !initial {
				report()
				dirty = false
			}
		case e, ok := <-w.Updates():
			if !ok {
				return t.progress(), fmt.Errorf("batch %s: watch ended", id)
			}
			if e == nil { // the values that were there are read
				initial = false
				if t.completed != nil && t.seen < t.total {
					// The watch's first pass can end before every item
					// is seen: items updated while it is read are
					// delivered later, as updates. Read the unseen ones.
					if err := c.backfill(ctx, id, t); err != nil {
						return t.progress(), err
					}
				}
				if t.completeButExpired() {
					// Items' records expired after the batch completed
					// (and every item still held ended): its completion
					// holds what they ended as.
					p := t.fromCompletion()
					if o.OnProgress != nil {
						o.OnProgress(p)
					}
					return p, nil
				}
				if once {
					return t.progress(), nil
				}
				report()
				dirty = false
			} else {
				ended, err := t.apply(id, e)
				if err != nil {
					return t.progress(), err
				}
				if ended != nil && o.OnItem != nil {
					o.OnItem(*ended)
				}
				dirty = true
			}
			if !initial && t.done == t.total {
				report()
				return t.progress(), nil
			}
		}
	}
}

// backfill reads the records of the items the tally has not seen; an item
// without one (expired) stays unseen.
func (c *Client) backfill(ctx context.Context, id string, t *tally) error {
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	for idx, st := range t.state {
		if st != "" {
			continue
		}
		g.Go(func() error {
			run, _, err := c.store.GetRun(ctx, jobs.BatchItemID(id, idx))
			if errors.Is(err, jobs.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if t.state[idx] == "" { // the watch may have delivered it meanwhile
				t.applyRun(idx, run)
			}
			return nil
		})
	}
	return g.Wait()
}

// tally counts a batch's items from their records.
type tally struct {
	total, done int
	seen        int     // items with a record
	state       []State // latest record state, by index
	ended       []bool  // has a result, by index
	byState     map[State]int
	first, last time.Time
	id          string
	completed   *BatchCompletion
}

func newTally(b jobs.Batch) *tally {
	return &tally{id: b.ID, total: b.Total, completed: b.Completed, state: make([]State, b.Total), ended: make([]bool, b.Total),
		byState: map[State]int{}}
}

// apply folds one item's record in and returns the item when the record
// is the one that ended it.
func (t *tally) apply(batch string, e jetstream.KeyValueEntry) (*BatchItem, error) {
	key := e.Key()
	jid := strings.TrimPrefix(key, jobs.RunKey(""))
	idx, ok := jobs.BatchItemIndex(batch, jid)
	if !ok || idx < 0 || idx >= t.total || e.Operation() != jetstream.KeyValuePut {
		return nil, nil
	}
	var run jobs.Run
	if err := json.Unmarshal(e.Value(), &run); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return t.applyRun(idx, run), nil
}

// applyRun folds item idx's record in and returns the item when the
// record is the one that ended it.
func (t *tally) applyRun(idx int, run jobs.Run) *BatchItem {
	r := run.Result
	if r == nil {
		if t.ended[idx] { // run again: no longer ended
			t.ended[idx] = false
			t.done--
		}
		t.setState(idx, run.State)
		return nil
	}
	if t.ended[idx] {
		return nil
	}
	t.ended[idx] = true
	t.done++
	t.setState(idx, r.State)
	if !r.StartedAt.IsZero() && (t.first.IsZero() || r.StartedAt.Before(t.first)) {
		t.first = r.StartedAt
	}
	if r.FinishedAt.After(t.last) {
		t.last = r.FinishedAt
	}
	return &BatchItem{Index: idx, Run: run, Result: r}
}

func (t *tally) setState(idx int, s State) {
	if old := t.state[idx]; old != "" {
		t.byState[old]--
	} else {
		t.seen++
	}
	t.state[idx] = s
	t.byState[s]++
}

// completeButExpired reports a batch that completed and whose unseen
// items' records expired: every item still held has ended. (A batch run
// again has items held that have not.)
func (t *tally) completeButExpired() bool {
	return t.completed != nil && t.seen < t.total && t.done == t.seen
}

// fromCompletion is the progress of a completed batch whose items'
// records expired: the counts its completion recorded.
func (t *tally) fromCompletion() BatchProgress {
	p := t.progress()
	p.Counts, p.Done, p.Running = map[State]int{}, 0, 0
	for s, n := range t.completed.Counts {
		p.Counts[s] = n
		p.Done += n
	}
	p.Expired = t.total - t.seen
	p.ETA = 0
	return p
}

func (t *tally) progress() BatchProgress {
	p := BatchProgress{ID: t.id, Total: t.total, Done: t.done, Running: t.byState[StateRunning], Counts: map[State]int{}, Completed: t.completed}
	for s, n := range t.byState {
		if n > 0 {
			p.Counts[s] = n
		}
	}
	if t.done > 0 && !t.first.IsZero() && t.last.After(t.first) {
		p.PerSecond = float64(t.done) / t.last.Sub(t.first).Seconds()
		if left := t.total - t.done; left > 0 {
			p.ETA = (time.Duration(float64(left) / p.PerSecond * float64(time.Second))).Round(time.Second)
		}
	}
	return p
}
