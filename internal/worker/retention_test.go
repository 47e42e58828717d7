package worker_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestRetentionPerState: the server removes a succeeded job (record and
// stored output) when its retention passes, while a failed one stays; the
// expired job's status says it expired; a finished job leaves no lease
// or other key behind, and the lease's release leaves no marker.
func TestRetentionPerState(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	const short = 3 * time.Second
	st, err := sandruntest.StoreWith(t, s.ClientURL(), jobs.LayoutConfig{Retention: jobs.Retention{Succeeded: short}})
	if err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	if got := c.Store().Retention.For("default", jobs.StateSucceeded); got != short {
		t.Fatalf("retention of succeeded jobs read back as %s, want %s", got, short)
	}

	// Output past the inline limit, so that both jobs store it.
	big := "head -c 300000 /dev/zero | tr '\\0' x"
	ok, err := c.Submit(ctx, jobs.Spec{Command: big})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := c.Submit(ctx, jobs.Spec{Command: big + "; exit 3", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	rOK := sandruntest.WaitResult(t, c, ok.ID, 30*time.Second)
	rBad := sandruntest.WaitResult(t, c, bad.ID, 30*time.Second)
	if rOK.State != jobs.StateSucceeded || rBad.State != jobs.StateFailed {
		t.Fatalf("states %s and %s, want succeeded and failed", rOK.State, rBad.State)
	}
	if rOK.Stdout.Subject == "" || rBad.Stdout.Subject == "" {
		t.Fatalf("output not stored: %+v %+v", rOK.Stdout, rBad.Stdout)
	}
	committed := time.Now()

	// The succeeded job goes when its retention has passed.
	var statusErr error
	sandruntest.Poll(time.Until(committed.Add(short+20*time.Second)), func() (bool, string) {
		_, statusErr = c.Status(ctx, ok.ID)
		return statusErr != nil, ""
	})
	gone := time.Since(committed)
	if !errors.Is(statusErr, jobs.ErrExpired) || !errors.Is(statusErr, jobs.ErrNotFound) {
		t.Fatalf("status of the succeeded job %s after its retention: %v, want it expired", gone.Round(time.Millisecond), statusErr)
	}
	if gone < short-time.Second {
		t.Fatalf("the succeeded job went %s after its commit, before its retention of %s", gone, short)
	}
	if err := c.Output(ctx, rOK, io.Discard, io.Discard); !errors.Is(err, jobs.ErrOutputGone) {
		t.Fatalf("output of the expired job: %v, want it gone", err)
	}
	// The failed one stays, output and all.
	stBad, err := c.Status(ctx, bad.ID)
	if err != nil || stBad.State() != jobs.StateFailed {
		t.Fatalf("status of the failed job: %+v, %v", stBad, err)
	}
	var n countWriter
	if err := c.Output(ctx, rBad, &n, io.Discard); err != nil || n != 300000 {
		t.Fatalf("output of the failed job: %d bytes, %v", n, err)
	}
	// What is left of both jobs in the jobstate bucket: the failed
	// job's record, the expired one's marker (for an hour), no lease.
	keys, err := st.State.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for k := range keys.Keys() {
		if k != jobs.SealKey { // the deployment's, not a job's
			left = append(left, k)
		}
	}
	if fmt.Sprint(left) != fmt.Sprint([]string{jobs.RunKey(bad.ID)}) {
		t.Fatalf("keys left: %v, want only the failed job's record", left)
	}
}

// TestStatusOfAnUnknownJob: a job that never was is "not found", not
// expired.
func TestStatusOfAnUnknownJob(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	c := sandruntest.Client(st)
	_, err := c.Status(sandruntest.Ctx(t), "never-was")
	if !errors.Is(err, jobs.ErrNotFound) || errors.Is(err, jobs.ErrExpired) {
		t.Fatalf("status of an unknown job: %v", err)
	}
}

// TestBatchStatusAfterItemsExpire: once a completed batch's items have
// expired, its status still says how they ended: from the end markers,
// which the server counts until their expiry markers go too, then from
// the completion its record keeps (with how many records are gone).
func TestBatchStatusAfterItemsExpire(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	const short = 2 * time.Second
	st, err := sandruntest.StoreWith(t, s.ClientURL(), jobs.LayoutConfig{Retention: jobs.Retention{Succeeded: short}})
	if err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	items := []jobs.Spec{{Command: "true"}, {Command: "true"}, {Command: "exit 2", MaxAttempts: 1}, {Command: "true"}}
	if _, err := c.SubmitBatch(ctx, client.BatchOptions{ID: "expiring"}, items); err != nil {
		t.Fatal(err)
	}
	if p, err := c.WaitBatch(ctx, "expiring", client.WaitOptions{}); err != nil || p.Done != 4 {
		t.Fatalf("wait: %+v %v", p, err)
	}
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		_, _, err := st.GetRun(ctx, jobs.BatchItemID("expiring", 0))
		return errors.Is(err, jobs.ErrNotFound), fmt.Sprintf("item 0's record: %v", err)
	})
	want := func(p client.BatchProgress) error {
		if p.Done != 4 || p.Counts[jobs.StateSucceeded] != 3 || p.Counts[jobs.StateFailed] != 1 || p.Completed == nil {
			return fmt.Errorf("status %+v, want 4 done (3 succeeded, 1 failed), completed", p)
		}
		return nil
	}
	p, err := c.BatchStatus(ctx, "expiring")
	if err != nil {
		t.Fatal(err)
	}
	if err := want(p); err != nil {
		t.Fatalf("after the successes expired: %v", err)
	}
	// Once the markers are gone too (ExpiryMarkerTTL later; here by a
	// purge), the completion answers.
	kvs, err := st.Stream(ctx, "KV_"+st.State.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := kvs.Purge(ctx, jetstream.WithPurgeSubject("$KV."+st.State.Bucket()+"."+jobs.BatchEndsFilter("expiring", jobs.StateSucceeded))); err != nil {
		t.Fatal(err)
	}
	if p, err = c.BatchStatus(ctx, "expiring"); err != nil {
		t.Fatal(err)
	}
	if err := want(p); err != nil || p.Expired != 3 {
		t.Fatalf("after the markers went: %v (expired %d, want 3)", err, p.Expired)
	}
}
