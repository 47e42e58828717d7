package drills

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestFullQueueClusterRestart: 3,000 jobs wait in the queue with no
// worker running when all three servers are killed with SIGKILL at once.
// The servers start again from their data, workers start, and every job
// runs once: the queue, the records and the dedupe survive the restart.
func TestFullQueueClusterRestart(t *testing.T) {
	c := startCluster(t)
	url := c.url()
	ctx := t.Context()
	if err := natsutil.WaitJetStream(ctx, url, 3); err != nil {
		t.Fatal(err)
	}
	st, err := sandruntest.StoreWith(t, url, jobs.LayoutConfig{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	items := make([]client.Spec, n)
	for i := range items {
		items[i] = client.Spec{Command: "true", MaxAttempts: 3}
	}
	if _, err := client.New(st).SubmitBatch(ctx, client.BatchOptions{ID: "full"}, items); err != nil {
		t.Fatal(err)
	}
	s, err := st.JS.Stream(ctx, jobs.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil || info.State.Msgs != n {
		t.Fatalf("JOBS before the restart: %d messages, %v; want %d", info.State.Msgs, err, n)
	}

	for i := range 3 {
		c.servers[i].kill9()
	}
	restartAt := time.Now()
	for i := range 3 {
		c.startNode(i)
	}
	if err := natsutil.WaitJetStream(ctx, url, 3); err != nil {
		t.Fatal(err)
	}
	cl := connect(t, url)
	writes := watchResults(t, cl.Store())
	var workers []*proc
	for i := range 2 {
		workers = append(workers, startWorker(t, url, fmt.Sprintf("drill-w%d", i)))
	}
	// The batch, submitted again after the restart, adds nothing: every
	// item is recorded already.
	// Submitting is idempotent: a call cut short while the restarted
	// cluster settles is simply made again.
	var res client.BatchSubmit
	sandruntest.Poll(time.Minute, func() (bool, string) {
		if res, err = cl.SubmitBatch(ctx, client.BatchOptions{ID: "full"}, items); err != nil {
			t.Logf("re-submit after the restart: %v (trying again)", err)
		}
		return err == nil, ""
	})
	if err != nil || res.Submitted != 0 || res.Existing != n {
		t.Fatalf("re-submit after the restart: %+v, %v; want 0 submitted, %d existing", res, err, n)
	}
	writes.waitKeys(t, n, 3*time.Minute, "after the restart")
	// The workers stop, then the watch sees a later write: no stray
	// commit is left to land before counting.
	stopAll(workers...)
	writes.barrier(t)
	first, last := writes.firstAfter(restartAt)
	keys, total := writes.total()
	dups := writes.duplicates(t)
	lost := n - writes.states()[jobs.StateSucceeded]
	t.Logf("DRILL full-queue-restart: jobs %d, lost %d, duplicate commits %d (result keys %d, writes %d); first result %s after the kill of all three servers, the queue drained %s after it",
		n, lost, dups, keys, total, first.Sub(restartAt).Round(time.Millisecond), last.Sub(restartAt).Round(time.Millisecond))
	if lost != 0 || dups != 0 || keys != n {
		t.Fatalf("lost %d, duplicates %d, result keys %d of %d", lost, dups, keys, n)
	}
}
