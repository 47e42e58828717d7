package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// ListFilter selects jobs for List.
type ListFilter struct {
	State jobs.State // empty: any
	Queue string     // empty: any
	Limit int        // 0: 1000
	// Continue is a previous page's Next: the page after it.
	Continue string
}

// Page is one page of List: the jobs, most recently changed first, and
// the token of the next page ("" after the last).
type Page struct {
	Jobs []Status
	Next string
}

// List returns the first page of job records matching f, most recently
// changed first.
func (c *Client) List(ctx context.Context, f ListFilter) ([]Status, error) {
	p, err := c.ListPage(ctx, f)
	return p.Jobs, err
}

// ListPage returns one page of the job records matching f, most
// recently changed first. It reads the jobstate stream backwards in
// windows from the newest record (or from f.Continue), so a page costs
// what it reads, not the number of jobs retained. A job changed while
// the first page is read is on it: its old record may be gone before
// the walk reaches it, so the records written meanwhile are read last.
// A job changed between two pages may show on both, or on neither.
func (c *Client) ListPage(ctx context.Context, f ListFilter) (Page, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	stream, err := c.store.Stream(ctx, "KV_"+jobs.BucketState)
	if err != nil {
		return Page{}, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return Page{}, err
	}
	found, err := c.walkPage(ctx, f, info.State)
	if err != nil || f.Continue != "" {
		return pageOf(found, f.Limit, max(info.State.FirstSeq, 1)), err
	}
	// The first page: add what changed while it was read.
	start := info.State.LastSeq + 1
	if info, err = stream.Info(ctx); err != nil {
		return Page{}, err
	}
	if info.State.LastSeq >= start {
		changed, err := c.readRecords(ctx, start, info.State.LastSeq+1)
		if err != nil {
			return Page{}, err
		}
		found = mergeChanged(found, changed, f)
	}
	return pageOf(found, f.Limit, max(info.State.FirstSeq, 1)), nil
}

// walkPage reads the records of f's page, newest first: at most
// f.Limit of them, below the sequence f.Continue names, or below st's
// last.
func (c *Client) walkPage(ctx context.Context, f ListFilter, st jetstream.StreamState) ([]seqStatus, error) {
	hi := st.LastSeq + 1 // read below hi
	if f.Continue != "" {
		before, err := strconv.ParseUint(f.Continue, 10, 64)
		if err != nil || before == 0 {
			return nil, fmt.Errorf("continue: %q is not a page token of sandrun ls", f.Continue)
		}
		hi = min(hi, before)
	}
	first := max(st.FirstSeq, 1)
	var out []seqStatus
	window := uint64(4 * f.Limit)
	for hi > first && len(out) < f.Limit {
		lo := max(first, hi-min(window, hi-first))
		found, err := c.readRecords(ctx, lo, hi)
		if err != nil {
			return nil, err
		}
		slices.Reverse(found) // newest first
		out = append(out, keep(found, f)...)
		hi = lo
		window *= 2
	}
	return out, nil
}

// keep returns the records of found that f selects.
func keep(found []seqStatus, f ListFilter) []seqStatus {
	return slices.DeleteFunc(found, func(st seqStatus) bool { return !f.selects(st.Status) })
}

func (f ListFilter) selects(st Status) bool {
	return (f.State == "" || st.State() == f.State) && (f.Queue == "" || st.Run.Spec.Queue == f.Queue)
}

// mergeChanged puts the records written during a walk (oldest first)
// that f selects before what the walk found (newest first): each job
// once, as its newest record has it.
func mergeChanged(found, changed []seqStatus, f ListFilter) []seqStatus {
	seen := make(map[string]bool, len(changed))
	out := make([]seqStatus, 0, len(changed)+len(found))
	for _, st := range slices.Backward(changed) {
		if !seen[st.Run.Spec.ID] {
			seen[st.Run.Spec.ID] = true
			if f.selects(st.Status) {
				out = append(out, st)
			}
		}
	}
	for _, st := range found {
		if !seen[st.Run.Spec.ID] {
			seen[st.Run.Spec.ID] = true
			out = append(out, st)
		}
	}
	return out
}

// pageOf makes the page of the first limit records of found (newest
// first); its Next is the sequence of its last record, unless that is
// the stream's first.
func pageOf(found []seqStatus, limit int, first uint64) Page {
	var p Page
	for _, st := range found[:min(limit, len(found))] {
		p.Jobs = append(p.Jobs, st.Status)
	}
	if len(found) >= limit && limit > 0 {
		if last := found[limit-1].seq; last > first {
			p.Next = strconv.FormatUint(last, 10)
		}
	}
	return p
}

type seqStatus struct {
	Status
	seq uint64
}

