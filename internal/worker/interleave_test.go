package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// record is the job record a worker that is gone left for an anonymous
// manual job: state, attempt and who held it, as of at.
func record(spec jobs.Spec, state jobs.State, attempt int, holder string, at time.Time) jobs.Run {
	spec.Origin = jobs.OriginManual
	owner, _ := jobs.ParseOwner(jobs.AnonymousOwner)
	return jobs.Run{Spec: spec, Owner: owner, State: state, Attempt: attempt, Worker: holder, UpdatedAt: at.UTC()}
}

// TestStrayCopyAfterCommitDoesNotRunAgain is interleaving 1 of the issue:
// a worker commits its result and dies; a stray copy of the dispatch
// message (a lost ack, a re-dispatch) is claimed. It used to find the
// record running (the result was a second write, the terminal state a
// third), count attempt 2 and commit a second result over the first. The
// result is now part of the one write that ends the record, so the copy
// finds the job ended and is dropped, and the record is not written again.
func TestStrayCopyAfterCommitDoesNotRunAgain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	marker := filepath.Join(t.TempDir(), "ran")
	spec := jobs.Spec{ID: "stray-copy", Command: "touch " + marker, MaxAttempts: 1}.WithDefaults()

	// The dead worker's writes: its claim (running, attempt 1) and its
	// commit, under a lease that then expires unreleased.
	run := record(spec, jobs.StateRunning, 1, "dead", time.Now())
	rev, err := e.st.CreateRun(e.ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.Acquire(e.ctx, e.st.JS, e.st.State, jobs.LeaseKey(spec.ID), time.Second, []byte(`{"worker":"dead"}`)); err != nil {
		t.Fatal(err)
	}
	res := jobs.Result{JobID: spec.ID, Queue: spec.Queue, Backend: spec.Backend, State: jobs.StateSucceeded, Attempt: 1, Worker: "dead", FinishedAt: time.Now().UTC()}
	if _, _, err := e.st.End(e.ctx, run, res, rev); err != nil {
		t.Fatal(err)
	}
	committed, err := e.st.State.Get(e.ctx, jobs.RunKey(spec.ID))
	if err != nil {
		t.Fatal(err)
	}

	// A stray copy, and a worker without a reaper: only the claim can act.
	if err := e.st.PublishJob(e.ctx, spec, jobs.AnonymousOwner, "stray-copy.copy"); err != nil {
		t.Fatal(err)
	}
	cfg := sandruntest.FastConfig()
	cfg.NoReaper = true
	sandruntest.StartWorker(t, e.st, cfg)

	st := e.waitState(t, spec.ID, 20*time.Second, func(s client.Status) bool { return s.Run.State.Terminal() })
	if st.Run.State != jobs.StateSucceeded || st.Result == nil || st.Result.State != jobs.StateSucceeded {
		t.Fatalf("record %s, result %+v: want the committed success to stand", st.Run.State, st.Result)
	}
	// The copy is dropped once the dead worker's lease has expired:
	// wait for the message to be acked, then compare.
	waitAcked(t, e, 20*time.Second)
	now, err := e.st.State.Get(e.ctx, jobs.RunKey(spec.ID))
	if err != nil {
		t.Fatal(err)
	}
	if now.Revision() != committed.Revision() {
		t.Errorf("the record was written again (revision %d, committed at %d)", now.Revision(), committed.Revision())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the job ran again")
	}
	if st.Run.Attempt != 1 {
		t.Errorf("attempt %d, want 1", st.Run.Attempt)
	}
}

