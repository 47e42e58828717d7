package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/jobs/jobstest"
	"github.com/sandrun/sandrun/internal/metrics"
)

// TestNewestRevisionIsWhatTheReaperWatches: the reaper's stall check
// compares its watch with the newest job record or lease the bucket holds;
// other keys of the bucket (cancel requests, batches) do not count.
func TestNewestRevisionIsWhatTheReaperWatches(t *testing.T) {
	t.Parallel()
	st := jobstest.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &Worker{store: st}
	if got, err := w.newestRevision(ctx); err != nil || got != 0 {
		t.Fatalf("empty bucket: %d, %v", got, err)
	}
	spec := jobs.Spec{ID: "j1", Command: "true"}.WithDefaults()
	rev, err := st.CreateRun(ctx, jobs.Run{Spec: spec, State: jobs.StateQueued})
	if err != nil {
		t.Fatal(err)
	}
	lrev, err := st.State.Put(ctx, jobs.LeaseKey("j1"), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.State.Put(ctx, jobs.CancelKey("manual.anonymous", "j1"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	got, err := w.newestRevision(ctx)
	if err != nil || got != lrev || lrev <= rev {
		t.Fatalf("newest %d (%v), want the lease's %d (record %d); the cancel request is not the reaper's", got, err, lrev, rev)
	}
}

// TestWorkerWorkloadsLiveWhileTheWorkerIs: a workload of a worker rather
// than of one attempt (a session, a warm pool: job ID "") is live while
// that worker holds its registration, and not after; this worker's own
// are always live.
func TestWorkerWorkloadsLiveWhileTheWorkerIs(t *testing.T) {
	t.Parallel()
	st := jobstest.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &Worker{store: st, cfg: Config{Name: "me"}}
	if _, err := st.Workers.Put(ctx, "alive", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		worker string
		want   bool
	}{{"me", true}, {"alive", true}, {"gone", false}} {
		if got := w.attemptLive(ctx, "", 0, c.worker); got != c.want {
			t.Errorf("a workload of worker %q: live %t, want %t", c.worker, got, c.want)
		}
	}
	if err := st.Workers.Purge(ctx, "alive"); err != nil {
		t.Fatal(err)
	}
	if w.attemptLive(ctx, "", 0, "alive") {
		t.Error("a workload of a worker whose registration went is still live")
	}
}

// TestReconcileWritesMissingEndMarkers: the backstop for an end marker the
// reaper never saw go missing — a batch whose items all have records and
// whose count of ends stands still is reconciled once it has stood still
// for reconcileAfter: the ended items without a marker get theirs, the
// others are left alone.
func TestReconcileWritesMissingEndMarkers(t *testing.T) {
	t.Parallel()
	st := jobstest.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	w := &Worker{store: st, cfg: Config{LeaseTTL: 3 * time.Second, ReaperScan: 2 * time.Second},
		m: metrics.New(), log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	const batch, total = "rec", 4
	if err := st.PutBatch(ctx, jobs.Batch{ID: batch, Total: total}); err != nil {
		t.Fatal(err)
	}
	for i := range total {
		spec := jobs.Spec{ID: jobs.BatchItemID(batch, i), Command: "true", Labels: map[string]string{jobs.LabelBatch: batch}}.WithDefaults()
		run := jobs.Run{Spec: spec, State: jobs.StateRunning, Attempt: 1}
		if i < 3 { // items 0-2 ended; only 0 and 1 have their marker
			run.State = jobs.StateSucceeded
			run.Result = &jobs.Result{JobID: spec.ID, State: jobs.StateSucceeded, Attempt: 1}
		}
		if _, err := st.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if _, err := st.MarkBatchEnd(ctx, run); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := st.GetBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	bs := &batchState{rec: b}
	count := func() int {
		c, err := st.CountBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		return c.Done()
	}
	w.maybeReconcile(ctx, batch, bs, count()) // the count is seen standing still from now
	now = now.Add(w.reconcileAfter() - time.Second)
	w.maybeReconcile(ctx, batch, bs, count())
	if got := count(); got != 2 {
		t.Fatalf("reconciled before the count stood still for %s: %d ended", w.reconcileAfter(), got)
	}
	now = now.Add(2 * time.Second)
	w.maybeReconcile(ctx, batch, bs, count())
	if got := count(); got != 3 {
		t.Fatalf("after reconciling: %d ended, want 3 (item 3 is still running)", got)
	}
}
