package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// The leader's view of the schedules bucket goes through a fault-injecting
// wrapper of the real bucket: the faults are those of a 3-node cluster,
// made deterministic on one server.

// laggingKV answers a get of a definition with the entry before the
// latest, as a replica one write behind does: any replica may answer a
// direct get (nats-server#6557).
type laggingKV struct{ jetstream.KeyValue }

func (kv laggingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if strings.HasPrefix(key, defKey("")) {
		if hist, err := kv.History(ctx, key); err == nil && len(hist) >= 2 {
			return hist[len(hist)-2], nil
		}
	}
	return kv.KeyValue.Get(ctx, key)
}

// editingKV calls edit before each call by which a leader may list or
// watch the definitions: another client's edit lands between any two
// steps of a takeover.
type editingKV struct {
	jetstream.KeyValue
	edit func()
}

func (kv editingKV) Status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	kv.edit()
	return kv.KeyValue.Status(ctx)
}

func (kv editingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if strings.HasPrefix(key, defKey("")) {
		kv.edit()
	}
	return kv.KeyValue.Get(ctx, key)
}

func (kv editingKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	kv.edit()
	return kv.KeyValue.Watch(ctx, keys, opts...)
}

func (kv editingKV) WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	kv.edit()
	return kv.KeyValue.WatchFiltered(ctx, keys, opts...)
}

func (kv editingKV) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	kv.edit()
	return kv.KeyValue.ListKeysFiltered(ctx, filters...)
}

// startWith runs a scheduler whose view of the schedules bucket is
// wrap(bucket) until the test ends, and returns its metrics.
func startWith(t *testing.T, st *jobs.Store, wrap func(jetstream.KeyValue) jetstream.KeyValue) *metrics.Metrics {
	t.Helper()
	m := metrics.New()
	s, err := New(Config{ID: "s1", ElectionTTL: 2 * time.Second}, st, m, sandruntest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	s.cat.kv = wrap(s.cat.kv)
	ctx, cancel := context.WithCancel(sandruntest.Ctx(t))
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// A suspension is followed even when a read of the definition would be
// answered by a replica that has not applied it: the leader builds the
// schedule from the change it was told of. (Before the fix the leader
// re-read the key, got the unsuspended definition and kept firing.)
func TestLeaderFollowsChangesNotStaleReads(t *testing.T) {
	t.Parallel()
	st := sandruntest.Store(t, sandruntest.Server(t, "").ClientURL())
	ctx := sandruntest.Ctx(t)
	cat := NewCatalog(st) // the operator's, on the real bucket
	if err := cat.Put(ctx, Schedule{Name: "tick", Cron: "@every 1s", Job: jobs.Spec{Command: "true", Queue: "nobody"}}, false); err != nil {
		t.Fatal(err)
	}
	m := startWith(t, st, func(kv jetstream.KeyValue) jetstream.KeyValue { return laggingKV{kv} })
	sandruntest.Eventually(t, 15*time.Second, func() (bool, string) {
		n := testutil.ToFloat64(m.ScheduleFires.WithLabelValues("slot"))
		return n >= 1, fmt.Sprintf("%v slots fired, want 1", n)
	})
	if err := cat.SetSuspended(ctx, "tick", true); err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	assertSuspendedAfter(ctx, t, cat, "tick", acked)
}

// assertSuspendedAfter waits until schedule name has skipped two slots
// as suspended after acked, then checks that no slot later than acked
// plus one tick (1s) fired.
func assertSuspendedAfter(ctx context.Context, t *testing.T, cat *Catalog, name string, acked time.Time) {
	t.Helper()
	var hist []Fire
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		st, err := cat.State(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		hist = st.History
		skipped := 0
		for _, f := range hist {
			if f.Kind == "skipped" && f.Reason == "suspended" && f.Slot.After(acked) {
				skipped++
			}
		}
		return skipped >= 2, fmt.Sprintf("%d slots after the suspension skipped as suspended, want 2; history %+v", skipped, hist)
	})
	for _, f := range hist {
		if (f.Kind == "slot" || f.Kind == "catchup") && f.Slot.After(acked.Add(time.Second)) {
			t.Errorf("slot %s fired (%s) after the suspension was acknowledged at %s", f.Slot, f.JobID, acked)
		}
	}
}

// Edits that land between the steps of a takeover (listing, reading,
// starting the watch) are all seen: the leader runs the last definition.
// Subtest k makes an edit before each of the first k calls the leader
// makes to list or watch the definitions. (Before the fix, with k=3, the
// third edit fell between the listing and the start of the watch and was
// missed: the leader kept firing the definition it had listed.)
func TestTakeoverSeesEditsMadeWhileItLoads(t *testing.T) {
	t.Parallel()
	for k := 1; k <= 4; k++ {
		t.Run(fmt.Sprintf("edits=%d", k), func(t *testing.T) {
			t.Parallel()
			testTakeoverEdits(t, k)
		})
	}
}

func testTakeoverEdits(t *testing.T, k int) {
	st := sandruntest.Store(t, sandruntest.Server(t, "").ClientURL())
	ctx := sandruntest.Ctx(t)
	cat := NewCatalog(st)
	version := func(v int) Schedule {
		return Schedule{Name: "tick", Cron: "@every 1s", Job: jobs.Spec{Command: "true", Queue: fmt.Sprintf("v%d", v)}}
	}
	if err := cat.Put(ctx, version(0), false); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls, edits := 0, 0
	edit := func() {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls > k {
			return
		}
		edits++
		if err := cat.Put(ctx, version(edits), false); err != nil {
			t.Errorf("edit %d: %v", edits, err)
		}
	}
	startWith(t, st, func(kv jetstream.KeyValue) jetstream.KeyValue { return editingKV{KeyValue: kv, edit: edit} })
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		n := edits
		mu.Unlock()
		last := fmt.Sprintf("v%d", n)
		byQueue := map[string]int{}
		for _, spec := range sandruntest.Queued(t, st) {
			byQueue[spec.Queue]++
		}
		return n > 0 && byQueue[last] >= 2, fmt.Sprintf("jobs by queue %v after %d edits, want 2 of the last definition %s", byQueue, n, last)
	})
}
