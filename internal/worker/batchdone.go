package worker

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

	"github.com/sandrun/sandrun/internal/jobs"
)

// The reaper leader announces each batch's completion: it follows the
// batch records (batch.<id>) alone, and every batchTick counts, for each
// batch not completed yet, its items' end markers (one request, answered
// by the server whatever the batch's size; see jobs.CountBatch). When
// every item has ended it publishes a batch_completed event on
// sandrun.events.<batch>.batch_completed and records the completion in
// the batch record. The event's message ID is the record's revision, so a
// second leader, or a retry after a failed record update, announces the
// same completion once. A rerun of items clears the record's completion
// (the batch is open again); its next completion is a new one.

// EventBatchCompleted is the kind of a batch's completion event.
const EventBatchCompleted = "batch_completed"

// batchTick is how often open batches are counted.
const batchTick = time.Second

// batchState is what the announcer knows of one batch.
type batchState struct {
	rec    jobs.Batch
	recRev uint64
	// The reconciliation backstop: done as last counted, since when it
	// has not moved, and when the batch may be reconciled next.
	done      int
	stuck     time.Time
	reconcile time.Time
	backoff   time.Duration
}

// announceBatches runs until ctx is done, restarting its watch (and
// rebuilding its state) when the watch ends.
func (w *Worker) announceBatches(ctx context.Context) {
	for ctx.Err() == nil {
		if err := w.followBatches(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("batch completions: watch ended", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (w *Worker) followBatches(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kw, err := w.store.State.Watch(ctx, jobs.BatchKey("*"))
	if err != nil {
		return err
	}
	defer func() { _ = kw.Stop() }()
	open := map[string]*batchState{}
	t := time.NewTicker(min(batchTick, w.cfg.ReaperScan))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			for id, b := range open {
				if ctx.Err() != nil {
					return nil
				}
				if w.maybeAnnounce(ctx, id, b) {
					delete(open, id)
				}
			}
		case e, ok := <-kw.Updates():
			if !ok {
				return errors.New("watch closed")
			}
			if e == nil {
				continue
			}
			id := strings.TrimPrefix(e.Key(), "batch.")
			var rec jobs.Batch
			if e.Operation() != jetstream.KeyValuePut {
				delete(open, id)
				continue
			}
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				w.log.Warn("batch completions: bad batch record", "key", e.Key(), "err", err)
				continue
			}
			if rec.Completed != nil || rec.Total <= 0 {
				delete(open, id)
				continue
			}
			open[id] = &batchState{rec: rec, recRev: e.Revision()}
		}
	}
}

// maybeAnnounce publishes b's completion if every item has ended, and
// reports whether the batch is done with (announced, or gone).
func (w *Worker) maybeAnnounce(ctx context.Context, id string, b *batchState) bool {
	rec := b.rec
	done, err := w.store.CountKeys(ctx, jobs.BatchEndsFilter(id, ""))
	if err != nil {
		w.log.Warn("batch completions: count", "batch", id, "err", err)
		return false
	}
	if done < rec.Total {
		w.maybeReconcile(ctx, id, b, done)
		return false
	}
	c, err := w.store.CountBatch(ctx, id)
	if err != nil {
		w.log.Warn("batch completions: count", "batch", id, "err", err)
		return false
	}
	if c.Done() < rec.Total {
		return false // an item was opened again between the counts
	}
	now := w.now().UTC()
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(c.Ended)) {
		parts = append(parts, fmt.Sprintf("%s %d", s, c.Ended[s]))
	}
	ev := jobs.Event{Kind: EventBatchCompleted, JobID: id, Time: now,
		Message: fmt.Sprintf("%d items: %s", rec.Total, strings.Join(parts, ", "))}
	data, err := json.Marshal(ev)
	if err != nil {
		return false
	}
	// The message ID makes a second announcement of the same completion
	// (a new leader, a failed record update) a duplicate.
	msgID := fmt.Sprintf("batchdone.%s.%d", id, b.recRev)
	ack, err := w.store.JS.Publish(ctx, jobs.EventSubject(id, EventBatchCompleted), data, jetstream.WithMsgID(msgID))
	if err != nil {
		w.log.Warn("batch completions: publish", "batch", id, "err", err)
		return false
	}
	next := rec
	next.Completed = &jobs.BatchCompletion{At: now, LastFinished: now, Counts: c.Ended}
	val, err := json.Marshal(next)
	if err != nil {
		return false
	}
	if _, err := w.store.State.Update(ctx, jobs.BatchKey(id), val, b.recRev); err != nil {
		// Changed meanwhile (a rerun opened it again): the watch brings
		// the new record. Failed otherwise: tried again at the next tick,
		// and the event's ID keeps a second announcement of this
		// completion out.
		w.log.Info("batch completions: record update", "batch", id, "err", err)
		return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || jobs.IsExists(err)
	}
	if !ack.Duplicate {
		w.m.BatchesDone.Inc()
		w.log.Info("batch completed", "batch", id, "items", rec.Total, "counts", ev.Message)
	}
	return true
}

