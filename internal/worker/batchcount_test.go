package worker_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/worker"
)

// TestBatchCountsExactUnderFaults: a batch's counts (the server's, from
// the items' end markers) equal what its records say, and its completion
// is announced once, when workers fail between an item's commit and its
// marker (a seeded fifth of the items: their leases are left to expire
// and the reaper writes the markers), a worker stops half-way and stray
// copies of the items' messages are delivered again.
func TestBatchCountsExactUnderFaults(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	const batch, total = "faulty", 60
	faulty := map[string]bool{}
	items := make([]jobs.Spec, total)
	for i := range items {
		cmd := "true"
		switch rng.IntN(4) {
		case 0:
			cmd = "exit 3"
		case 1:
			cmd = "sleep 0.2"
		}
		items[i] = jobs.Spec{Command: cmd, MaxAttempts: 1}
		if rng.IntN(5) == 0 {
			faulty[jobs.BatchItemID(batch, i)] = true
		}
	}
	var mu sync.Mutex
	faulted := 0
	fault := func(id string) error {
		mu.Lock()
		defer mu.Unlock()
		if faulty[id] {
			delete(faulty, id) // once: the repair writes it
			faulted++
			return errors.New("injected: died before the marker")
		}
		return nil
	}
	cfg := sandruntest.FastConfig()
	a := sandruntest.StartWorkerDeps(t, st, cfg, sandruntest.LocalBackends(t), func(d *worker.Deps) { d.MarkFault = fault })
	b := sandruntest.StartWorkerDeps(t, st, cfg, sandruntest.LocalBackends(t), func(d *worker.Deps) { d.MarkFault = fault })
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	done := followCompletionsOf(t, st, batch)
	if _, err := c.SubmitBatch(ctx, client.BatchOptions{ID: batch}, items); err != nil {
		t.Fatal(err)
	}
	// Half-way: a worker stops, and every item that has a record is
	// delivered again (a stray copy of its message).
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		n, err := st.CountKeys(ctx, jobs.BatchEndsFilter(batch, ""))
		return err == nil && n >= total/2, fmt.Sprintf("%d ended, %v", n, err)
	})
	a.Stop()
	v, err := c.Batch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range v.Items {
		if err := st.PublishJob(ctx, it.Run.Spec, it.Run.OwnerString(), "stray-"+it.Run.Spec.ID); err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.WaitBatch(ctx, batch, client.WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[jobs.State]int{}
	for i := range total {
		run, _, err := st.GetRun(ctx, jobs.BatchItemID(batch, i))
		if err != nil || run.Result == nil {
			t.Fatalf("item %d: %+v %v", i, run, err)
		}
		want[run.Result.State]++
	}
	got, err := st.CountBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Ended) != fmt.Sprint(want) || p.Done != total || fmt.Sprint(terminalCounts(p.Counts)) != fmt.Sprint(want) {
		t.Fatalf("counted %v, waited %+v; the records say %v (seed %d)", got.Ended, p, want, seed)
	}
	status, err := c.BatchStatus(ctx, batch)
	if err != nil || fmt.Sprint(terminalCounts(status.Counts)) != fmt.Sprint(want) || status.Done != total {
		t.Fatalf("status %+v %v, want %v", status, err, want)
	}
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) { return done.n() >= 1, "batch_completed" })
	repaired := testutil.ToFloat64(a.Metrics.ReaperRecovered.WithLabelValues("batch_end")) +
		testutil.ToFloat64(b.Metrics.ReaperRecovered.WithLabelValues("batch_end"))
	mu.Lock()
	defer mu.Unlock()
	if int(repaired) < faulted || faulted == 0 && len(faulty) > 0 {
		t.Fatalf("%d markers repaired by the reaper, %d faults injected", int(repaired), faulted)
	}
	// Give a second announcement the time to happen, then count: once.
	b.Stop()
	if n := done.n(); n != 1 {
		t.Fatalf("%d batch_completed events, want 1", n)
	}
	t.Logf("%d items: %v; %d markers written by the reaper", total, want, int(repaired))
}

func terminalCounts(m map[jobs.State]int) map[jobs.State]int {
	out := map[jobs.State]int{}
	for s, n := range m {
		if s.Terminal() && n > 0 {
			out[s] = n
		}
	}
	return out
}

// completionsOf collects a batch's batch_completed events.
type completionsOf struct {
	mu sync.Mutex
	k  int
}

func (c *completionsOf) n() int { c.mu.Lock(); defer c.mu.Unlock(); return c.k }

func followCompletionsOf(t *testing.T, st *jobs.Store, batch string) *completionsOf {
	t.Helper()
	cons, err := st.JS.OrderedConsumer(t.Context(), jobs.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{jobs.EventSubject(batch, worker.EventBatchCompleted)},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &completionsOf{}
	cc, err := cons.Consume(func(jetstream.Msg) {
		c.mu.Lock()
		c.k++
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return c
}
