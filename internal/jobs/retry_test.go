package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		{jetstream.ErrNoStreamResponse, true},
		{fmt.Errorf("publish: %w", nats.ErrNoResponders), true},
		{&jetstream.APIError{ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}, false},
		{jetstream.ErrKeyExists, false},
		{context.Canceled, false},
		{jobs.ErrFenced, false},
		{errors.New("maximum payload exceeded"), false},
	} {
		if got := jobs.Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// lostAck wraps the jobstate bucket: the first Create and Update are
// stored by the server, but their callers get a timeout, as when the
// stream leader is lost between storing a write and acknowledging it.
type lostAck struct {
	jetstream.KeyValue
	creates, updates atomic.Int32
}

func (k *lostAck) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	rev, err := k.KeyValue.Create(ctx, key, value, opts...)
	if err == nil && k.creates.Add(1) == 1 {
		return 0, nats.ErrTimeout
	}
	return rev, err
}

func (k *lostAck) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	rev, err := k.KeyValue.Update(ctx, key, value, last)
	if err == nil && k.updates.Add(1) == 1 {
		return 0, nats.ErrTimeout
	}
	return rev, err
}

// TestRetriedWriteKnowsItsOwnStoredAttempt: a create or compare-and-set
// whose first attempt was stored but not acknowledged succeeds on retry
// with the stored revision, instead of failing as "exists" or "changed
// concurrently"; a real conflict is still one.
func TestRetriedWriteKnowsItsOwnStoredAttempt(t *testing.T) {
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	ctx := sandruntest.Ctx(t)
	kv := &lostAck{KeyValue: st.State}
	st.State = kv
	var retried atomic.Int32
	st.OnRetry = func(what string, _ int, _ error) {
		retried.Add(1)
		if op, _, _ := strings.Cut(what, " "); !slices.Contains(jobs.WriteOps, op) {
			t.Errorf("retried write %q: %q is not one of jobs.WriteOps", what, op)
		}
	}

	r := jobs.Run{Spec: jobs.Spec{ID: "lost-ack", Command: "true"}, State: jobs.StateQueued, UpdatedAt: time.Now().UTC()}
	rev, err := st.CreateRun(ctx, r)
	if err != nil {
		t.Fatalf("create whose ack was lost: %v", err)
	}
	if _, got, err := st.GetRun(ctx, r.Spec.ID); err != nil || got != rev {
		t.Fatalf("create returned revision %d, the record is at %d (%v)", rev, got, err)
	}
	if _, err := st.CreateRun(ctx, r); !errors.Is(err, jobs.ErrExists) {
		t.Fatalf("second create of the same ID: %v, want ErrExists", err)
	}

	r.State, r.UpdatedAt = jobs.StateRunning, time.Now().UTC()
	nrev, err := st.UpdateRun(ctx, r, rev)
	if err != nil {
		t.Fatalf("update whose ack was lost: %v", err)
	}
	if got, _, _ := st.GetRun(ctx, r.Spec.ID); got.State != jobs.StateRunning || nrev <= rev {
		t.Fatalf("after the update: state %s, revision %d (was %d)", got.State, nrev, rev)
	}
	// Somebody else's value at the expected revision is a conflict.
	other := r
	other.State = jobs.StateCanceled
	if _, err := st.UpdateRun(ctx, other, rev); !errors.Is(err, jobs.ErrConflict) {
		t.Fatalf("update at a stale revision: %v, want ErrConflict", err)
	}
	if retried.Load() != 2 {
		t.Fatalf("%d retries, want 2 (one per lost ack)", retried.Load())
	}
}

// TestEndFencesAStaleHolder: the record's revision is the fence. A holder
// whose claim was overtaken (the reaper requeued the job, another attempt
// claimed it) cannot commit; the current holder's commit is the result.
func TestEndFencesAStaleHolder(t *testing.T) {
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	ctx := sandruntest.Ctx(t)
	run := jobs.Run{Spec: jobs.Spec{ID: "fenced", Command: "true", MaxAttempts: 3}, State: jobs.StateRunning, Attempt: 1, Worker: "w1", UpdatedAt: time.Now().UTC()}
	stale, err := st.CreateRun(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	taken := run
	taken.Attempt, taken.Worker = 2, "w2"
	current, err := st.UpdateRun(ctx, taken, stale)
	if err != nil {
		t.Fatal(err)
	}
	r := jobs.Result{JobID: "fenced", State: jobs.StateSucceeded, Attempt: 1, Worker: "w1", FinishedAt: time.Now().UTC()}
	if _, _, err := st.End(ctx, run, r, stale); !errors.Is(err, jobs.ErrFenced) {
		t.Fatalf("stale holder's commit: %v, want ErrFenced", err)
	}
	if _, err := st.GetResult(ctx, "fenced"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("result after a fenced commit: %v, want none", err)
	}
	r.Attempt, r.Worker, r.State = 2, "w2", jobs.StateFailed
	if _, _, err := st.End(ctx, taken, r, current); err != nil {
		t.Fatalf("current holder's commit: %v", err)
	}
	got, _, err := st.GetRun(ctx, "fenced")
	if err != nil || got.State != jobs.StateFailed || got.Result == nil || got.Result.Worker != "w2" {
		t.Fatalf("record %+v (%v): want failed with w2's result", got, err)
	}
}

// TestConcurrentLayoutOnFreshCluster: three components create the R3
// layout at the same moment on a fresh cluster; each gets it.
func TestConcurrentLayoutOnFreshCluster(t *testing.T) {
	servers := sandruntest.Cluster(t, 3)
	errs := make(chan error, 3)
	t0 := time.Now()
	for i := range 3 {
		go func() {
			_, err := sandruntest.StoreWith(t, servers[i].ClientURL(), jobs.LayoutConfig{Replicas: 3})
			t.Logf("component %d: layout after %s: %v", i, time.Since(t0).Round(time.Millisecond), err)
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestLayoutPlacementErrors: asking for 3 replicas where they cannot be
// placed ends with an error that says why and what to do.
func TestLayoutPlacementErrors(t *testing.T) {
	r3 := jobs.LayoutConfig{Replicas: 3, PlaceWithin: 3 * time.Second}
	// One server, not clustered.
	_, err := sandruntest.StoreWith(t, sandruntest.Server(t, "").ClientURL(), r3)
	t.Logf("single server: %v", err)
	if err == nil || !strings.Contains(err.Error(), "stream JOBS: 3 replicas need a JetStream cluster") {
		t.Fatalf("R3 on a single server: %v", err)
	}
	// A cluster of two.
	_, err = sandruntest.StoreWith(t, natsutil.ClusterURL(sandruntest.Cluster(t, 2)), r3)
	t.Logf("two-node cluster: %v", err)
	if err == nil || !strings.Contains(err.Error(), "stream JOBS: cannot place 3 replicas within 3s (a cluster needs 3 JetStream servers") {
		t.Fatalf("R3 on a two-node cluster: %v", err)
	}
}
