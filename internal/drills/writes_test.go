package drills

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestWritesRideOutLeaderKill: the server leading both the JOBS stream
// and the jobstate bucket is killed with SIGKILL while a writer submits
// jobs (record created, then job published) one after another. Every
// write returns success — those in flight at the kill after retries
// (jobs.Store.WriteWithin) — and the stream holds each job exactly once.
func TestWritesRideOutLeaderKill(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()
	if err := natsutil.WaitJetStream(ctx, c.url(), 3); err != nil {
		t.Fatal(err)
	}
	st, err := sandruntest.StoreWith(t, c.url(), jobs.LayoutConfig{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	nc := st.JS.Conn()
	var retried atomic.Int32
	st.OnRetry = func(what string, attempt int, err error) {
		retried.Add(1)
		t.Logf("retry %s (attempt %d): %v", what, attempt, err)
	}
	// Both leaders on one server, so that one kill takes both.
	leader := streamLeader(t, st, jobs.StreamJobs)
	for kv := streamLeader(t, st, "KV_"+jobs.BucketState); kv != leader; kv = streamLeader(t, st, "KV_"+jobs.BucketState) {
		if err := nc.Publish("$JS.API.STREAM.LEADER.STEPDOWN.KV_"+jobs.BucketState, nil); err != nil {
			t.Fatal(err)
		}
		// The step-down has taken effect once another node leads.
		sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
			now := leaderOf(t, st, "KV_"+jobs.BucketState)
			return now != "" && now != kv, fmt.Sprintf("KV_%s still led by %s after a step-down", jobs.BucketState, kv)
		})
	}

	const n = 300
	errs := make(chan error, 1)
	var done atomic.Int32
	var slowest atomic.Int64
	go func() {
		for i := range n {
			t0 := time.Now()
			spec := jobs.Spec{ID: fmt.Sprintf("ride-%03d", i), Command: "true", Queue: "ride"}
			if _, err := st.CreateRun(ctx, jobs.Run{Spec: spec, State: jobs.StateQueued, UpdatedAt: time.Now().UTC()}); err != nil {
				errs <- fmt.Errorf("create %s: %w", spec.ID, err)
				return
			}
			if err := st.PublishJob(ctx, spec, jobs.AnonymousOwner, spec.ID); err != nil {
				errs <- fmt.Errorf("publish %s: %w", spec.ID, err)
				return
			}
			if d := int64(time.Since(t0)); d > slowest.Load() {
				slowest.Store(d)
			}
			done.Add(1)
		}
		errs <- nil
	}()
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		k := done.Load()
		return k >= n/4, fmt.Sprintf("%d of %d submits before the kill", k, n/4)
	})
	c.servers[c.node(leader)].kill9()
	t.Logf("killed %s (both leaders) after %d submits", leader, done.Load())
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// Count what was stored. Reads right after the kill may time out while
	// leaders settle, or be answered by a replica still catching up: read
	// again for up to 30 s until the counts are whole (a lost write never
	// shows up, a duplicate never goes away).
	var msgs uint64
	keys := 0
	sandruntest.Poll(30*time.Second, func() (bool, string) {
		msgs, keys, err = stored(t, st)
		return err == nil && msgs == n && keys == n, ""
	})
	if err != nil {
		t.Fatalf("count what was stored: %v", err)
	}
	t.Logf("DRILL writes-ride-out: %d submits, all returned success; %d retried attempts; slowest submit %s; JOBS holds %d messages, %d records",
		n, retried.Load(), time.Duration(slowest.Load()).Round(time.Millisecond), msgs, keys)
	if msgs != n || keys != n {
		t.Fatalf("JOBS holds %d messages and %d records, want %d each", msgs, keys, n)
	}
	if retried.Load() == 0 {
		t.Fatal("no write was retried: the leader loss was not exercised")
	}
}

// stored counts the JOBS stream's messages and the ride-* job records.
func stored(t *testing.T, st *jobs.Store) (msgs uint64, keys int, err error) {
	s, err := st.JS.Stream(t.Context(), jobs.StreamJobs)
	if err != nil {
		return 0, 0, err
	}
	info, err := s.Info(t.Context())
	if err != nil {
		return 0, 0, err
	}
	lister, err := st.State.ListKeysFiltered(t.Context(), jobs.RunKey(">"))
	if err != nil {
		return 0, 0, err
	}
	for k := range lister.Keys() {
		if strings.HasPrefix(k, jobs.RunKey("ride-")) {
			keys++
		}
	}
	return info.State.Msgs, keys, nil
}

func streamLeader(t *testing.T, st *jobs.Store, name string) string {
	t.Helper()
	var leader string
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		leader = leaderOf(t, st, name)
		return leader != "", fmt.Sprintf("stream %s has no leader", name)
	})
	return leader
}

// leaderOf is the node leading stream name ("": none, or no answer).
func leaderOf(t *testing.T, st *jobs.Store, name string) string {
	s, err := st.JS.Stream(t.Context(), name)
	if err != nil {
		return ""
	}
	info, err := s.Info(t.Context())
	if err != nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}
