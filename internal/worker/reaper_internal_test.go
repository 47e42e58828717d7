package worker

import (
	"context"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/jobs/jobstest"
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