// TestRefusedMessageEndsItsJob is interleaving 4 of the issue: a message a
// worker refuses (over the wire limit, or a field a newer client added)
// used to leave its submitter waiting on a job that never ran, and the
// DLQ kept an oversize message's secret value. The job now ends failed,
// saying why, and the DLQ copy holds no env value.
func TestRefusedMessageEndsItsJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	pad := strings.Repeat("x", 300<<10)
	bodies := map[string]string{
		"refused-big":    `{"id":"refused-big","queue":"default","command":"true","env":{"TOKEN":"hunter2","PAD":"` + pad + `"},"secret_env":["TOKEN"]}`,
		"refused-newer":  `{"id":"refused-newer","queue":"default","command":"true","priority":7}`,
		"refused-broken": `{"id":"refused-broken","queue":"default","env":{"TOKEN":"hunter2"},"command":`,
	}
	for id, body := range bodies {
		if _, err := e.st.JS.Publish(e.ctx, jobs.JobSubject("default", jobs.AnonymousOwner), []byte(body)); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	for _, id := range []string{"refused-big", "refused-newer"} {
		r := sandruntest.WaitResult(t, e.c, id, 30*time.Second)
		if r.State != jobs.StateFailed || !strings.Contains(r.Error, "not a valid job") {
			t.Errorf("%s: %s %q, want failed, saying why", id, r.State, r.Error)
		}
	}
	entries, err := e.c.DLQ(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(bodies) {
		t.Errorf("%d DLQ entries, want %d", len(entries), len(bodies))
	}
	for _, d := range entries {
		if strings.Contains(d.Raw, "hunter2") {
			t.Errorf("DLQ entry %s holds the secret value: %.200s", d.JobID, d.Raw)
		}
	}
}

// TestQueuedRecordWithoutMessageRuns is interleaving 3 of the issue: a
// hand-back or requeue that died between recording queued and publishing
// left a queued record with no message, which nothing ever ran. Writers
// now publish first; the reaper re-publishes a queued record no worker
// claimed within a claim window.
func TestQueuedRecordWithoutMessageRuns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := jobs.Spec{ID: "stranded", Command: "echo ran", MaxAttempts: 1}.WithDefaults()
	run := record(spec, jobs.StateQueued, 0, "", time.Now().Add(-time.Minute))
	run.LastError = "attempt 1: stopped by the shutdown of worker gone"
	if _, err := e.st.CreateRun(e.ctx, run); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateSucceeded || !strings.Contains(r.Stdout.Head, "ran") {
		t.Fatalf("%s %q, want the stranded job to run", r.State, r.Stdout.Head)
	}
}

// TestCancelSurvivesRecordOverwrite is interleaving 5 of the issue: a
// retry or hand-back rewrote the job record from the copy read at its
// claim, erasing a cancel flag set while the attempt ran, and attempt 2
// ran. A cancel request is its own key, which no record write touches:
// here the request is made while attempt 1 runs on a worker that cannot
// act on it, the record is then rewritten for the retry, and the retry's
// claim must end the job canceled without running it.
func TestCancelSurvivesRecordOverwrite(t *testing.T) {
	t.Parallel()
	e := setup(t)
	marker := filepath.Join(t.TempDir(), "ran")
	spec := jobs.Spec{ID: "cancel-kept", Command: "touch " + marker, MaxAttempts: 3}.WithDefaults()
	run := record(spec, jobs.StateRunning, 1, "frozen", time.Now())
	rev, err := e.st.CreateRun(e.ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := e.c.Cancel(e.ctx, spec.ID); err != nil || out != "requested" {
		t.Fatalf("cancel: %v %v", out, err)
	}
	// The frozen worker wakes, fails its attempt and records the retry
	// from its own copy: no cancel flag.
	run.State, run.NextAttemptAt, run.LastError = jobs.StateRetryWait, time.Now().UTC(), "attempt 1: exit code 1"
	if _, err := e.st.UpdateRun(e.ctx, run, rev); err != nil {
		t.Fatal(err)
	}
	if err := e.st.PublishJob(e.ctx, spec, jobs.AnonymousOwner, "cancel-kept.a1.retry"); err != nil {
		t.Fatal(err)
	}
	cfg := sandruntest.FastConfig()
	cfg.NoReaper = true
	sandruntest.StartWorker(t, e.st, cfg)
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateCanceled {
		t.Fatalf("%s (%s), want canceled", r.State, r.Error)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("attempt 2 ran after the cancel")
	}
}

// TestOutputIsCapped: one `yes` used to fill the spool disk, then
// JetStream, after which every write of the deployment failed. Output
// past worker.output_max is counted and hashed but not kept, and the
// result says so.
func TestOutputIsCapped(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := sandruntest.FastConfig()
	cfg.OutputMax = 1 << 20
	// 5 MB of output through one connection (live events, the stored
	// part) on a loaded machine can hold a renewal past the fast
	// config's 3 s lease, which is not what this test is about.
	cfg.LeaseTTL = 10 * time.Second
	sandruntest.StartWorker(t, e.st, cfg)
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "head -c 5000000 /dev/zero | tr '\\0' y", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 60*time.Second)
	if r.State != jobs.StateSucceeded {
		t.Fatalf("%s: %s", r.State, r.Error)
	}
	o := r.Stdout
	if o.Size != 5000000 || !o.Capped || o.Stored != 1<<20 || o.Subject == "" {
		t.Fatalf("output %+v: want 5000000 bytes counted, 1 MiB stored, capped", o)
	}
	var stored countWriter
	if err := e.st.ReadOutput(e.ctx, o.Subject, o.Stored, &stored); err != nil {
		t.Fatal(err)
	}
	if stored != 1<<20 {
		t.Errorf("OUTPUTS holds %d bytes, want %d", stored, 1<<20)
	}
	var buf strings.Builder
	if err := e.c.Output(e.ctx, r, &buf, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "output capped at 1048576 of 5000000 bytes") {
		t.Errorf("the output shown does not say it was capped: …%s", buf.String()[max(0, buf.Len()-120):])
	}
}

