package client_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// completions collects a batch's batch_completed events.
type completions struct {
	mu  sync.Mutex
	evs []client.Event
}

func (c *completions) n() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.evs) }

func (c *completions) last() client.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evs[len(c.evs)-1]
}

func followCompletions(t *testing.T, st *jobs.Store, batch string) *completions {
	t.Helper()
	cons, err := st.JS.OrderedConsumer(t.Context(), jobs.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{jobs.EventSubject(batch, "batch_completed")},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &completions{}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var e client.Event
		if err := json.Unmarshal(m.Data(), &e); err != nil {
			t.Errorf("event: %v", err)
			return
		}
		c.mu.Lock()
		c.evs = append(c.evs, e)
		c.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return c
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	sandruntest.Eventually(t, d, func() (bool, string) { return ok(), what })
}

// TestWaitBatchAndCompletionEvent: WaitBatch reports each item once as it
// ends; the batch's completion is announced once, again after a retry of
// its failed items, and not again by a new reaper leader.
func TestWaitBatchAndCompletionEvent(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	w := sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	c := client.New(st)
	ctx := sandruntest.Ctx(t)
	events := followCompletions(t, st, "cb")

	const n = 40
	items := make([]client.Spec, n)
	for i := range items {
		items[i] = client.Spec{Command: "true", MaxAttempts: 1}
		if i%8 == 3 {
			items[i].Command = "exit 3"
		}
	}
	if _, err := c.SubmitBatch(ctx, client.BatchOptions{ID: "cb"}, items); err != nil {
		t.Fatal(err)
	}
	seen := make([]int, n)
	var progress []client.BatchProgress
	final, err := c.WaitBatch(ctx, "cb", client.WaitOptions{
		OnItem:     func(it client.BatchItem) { seen[it.Index]++ },
		OnProgress: func(p client.BatchProgress) { progress = append(progress, p) },
		Interval:   50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range seen {
		if k != 1 {
			t.Fatalf("item %d reported %d times", i, k)
		}
	}
	if final.Done != n || final.Counts[client.StateSucceeded] != 35 || final.Counts[client.StateFailed] != 5 || final.Succeeded() {
		t.Fatalf("final progress %+v", final)
	}
	if len(progress) == 0 || progress[len(progress)-1].Done != n {
		t.Fatalf("progress reports %+v", progress)
	}

	waitFor(t, "completion event", 20*time.Second, func() bool { return events.n() >= 1 })
	if e := events.last(); e.Kind != "batch_completed" || e.JobID != "cb" || e.Message != "40 items: failed 5, succeeded 35" {
		t.Fatalf("event %+v", e)
	}
	// The event goes first, then the batch record notes it.
	var b jobs.Batch
	waitFor(t, "completion in the batch record", 5*time.Second, func() bool {
		var err error
		b, err = st.GetBatch(ctx, "cb")
		return err == nil && b.Completed != nil
	})
	if b.Completed.Counts[jobs.StateFailed] != 5 || b.Completed.Counts[jobs.StateSucceeded] != 35 {
		t.Fatalf("batch record %+v", b.Completed)
	}

	// Run the failed items again (they fail again): a second completion.
	if k, err := c.RetryFailed(ctx, "cb"); err != nil || k != 5 {
		t.Fatalf("retry: %d, %v", k, err)
	}
	again := make([]int, n)
	if _, err := c.WaitBatch(ctx, "cb", client.WaitOptions{OnItem: func(it client.BatchItem) { again[it.Index]++ }}); err != nil {
		t.Fatal(err)
	}
	for i, k := range again {
		if k != 1 { // the 35 that had ended, then each retried one when it ended again
			t.Fatalf("second wait: item %d reported %d times", i, k)
		}
	}
	waitFor(t, "second completion event", 20*time.Second, func() bool { return events.n() >= 2 })

	// A new reaper leader rebuilds its state: nothing new to announce.
	w.Stop()
	w2 := sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	waitFor(t, "new leader", 20*time.Second, func() bool {
		return testutil.ToFloat64(w2.Metrics.Leader.WithLabelValues("reaper")) == 1
	})
	// The new leader's announcer goes over the batches it loads, then
	// follows changes, one at a time. A probe batch submitted after
	// another probe was announced is announced after that whole first
	// pass: once it is, any completion of cb announced again is stored.
	for _, probe := range []string{"probe-1", "probe-2"} {
		pe := followCompletions(t, st, probe)
		if _, err := c.SubmitBatch(ctx, client.BatchOptions{ID: probe}, []client.Spec{{Command: "true"}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, probe+" completion event", 20*time.Second, func() bool { return pe.n() >= 1 })
	}
	es, err := st.JS.Stream(ctx, jobs.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	subject := jobs.EventSubject("cb", "batch_completed")
	info, err := es.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	if k := info.State.Subjects[subject]; k != 2 || events.n() != 2 {
		t.Fatalf("%d completion events stored (%d seen), want 2", k, events.n())
	}
}
