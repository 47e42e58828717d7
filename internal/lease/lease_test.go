package lease_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, sandruntest.LeakOptions()...)
}

func setup(t *testing.T) (*jobs.Store, context.Context) {
	s := sandruntest.Server(t, "")
	return sandruntest.Store(t, s.ClientURL()), sandruntest.Ctx(t)
}

func TestAcquireIsExclusiveAndRevisionsFence(t *testing.T) {
	t.Parallel()
	st, ctx := setup(t)
	a, err := lease.Acquire(ctx, st.JS, st.State, "lease.j1", 2*time.Second, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.Acquire(ctx, st.JS, st.State, "lease.j1", 2*time.Second, []byte("b")); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second acquire: %v, want ErrHeld", err)
	}
	r0 := a.Rev()
	if err := a.Renew(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if a.Rev() <= r0 {
		t.Fatalf("renew did not advance the revision: %d -> %d", r0, a.Rev())
	}
}

func TestExpiredLeaseIsLostAndNextHolderFencesTheOld(t *testing.T) {
	t.Parallel()
	st, ctx := setup(t)
	a, err := lease.Acquire(ctx, st.JS, st.State, "lease.j2", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the server to expire it (the KV watcher sees a purge marker).
	w, err := st.State.Watch(ctx, "lease.j2", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	for e := range w.Updates() {
		if e != nil && e.Operation() == jetstream.KeyValuePurge {
			break
		}
	}
	b, err := lease.Acquire(ctx, st.JS, st.State, "lease.j2", 5*time.Second, nil)
	if err != nil {
		t.Fatalf("acquire after expiry: %v", err)
	}
	if b.Rev() <= a.Rev() {
		t.Fatalf("new holder's revision %d not above the old %d", b.Rev(), a.Rev())
	}
	if err := a.Renew(ctx, nil); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("old holder's renew: %v, want ErrLost", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("release of a lost lease: %v", err)
	}
	if _, err := st.State.Get(ctx, "lease.j2"); err != nil {
		t.Fatalf("old holder's release removed the new lease: %v", err)
	}
}

func TestKeeperRenewsAndSelfFencesWhenCutOff(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	ctx := sandruntest.Ctx(t)
	l, err := lease.Acquire(ctx, st.JS, st.State, "lease.j3", 1500*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	var renewals atomic.Int32
	renewed := make(chan struct{}, 16)
	k := lease.Keep(l, lease.KeeperConfig{OnRenew: func() { renewals.Add(1); renewed <- struct{}{} }})
	defer k.Stop()
	for range 3 {
		select {
		case <-renewed:
		case <-k.Lost():
			t.Fatalf("lost while connected: %v", k.Err())
		}
	}
	// Cut the server off: renewals fail, and the keeper must give the
	// lease up before its TTL runs out.
	cutAt := time.Now()
	s.Shutdown()
	<-k.Lost()
	if !errors.Is(k.Err(), lease.ErrLost) {
		t.Fatalf("keeper error %v, want ErrLost", k.Err())
	}
	if d := time.Since(cutAt); d > 1500*time.Millisecond {
		t.Fatalf("self-fenced %s after the cut, later than the 1.5s TTL", d)
	}
}

func TestElectionHasOneLeaderAndFailsOver(t *testing.T) {
	t.Parallel()
	st, ctx := setup(t)
	var leaders atomic.Int32
	var maxLeaders atomic.Int32
	started := make(chan string, 4)
	run := func(ctx context.Context, id string) <-chan struct{} {
		done := make(chan struct{})
		el := &lease.Elector{JS: st.JS, KV: st.Elections, Role: "test", ID: id, TTL: 2 * time.Second, Logger: sandruntest.Logger(t)}
		go func() {
			defer close(done)
			el.Run(ctx, func(lctx context.Context) {
				n := leaders.Add(1)
				if n > maxLeaders.Load() {
					maxLeaders.Store(n)
				}
				started <- id
				<-lctx.Done()
				leaders.Add(-1)
			})
		}()
		return done
	}
	actx, acancel := context.WithCancel(ctx)
	aDone := run(actx, "a")
	if first := <-started; first != "a" {
		t.Fatalf("first leader %q, want a (the only candidate)", first)
	}
	bDone := run(ctx, "b")
	acancel() // the leader steps down and releases
	<-aDone
	select {
	case second := <-started:
		if second != "b" {
			t.Fatalf("second leader %q, want b", second)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no failover within 10s")
	}
	if maxLeaders.Load() != 1 {
		t.Fatalf("%d leaders at once", maxLeaders.Load())
	}
	_ = bDone
}

// TestRenewalWhoseAckWasLostIsNotALoss: a renewal the server stored but
// whose acknowledgement never came back (a stream leader election) is
// retried; the retry must be answered as a duplicate, not refused as a
// CAS on a moved revision that would kill a healthy job.
func TestRenewalWhoseAckWasLostIsNotALoss(t *testing.T) {
	t.Parallel()
	st, ctx := setup(t)
	l, err := lease.Acquire(ctx, st.JS, st.State, "lease.j5", 3*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	r0 := l.Rev()
	// The renewal is stored, its ack "lost": the lease still holds r0.
	lost := lease.LoseNextAck(l)
	if err := l.Renew(ctx, nil); err == nil {
		t.Fatal("the renewal whose ack was lost reported success")
	}
	if l.Rev() != r0 {
		t.Fatalf("revision moved to %d without an ack", l.Rev())
	}
	lost()
	if err := l.Renew(ctx, nil); err != nil {
		t.Fatalf("retried renewal: %v, want it taken as the stored one", err)
	}
	e, err := st.State.Get(ctx, "lease.j5")
	if err != nil {
		t.Fatal(err)
	}
	if l.Rev() != e.Revision() {
		t.Fatalf("lease revision %d, stored %d: later fenced writes would be refused", l.Rev(), e.Revision())
	}
	if err := l.Renew(ctx, nil); err != nil {
		t.Fatalf("next renewal: %v", err)
	}
}

// TestKeeperValidityCountsFromAcquisition: the server's TTL runs from the
// Create, so a keeper started late (a claim that spent its time retrying)
// has that much less validity; started past the TTL, it gives the lease up
// at its first tick instead of acting on a lease another may hold.
func TestKeeperValidityCountsFromAcquisition(t *testing.T) {
	t.Parallel()
	st, ctx := setup(t)
	l, err := lease.Acquire(ctx, st.JS, st.State, "lease.j6", 3*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	late := func() time.Time { return l.Acquired().Add(3 * time.Second) } // the keeper starts as the TTL runs out
	k := lease.Keep(l, lease.KeeperConfig{Now: late, Interval: 50 * time.Millisecond})
	defer k.Stop()
	select {
	case <-k.Lost():
	case <-time.After(2 * time.Second):
		t.Fatal("a keeper started past the TTL did not give the lease up")
	}
	if !errors.Is(k.Err(), lease.ErrLost) {
		t.Fatalf("keeper error %v, want ErrLost", k.Err())
	}
}

// TestKeeperValidWithoutItsTimer: a process thawed after a SIGSTOP runs
// on before the keeper's timer fires; Valid answers from the clock, so a
// holder that asks before irreversible work (starting a job's process)
// does not act on a lease another may hold already (TestChaos seed 142).
func TestKeeperValidWithoutItsTimer(t *testing.T) {
	t.Parallel()
	st, ctx := setup(t)
	l, err := lease.Acquire(ctx, st.JS, st.State, "lease.j7", 3*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := l.Acquired()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	k := lease.Keep(l, lease.KeeperConfig{Now: clock, Interval: time.Hour, Margin: 500 * time.Millisecond})
	defer k.Stop()
	if err := k.Valid(); err != nil {
		t.Fatalf("fresh lease: %v", err)
	}
	mu.Lock()
	now = now.Add(2600 * time.Millisecond) // past TTL - margin: thawed
	mu.Unlock()
	if err := k.Valid(); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Valid past the window: %v, want ErrLost", err)
	}
	select {
	case <-k.Lost():
		t.Fatal("the timer fired; the test shows nothing")
	default:
	}
}