// waitAcked waits until every dispatch message is acked (the JOBS stream
// is a work queue: an acked message is removed).
func waitAcked(t *testing.T, e env, d time.Duration) {
	t.Helper()
	sandruntest.Eventually(t, d, func() (bool, string) {
		s, err := e.st.JS.Stream(e.ctx, jobs.StreamJobs)
		if err != nil {
			return false, err.Error()
		}
		n := s.CachedInfo().State.Msgs
		return n == 0, fmt.Sprintf("%d dispatch messages still unacked", n)
	})
}

// TestReaperEndsCanceledJobCanceled: a job canceled while its worker was
// gone (running, its lease expired) used to be requeued, or ended dead
// when its attempts were spent. The reaper now ends it canceled.
func TestReaperEndsCanceledJobCanceled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := jobs.Spec{ID: "canceled-orphan", Command: "true", MaxAttempts: 1}.WithDefaults()
	if _, err := e.st.CreateRun(e.ctx, record(spec, jobs.StateRunning, 1, "gone", time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := e.st.RequestCancel(e.ctx, jobs.AnonymousOwner, spec.ID); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateCanceled {
		t.Fatalf("%s %q, want canceled", r.State, r.Error)
	}
}

// TestEarlyRetryCopyWaitsForItsBackoff: a copy of a job waiting for its
// retry (the reaper reschedules a retry stuck behind a backlog, and past
// the duplicate window the copy is not dropped) used to run the next
// attempt at once, attempts back to back without their backoff. It now
// waits until the record's next attempt time.
func TestEarlyRetryCopyWaitsForItsBackoff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec := jobs.Spec{ID: "early-copy", Command: "true", MaxAttempts: 3}.WithDefaults()
	next := time.Now().Add(3 * time.Second).UTC()
	run := record(spec, jobs.StateRetryWait, 1, "", time.Now())
	run.NextAttemptAt = next
	if _, err := e.st.CreateRun(e.ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := e.st.PublishJob(e.ctx, run.Spec, jobs.AnonymousOwner, "early-copy.copy"); err != nil {
		t.Fatal(err)
	}
	cfg := sandruntest.FastConfig()
	cfg.NoReaper = true
	sandruntest.StartWorker(t, e.st, cfg)
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Attempt != 2 {
		t.Fatalf("%s attempt %d, want succeeded on attempt 2", r.State, r.Attempt)
	}
	if r.StartedAt.Before(next) {
		t.Errorf("attempt 2 started %s before its backoff ended", next.Sub(r.StartedAt).Round(time.Millisecond))
	}
}

// TestHugeDenialIsCommitted: a command near the size limit made of
// dangerous commands recorded all of its 7,926 matches, most of the 1 MiB
// message the terminal record (spec and result together) must fit in. The
// recorded decision is bounded: the first matches and a count of the rest.
// The command here is a quarter of that size (about 2,000 matches): judged
// well inside the policy's CPU budget even on a loaded machine, where the
// full size may run out of it and be denied as too complex instead.
func TestHugeDenialIsCommitted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	unit := "dd of=/dev/sda; mkfs /dev/sdb; "
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: strings.Repeat(unit, (30<<10)/len(unit)), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 60*time.Second)
	if r.State != jobs.StateDenied || r.Policy == nil {
		t.Fatalf("%s %q, want denied with its decision", r.State, r.Error)
	}
	if len(r.Policy.Matches) != jobs.MaxPolicyMatches || r.Policy.MatchesOmitted == 0 {
		t.Errorf("%d matches recorded, %d omitted: want the first %d and a count of the rest", len(r.Policy.Matches), r.Policy.MatchesOmitted, jobs.MaxPolicyMatches)
	}
}

// countWriter counts what is written to it.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
