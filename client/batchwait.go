package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// BatchProgress is a batch's state at one moment.
type BatchProgress struct {
	ID      string        `json:"id"`
	Total   int           `json:"total"`
	Done    int           `json:"done"`    // items that ended (have a result)
	Running int           `json:"running"` // items started and not ended (running, or waiting for a retry)
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
	// ends are seen, with the item's record and result (read when the
	// item ends: one read per item, which a wait without OnItem skips).
	// Items that had already ended when WaitBatch started are reported
	// first, so an interrupted wait started again picks up where it was. An item run again (batch retry) is reported again
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
// final progress. It reads the items' end markers once and then only the
// ones that come (one KV watch of small values, never the items'
// records), and counts the items started on the server once per report:
// a tick costs nothing per item.
func (c *Client) WaitBatch(ctx context.Context, id string, o WaitOptions) (BatchProgress, error) {
	b, err := c.store.GetBatch(ctx, id)
	// The record appears when a worker claims the batch's first item:
	// waiting for the batch waits for that too.
	for errors.Is(err, jobs.ErrNotFound) {
		select {
		case <-ctx.Done():
			return BatchProgress{}, fmt.Errorf("batch %s: no item claimed yet: %w", id, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		b, err = c.store.GetBatch(ctx, id)
	}
	if err != nil {
		return BatchProgress{}, err
	}
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := c.store.State.Watch(ctx, jobs.BatchEndsFilter(id, ""))
	if err != nil {
		return BatchProgress{}, err
	}
	defer func() { _ = w.Stop() }()
	t := newTally(b)
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	report := func() (BatchProgress, error) {
		recorded, err := c.store.CountKeys(ctx, jobs.RunKey(id+".*"))
		if err != nil {
			return BatchProgress{}, err
		}
		p := t.progress(recorded, c.now())
		if o.OnProgress != nil {
			o.OnProgress(p)
		}
		return p, nil
	}
	initial, dirty := true, false
	for {
		select {
		case <-ctx.Done():
			return t.progress(0, c.now()), ctx.Err()
		case <-tick.C:
			if dirty && !initial {
				if _, err := report(); err != nil {
					return BatchProgress{}, err
				}
				dirty = false
			}
		case e, ok := <-w.Updates():
			if !ok {
				return t.progress(0, c.now()), fmt.Errorf("batch %s: watch ended", id)
			}
			if e == nil { // the markers that were there are read
				initial = false
				if t.expired() {
					// The items ended, and their records and markers
					// expired: the batch's completion holds what they
					// ended as.
					p := t.fromCompletion(c.now())
					if o.OnProgress != nil {
						o.OnProgress(p)
					}
					return p, nil
				}
				if _, err := report(); err != nil {
					return BatchProgress{}, err
				}
				dirty = false
			} else if ended := t.apply(id, e); ended != nil {
				if o.OnItem != nil {
					// The marker says how the item ended; its record
					// holds the result whole (one read per item that
					// ends, only for a caller that asks for items).
					if run, _, err := c.store.GetRun(ctx, ended.Run.Spec.ID); err == nil && run.Result != nil {
						ended.Run, ended.Result = run, run.Result
					}
					o.OnItem(*ended)
				}
				dirty = true
			}
			if !initial && t.done() == t.total {
				return report()
			}
		}
	}
}

// BatchStatus returns a batch's progress now, from counts the server
// keeps: a fixed number of requests whatever the batch's size.
func (c *Client) BatchStatus(ctx context.Context, id string) (BatchProgress, error) {
	b, err := c.store.GetBatch(ctx, id)
	if errors.Is(err, jobs.ErrNotFound) {
		return BatchProgress{}, fmt.Errorf("%w (workers write a batch's record when they claim its first item)", err)
	}
	if err != nil {
		return BatchProgress{}, err
	}
	counts, err := c.store.CountBatch(ctx, id)
	if err != nil {
		return BatchProgress{}, err
	}
	t := newTally(b)
	t.counts = counts.Ended
	if t.expired() {
		return t.fromCompletion(c.now()), nil
	}
	return t.progress(counts.Recorded, c.now()), nil
}

// tally follows a batch's ended items.
type tally struct {
	id        string
	total     int
	created   time.Time
	completed *BatchCompletion
	ended     map[string]State // by item suffix, from a watch of the markers
	counts    map[State]int    // items by end state
}

func newTally(b jobs.Batch) *tally {
	return &tally{id: b.ID, total: b.Total, created: b.CreatedAt, completed: b.Completed,
		ended: map[string]State{}, counts: map[State]int{}}
}

func (t *tally) done() int {
	n := 0
	for _, v := range t.counts {
		n += v
	}
	return n
}

// apply folds one end marker in and returns the item it ended, or nil.
// A marker removed (the item is run again) opens its item again.
func (t *tally) apply(batch string, e jetstream.KeyValueEntry) *BatchItem {
	b, state, suffix, ok := jobs.ParseBatchEndKey(e.Key())
	if !ok || b != batch {
		return nil
	}
	idx, ok := jobs.BatchItemIndex(batch, batch+"."+suffix)
	if !ok || idx < 0 || idx >= t.total {
		return nil
	}
	if e.Operation() != jetstream.KeyValuePut {
		if t.ended[suffix] == state {
			delete(t.ended, suffix)
			t.counts[state]--
		}
		return nil
	}
	if old, ok := t.ended[suffix]; ok {
		if old == state {
			return nil
		}
		t.counts[old]--
	}
	t.ended[suffix] = state
	t.counts[state]++
	var m jobs.BatchEnd
	_ = json.Unmarshal(e.Value(), &m)
	jid := jobs.BatchItemID(batch, idx)
	r := &jobs.Result{JobID: jid, State: state, Attempt: m.Attempt, ExitCode: m.ExitCode, StartedAt: m.StartedAt, FinishedAt: m.FinishedAt}
	if !m.StartedAt.IsZero() && !m.FinishedAt.IsZero() {
		r.WallSeconds = m.FinishedAt.Sub(m.StartedAt).Seconds()
	}
	return &BatchItem{Index: idx, Run: jobs.Run{Spec: jobs.Spec{ID: jid}, State: state, Attempt: m.Attempt}, Result: r}
}

// expired reports a batch that completed and whose items' markers have
// expired since (a rerun clears the completion, so a completed batch
// with fewer ends counted has lost them to its retention).
func (t *tally) expired() bool {
	return t.completed != nil && t.done() < t.total
}

// fromCompletion is the progress of a completed batch whose items'
// records expired: the counts its completion recorded.
func (t *tally) fromCompletion(now time.Time) BatchProgress {
	p := BatchProgress{ID: t.id, Total: t.total, Counts: map[State]int{}, Completed: t.completed}
	for s, n := range t.completed.Counts {
		p.Counts[s] = n
		p.Done += n
	}
	p.Expired = t.total - t.done()
	p.PerSecond = t.rate(p.Done, now)
	return p
}

// progress is the batch's progress, given how many of its items have a
// record (were claimed at least once; 0 when not known).
func (t *tally) progress(recorded int, now time.Time) BatchProgress {
	done := t.done()
	p := BatchProgress{ID: t.id, Total: t.total, Done: done, Counts: map[State]int{}, Completed: t.completed}
	for s, n := range t.counts {
		if n > 0 {
			p.Counts[s] = n
		}
	}
	if recorded > done {
		p.Running = min(recorded, t.total) - done
		p.Counts[StateRunning] = p.Running
	}
	if queued := t.total - max(recorded, done); recorded > 0 && queued > 0 {
		p.Counts[StateQueued] = queued
	}
	p.PerSecond = t.rate(done, now)
	if left := t.total - done; left > 0 && p.PerSecond > 0 {
		p.ETA = (time.Duration(float64(left) / p.PerSecond * float64(time.Second))).Round(time.Second)
	}
	return p
}

// rate is how many items ended per second since the batch's first claim
// (until its completion, once it completed).
func (t *tally) rate(done int, now time.Time) float64 {
	end := now
	if t.completed != nil && !t.completed.At.IsZero() {
		end = t.completed.At
	}
	if done == 0 || t.created.IsZero() || !end.After(t.created) {
		return 0
	}
	return float64(done) / end.Sub(t.created).Seconds()
}
