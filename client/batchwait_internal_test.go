package client

import (
	"context"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/jobs/jobstest"
)

// TestBackfillReadsWhatTheWatchMissed: a batch that completed once and is
// being run again (batch retry) must not look complete when the watch's
// first pass ends before every item is seen — items updated while it is
// read arrive later, as updates. backfill reads the unseen items'
// records: present ones are counted (their state, ended or not), expired
// ones stay unseen, so only a batch whose unseen items are gone and whose
// seen items all ended is reported from its completion.
func TestBackfillReadsWhatTheWatchMissed(t *testing.T) {
	t.Parallel()
	st := jobstest.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := New(st)
	const id, total = "b1", 4
	b := jobs.Batch{ID: id, Total: total, Completed: &jobs.BatchCompletion{Counts: map[jobs.State]int{jobs.StateFailed: total}}}
	// Items 0 and 1 ended; item 2 is queued again (retried); item 3 has
	// no record (expired).
	for i, state := range []jobs.State{jobs.StateFailed, jobs.StateFailed, jobs.StateQueued} {
		spec := jobs.Spec{ID: jobs.BatchItemID(id, i), Command: "false"}.WithDefaults()
		run := jobs.Run{Spec: spec, State: state}
		if state.Terminal() {
			run.Result = &jobs.Result{JobID: spec.ID, State: state}
		}
		if _, err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	// The watch's first pass saw item 0 only.
	tl := newTally(b)
	tl.applyRun(0, jobs.Run{State: jobs.StateFailed, Result: &jobs.Result{State: jobs.StateFailed}})
	if err := c.backfill(ctx, id, tl); err != nil {
		t.Fatal(err)
	}
	if tl.seen != 3 || tl.done != 2 || tl.state[2] != jobs.StateQueued || tl.state[3] != "" {
		t.Fatalf("after backfill: seen %d, done %d, states %q; want 3 seen (item 3 expired), 2 done, item 2 queued", tl.seen, tl.done, tl.state)
	}
	// followBatch reports from the completion only when every item seen
	// has ended: here item 2 is running again, so the batch is not done.
	if tl.completeButExpired() {
		t.Fatal("a batch with a retried item would be reported complete")
	}
	// Once item 2 ends again, what is left unseen is expired: complete.
	tl.applyRun(2, jobs.Run{State: jobs.StateFailed, Result: &jobs.Result{State: jobs.StateFailed}})
	if !tl.completeButExpired() {
		t.Fatalf("seen %d, done %d: a completed batch with an expired item is not reported from its completion", tl.seen, tl.done)
	}
}