// A batch item's end marker that was never written is the reaper's to
// write once the item's lease is gone (repairBatchEnds), from its watch of
// the commits. A commit that watch never delivered (it restarted across a
// server's restart, say) would leave the batch short of one end for good:
// as a backstop, a batch whose every item has a record and whose count of
// ends has not moved for a while is reconciled — its records without a
// marker are read, and those that ended get theirs. The wait doubles each
// time nothing was missing, up to reconcileMax, so a batch waiting on a
// long last item costs a listing of its keys now and then, not each tick.
const reconcileMax = 30 * time.Minute

// reconcileAfter is how long a batch's count of ends must stand still
// before it is reconciled: two lease TTLs and two reaper passes, by which
// time the reaper has repaired what its watch saw.
func (w *Worker) reconcileAfter() time.Duration { return 2*w.cfg.LeaseTTL + 2*w.cfg.ReaperScan }

// maybeReconcile runs the backstop for batch id, counted done.
func (w *Worker) maybeReconcile(ctx context.Context, id string, b *batchState, done int) {
	now := w.now()
	if done != b.done || b.stuck.IsZero() {
		b.done, b.stuck, b.backoff = done, now, 0
		b.reconcile = now.Add(w.reconcileAfter())
		return
	}
	if now.Before(b.reconcile) {
		return
	}
	recorded, err := w.store.CountKeys(ctx, jobs.RunKey(id+".*"))
	if err != nil || recorded < b.rec.Total {
		b.reconcile = now.Add(w.reconcileAfter()) // items not claimed yet: nothing to reconcile
		return
	}
	repaired, err := w.reconcileBatch(ctx, id)
	if err != nil {
		w.log.Warn("batch completions: reconcile", "batch", id, "err", err)
	}
	if repaired > 0 {
		b.backoff = 0
	} else {
		b.backoff = min(max(2*b.backoff, w.reconcileAfter()), reconcileMax)
	}
	b.reconcile = now.Add(max(b.backoff, w.reconcileAfter()))
}

// reconcileBatch writes the missing end markers of batch id's ended items
// and returns how many it wrote.
func (w *Worker) reconcileBatch(ctx context.Context, id string) (int, error) {
	marked := map[string]bool{}
	ml, err := w.store.State.ListKeysFiltered(ctx, jobs.BatchEndsFilter(id, ""))
	if err != nil {
		return 0, err
	}
	for k := range ml.Keys() {
		if _, _, suffix, ok := jobs.ParseBatchEndKey(k); ok {
			marked[suffix] = true
		}
	}
	rl, err := w.store.State.ListKeysFiltered(ctx, jobs.RunKey(id+".*"))
	if err != nil {
		return 0, err
	}
	var unmarked []string
	for k := range rl.Keys() {
		if suffix, ok := strings.CutPrefix(k, jobs.RunKey(id+".")); ok && !marked[suffix] {
			unmarked = append(unmarked, id+"."+suffix)
		}
	}
	repaired := 0
	for _, jid := range unmarked {
		run, _, err := w.store.GetRun(ctx, jid)
		if err != nil || run.Result == nil || !run.State.Terminal() {
			continue // running, waiting for a retry, or gone
		}
		if ok, err := w.store.MarkBatchEnd(ctx, run); err != nil || !ok {
			continue
		}
		repaired++
		w.m.ReaperRecovered.WithLabelValues("batch_end").Inc()
		w.log.Warn("batch completions: wrote a missing end marker the reaper had not seen go missing", "job", jid, "state", run.State)
	}
	return repaired, nil
}
