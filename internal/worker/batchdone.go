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

// The reaper leader announces each batch's completion: it follows batch
// records (batch.<id>) and batch items' results (result.<batch>.<index>)
// in one KV watch, keeps which items have ended, and when the last one
// ends publishes a batch_completed event on
// sandrun.events.<batch>.batch_completed and records it in the batch
// record. State is rebuilt from the bucket whenever the watch starts, and
// items are marked, not counted, so a replay or a second leader cannot
// count an item twice. A rerun deletes the item's result (open again);
// its next end is a new completion, told apart by its last end time.

// EventBatchCompleted is the kind of a batch's completion event.
const EventBatchCompleted = "batch_completed"

// batchState is what the announcer knows of one batch.
type batchState struct {
	rec    *jobs.Batch // nil until its record is seen
	recRev uint64
	states []jobs.State // by index; "" until the item's result is seen
	done   int
	last   time.Time // latest item end
}

func (b *batchState) set(idx int, s jobs.State) {
	if idx >= len(b.states) {
		b.states = append(b.states, make([]jobs.State, idx+1-len(b.states))...)
	}
	switch {
	case b.states[idx] == "" && s != "":
		b.done++
	case b.states[idx] != "" && s == "":
		b.done--
	}
	b.states[idx] = s
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
	kw, err := w.store.State.WatchFiltered(ctx, []string{jobs.BatchKey("*"), jobs.RunKey("*.*")})
	if err != nil {
		return err
	}
	defer func() { _ = kw.Stop() }()
	batches := map[string]*batchState{}
	get := func(id string) *batchState {
		b := batches[id]
		if b == nil {
			b = &batchState{}
			batches[id] = b
		}
		return b
	}
	initial := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-kw.Updates():
			if !ok {
				return errors.New("watch closed")
			}
			if e == nil {
				initial = false
				for id, b := range batches {
					w.maybeAnnounce(ctx, id, b)
				}
				continue
			}
			id := w.applyBatchEntry(e, get, batches)
			if b := batches[id]; b != nil && !initial {
				w.maybeAnnounce(ctx, id, b)
			}
		}
	}
}

// applyBatchEntry folds one batch or job record into batches and returns the
// batch it belongs to.
func (w *Worker) applyBatchEntry(e jetstream.KeyValueEntry, get func(string) *batchState, batches map[string]*batchState) string {
	put := e.Operation() == jetstream.KeyValuePut
	if id, ok := strings.CutPrefix(e.Key(), "batch."); ok {
		if !put { // expired or removed: forget it
			delete(batches, id)
			return ""
		}
		var rec jobs.Batch
		if err := json.Unmarshal(e.Value(), &rec); err != nil {
			w.log.Warn("batch completions: bad batch record", "key", e.Key(), "err", err)
			return ""
		}
		b := get(id)
		b.rec, b.recRev = &rec, e.Revision()
		return id
	}
	jid := strings.TrimPrefix(e.Key(), jobs.RunKey(""))
	dot := strings.IndexByte(jid, '.')
	if dot < 0 {
		return ""
	}
	id := jid[:dot]
	idx, ok := jobs.BatchItemIndex(id, jid)
	if !ok || idx < 0 || idx > 100_000_000 {
		return ""
	}
	b := get(id)
	if !put {
		b.set(idx, "")
		if b.done == 0 && b.rec != nil && b.rec.Completed != nil {
			// Every ended item of a completed batch has expired: nothing
			// is left to announce, and its state would be kept for
			// nothing until the batch record goes.
			delete(batches, id)
			return ""
		}
		return id
	}
	var r struct {
		State  jobs.State `json:"state"`
		Result *struct {
			FinishedAt time.Time `json:"finished_at"`
		} `json:"result"`
	}
	if err := json.Unmarshal(e.Value(), &r); err != nil || r.State == "" {
		w.log.Warn("batch completions: bad job record", "key", e.Key(), "err", err)
		return ""
	}
	if r.Result == nil { // not ended (yet, or again after a rerun)
		b.set(idx, "")
		return id
	}
	b.set(idx, r.State)
	if r.Result.FinishedAt.After(b.last) {
		b.last = r.Result.FinishedAt
	}
	return id
}

// maybeAnnounce publishes b's completion if every item has ended and this
// completion was not announced yet.
func (w *Worker) maybeAnnounce(ctx context.Context, id string, b *batchState) {
	rec := b.rec
	if rec == nil || rec.Total == 0 || b.done < rec.Total {
		return
	}
	if c := rec.Completed; c != nil && !b.last.After(c.LastFinished) {
		return // announced
	}
	if len(b.states) < rec.Total || slices.Contains(b.states[:rec.Total], "") {
		return // an index past the total was counted; not all items ended
	}
	counts := map[jobs.State]int{}
	for _, s := range b.states[:rec.Total] {
		counts[s]++
	}
	now := w.now().UTC()
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
	}
	ev := jobs.Event{Kind: EventBatchCompleted, JobID: id, Time: now,
		Message: fmt.Sprintf("%d items: %s", rec.Total, strings.Join(parts, ", "))}
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	// The message ID makes a second announcement of the same completion
	// (a new leader, a failed record update) a duplicate.
	msgID := fmt.Sprintf("batchdone.%s.%d", id, b.last.UnixNano())
	ack, err := w.store.JS.Publish(ctx, jobs.EventSubject(id, EventBatchCompleted), data, jetstream.WithMsgID(msgID))
	if err != nil {
		w.log.Warn("batch completions: publish", "batch", id, "err", err)
		return
	}
	next := *rec
	next.Completed = &jobs.BatchCompletion{At: now, LastFinished: b.last, Counts: counts}
	val, err := json.Marshal(next)
	if err != nil {
		return
	}
	rev, err := w.store.State.Update(ctx, jobs.BatchKey(id), val, b.recRev)
	if err != nil {
		// Changed meanwhile: the watch brings the new record, and the
		// event's ID keeps a second announcement out.
		w.log.Info("batch completions: record update", "batch", id, "err", err)
		return
	}
	b.rec, b.recRev = &next, rev
	if !ack.Duplicate {
		w.m.BatchesDone.Inc()
		w.log.Info("batch completed", "batch", id, "items", rec.Total, "counts", ev.Message)
	}
}