// readRecords reads the job records stored at sequences [lo, hi) of the
// jobstate stream, oldest first (one ordered consumer: the server skips
// what was replaced or removed).
func (c *Client) readRecords(ctx context.Context, lo, hi uint64) ([]seqStatus, error) {
	var out []seqStatus
	err := c.walkRecords(ctx, lo, hi, false, func(seq uint64, _ time.Time, run jobs.Run) (bool, error) {
		out = append(out, seqStatus{Status: Status{Run: run, Result: run.Result}, seq: seq})
		return true, nil
	})
	return out, err
}

// DLQ returns the dead-letter entries, oldest first.
func (c *Client) DLQ(ctx context.Context) ([]jobs.DLQEntry, error) {
	st, err := c.store.Stream(ctx, jobs.StreamDLQ)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	var out []jobs.DLQEntry
	for uint64(len(out)) < info.State.Msgs {
		batch, err := cons.Fetch(int(min(info.State.Msgs-uint64(len(out)), 256)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			var e jobs.DLQEntry
			if err := json.Unmarshal(m.Data(), &e); err == nil {
				out = append(out, e)
			}
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}

// RetryDLQ resubmits a dead job with a fresh attempt budget and removes
// its DLQ entry. Entries that were never valid jobs cannot be retried. It
// works under the job's lease, so it cannot interleave with a worker or the
// reaper still finishing the job.
func (c *Client) RetryDLQ(ctx context.Context, id string) error {
	e, seq, err := c.store.GetDLQ(ctx, id)
	if err != nil {
		return err
	}
	if e.Spec == nil {
		return fmt.Errorf("dlq %s: not a valid job (%s); nothing to retry", id, e.Reason)
	}
	err = c.requeue(ctx, id, func(uint64) string { return fmt.Sprintf("%s.dlq.%d", id, seq) }, func(r jobs.Run) (string, error) {
		if r.State != jobs.StateDead {
			return "", fmt.Errorf("dlq %s: job is %s, not dead", id, r.State)
		}
		return "retried from the DLQ after: " + r.LastError, nil
	})
	if err != nil {
		return err
	}
	st, err := c.store.Stream(ctx, jobs.StreamDLQ)
	if err != nil {
		return err
	}
	return st.DeleteMsg(ctx, seq)
}

// requeue runs an ended job again under its lease: check accepts the
// record (and words its new last error), the result is cleared, the record
// reset to queued with a fresh attempt budget (the stored spec kept: a DLQ
// copy has secrets redacted), and the job published again as msgID.
func (c *Client) requeue(ctx context.Context, id string, msgID func(rev uint64) string, check func(jobs.Run) (string, error)) error {
	l, err := c.acquireLease(ctx, id, 10*time.Second)
	if err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	defer c.release(ctx, l)
	return c.requeueHeld(ctx, id, msgID, check)
}

// release lets go of a lease, even when ctx is done.
func (c *Client) release(ctx context.Context, l *lease.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = l.Release(rctx)
}

// requeueHeld is requeue for a caller that holds the job's lease.
func (c *Client) requeueHeld(ctx context.Context, id string, msgID func(rev uint64) string, check func(jobs.Run) (string, error)) error {
	run, rev, err := c.store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	lastErr, err := check(run)
	if err != nil {
		return err
	}
	// Publish first: while we hold the lease a claim of the message
	// waits, then finds the job queued; had we died before the record
	// changed, the claim drops the message and the job stays ended (run
	// it again), never queued without a message.
	if err := c.store.PublishJob(ctx, run.Spec, run.OwnerString(), msgID(rev)); err != nil {
		return err
	}
	ended := run.Result != nil
	run.State, run.Attempt, run.Result = jobs.StateQueued, 0, nil
	run.UpdatedAt = c.now().UTC()
	run.LastError = lastErr
	if ended {
		run.Reruns++
	}
	if _, err = c.store.UpdateRun(ctx, run, rev); err != nil {
		return err
	}
	// A batch item open again is no longer counted as ended, and its
	// batch is no longer complete. (Had we died before this, the item's
	// next end removes its earlier marker.)
	if !ended {
		return nil
	}
	if err := c.store.UnmarkBatchEnd(ctx, run.Spec); err != nil {
		return err
	}
	return c.store.ReopenBatch(ctx, run.Spec)
}

// acquireLease takes job id's lease, waiting up to wait for a holder that
// is finishing to let go.
func (c *Client) acquireLease(ctx context.Context, id string, wait time.Duration) (*lease.Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := lease.Acquire(ctx, c.store.JS, c.store.State, jobs.LeaseKey(id), 30*time.Second, []byte(`{"client":true}`))
		if err == nil || !errors.Is(err, lease.ErrHeld) || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
