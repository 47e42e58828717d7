package worker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestThrottledItemsWaitOffTheLane: the items of a throttled batch that
// find every slot taken wait on the server (held), not among the lane's
// delivered-but-unacknowledged messages, which stay within what the
// workers are claiming; a plain job submitted behind the batch runs while
// the batch is still throttled; and the bound holds.
func TestThrottledItemsWaitOffTheLane(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	cfg := sandruntest.FastConfig()
	sandruntest.StartWorker(t, st, cfg)
	sandruntest.StartWorker(t, st, cfg)
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	const n, bound = 24, 2
	items := make([]jobs.Spec, n)
	for i := range items {
		items[i] = jobs.Spec{Command: "sleep 0.3", MaxAttempts: 1}
	}
	if _, err := c.SubmitBatch(ctx, client.BatchOptions{ID: "held", MaxParallel: bound}, items); err != nil {
		t.Fatal(err)
	}
	// Items are held while the batch runs.
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		held, err := st.HeldBatches(ctx)
		return err == nil && held["held"] > 0, fmt.Sprintf("held %v %v", held, err)
	})
	plain, err := c.Submit(ctx, jobs.Spec{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	maxPending := 0
	lanes := []string{jobs.ConsumerName(jobs.DefaultQueue, ""), jobs.ConsumerName(jobs.DefaultQueue, jobs.DefaultBackend)}
	var plainDone bool
	var progressAtPlain client.BatchProgress
	sandruntest.Eventually(t, 2*time.Minute, func() (bool, string) {
		for _, name := range lanes {
			cons, err := st.JS.Consumer(ctx, jobs.StreamJobs, name)
			if err != nil {
				continue
			}
			info, err := cons.Info(ctx)
			if err == nil {
				maxPending = max(maxPending, info.NumAckPending)
			}
		}
		if !plainDone {
			if _, err := st.GetResult(ctx, plain.ID); err == nil {
				plainDone = true
				progressAtPlain, _ = c.BatchStatus(ctx, "held")
			}
		}
		p, err := c.BatchStatus(ctx, "held")
		return err == nil && p.Done == n && plainDone, fmt.Sprintf("%+v %v, plain done %t", p, err, plainDone)
	})
	if maxPending > 2*cfg.Slots {
		t.Errorf("the lanes held up to %d delivered, unacknowledged messages; the two workers claim at most %d at once", maxPending, 2*cfg.Slots)
	}
	if progressAtPlain.Done >= n {
		t.Errorf("the plain job ended only after the batch (%+v): it waited behind held items", progressAtPlain)
	}
	v, err := c.Batch(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, it := range v.Items {
		r := it.Result
		if r == nil || r.State != jobs.StateSucceeded {
			t.Fatalf("item %d: %+v", it.Index, r)
		}
		edges = append(edges, edge{r.StartedAt, +1}, edge{r.StartedAt.Add(time.Duration(r.WallSeconds * float64(time.Second))), -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	running, peak := 0, 0
	for _, e := range edges {
		running += e.delta
		peak = max(peak, running)
	}
	if peak > bound {
		t.Fatalf("%d items ran at once; max_parallel is %d", peak, bound)
	}
	t.Logf("%d items, peak %d running, lanes' most unacknowledged %d, the plain job ended at %d/%d done", n, peak, maxPending, progressAtPlain.Done, n)
}
