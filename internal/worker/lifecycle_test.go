package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// env is one test's embedded server, store, client and context.
type env struct {
	st  *jobs.Store
	c   *client.Client
	ctx context.Context
	url string
}

func setup(t *testing.T) env {
	t.Helper()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	return env{st: st, c: sandruntest.Client(st), ctx: sandruntest.Ctx(t), url: s.ClientURL()}
}

// waitState polls the job until pred holds or d passes.
func (e env) waitState(t *testing.T, id string, d time.Duration, pred func(client.Status) bool) client.Status {
	t.Helper()
	var st client.Status
	sandruntest.Eventually(t, d, func() (bool, string) {
		var err error
		st, err = e.c.Status(e.ctx, id)
		return err == nil && pred(st), fmt.Sprintf("job %s: condition not met (state %s, err %v)", id, st.State(), err)
	})
	return st
}

func running(st client.Status) bool { return st.State() == jobs.StateRunning }

func TestTimeoutKillsGrandchildren(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	// Two background grandchildren that ignore TERM, their pids printed.
	cmd := `sh -c 'trap "" TERM; sleep 60' & echo $!; sh -c 'trap "" TERM; sleep 60 & wait' & echo $!; wait`
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: cmd, Timeout: jobs.Duration(time.Second), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateTimedOut || r.ExitCodeFor() != 124 {
		t.Fatalf("state %s (exit for CLI %d), want timed_out/124", r.State, r.ExitCodeFor())
	}
	pids := strings.Fields(r.Stdout.Head)
	if len(pids) != 2 {
		t.Fatalf("want 2 pids in output, got %q", r.Stdout.Head)
	}
	for _, p := range pids {
		pid, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		if !backendtest.HostProcessGone(t, pid) {
			t.Errorf("grandchild %d survived the timeout", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func TestCancelQueuedJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	marker := filepath.Join(t.TempDir(), "ran")
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Queue: "idle", Command: "touch " + marker})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.c.Cancel(e.ctx, spec.ID)
	if err != nil || out != client.CancelRequested {
		t.Fatalf("cancel: %v %v, want %s", out, err, client.CancelRequested)
	}
	// A worker that later serves the queue ends the job without running
	// it: the request was made before any claim.
	cfg := sandruntest.FastConfig()
	cfg.Queues = []string{"idle"}
	w := sandruntest.StartWorker(t, e.st, cfg)
	r := sandruntest.WaitResult(t, e.c, spec.ID, 15*time.Second)
	if r.State != jobs.StateCanceled {
		t.Fatalf("state %s, want canceled", r.State)
	}
	e.waitDrained(t, "idle")
	w.Stop()
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("canceled job ran")
	}
	if out, _ := e.c.Cancel(e.ctx, spec.ID); out != client.CancelTooLate {
		t.Fatalf("second cancel: %s, want too_late", out)
	}
}

// waitDrained waits until the consumers of queue q's lanes have nothing
// pending or unacked.
func (e env) waitDrained(t *testing.T, q string) {
	t.Helper()
	sandruntest.Eventually(t, 15*time.Second, func() (bool, string) {
		busy, seen := 0, 0
		stream, err := e.st.JS.Stream(e.ctx, jobs.StreamJobs)
		if err != nil {
			return false, err.Error()
		}
		for info := range stream.ListConsumers(e.ctx).Info() {
			if info.Name == jobs.ConsumerName(q, "") || strings.HasPrefix(info.Name, jobs.ConsumerName(q, "")+"~") {
				seen++
				if info.NumPending != 0 || info.NumAckPending != 0 {
					busy++
				}
			}
		}
		return seen > 0 && busy == 0, fmt.Sprintf("queue %s not drained: %d of its %d consumers busy", q, busy, seen)
	})
}

func TestCancelRunningJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "echo started; exec sleep 60"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(t, spec.ID, 10*time.Second, running)
	out, err := e.c.Cancel(e.ctx, spec.ID)
	if err != nil || out != client.CancelRequested {
		t.Fatalf("cancel: %v %v, want %s", out, err, client.CancelRequested)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 15*time.Second)
	if r.State != jobs.StateCanceled || r.Attempt != 1 {
		t.Fatalf("state %s attempt %d, want canceled after 1 attempt", r.State, r.Attempt)
	}
	if r.WallSeconds > 30 {
		t.Fatalf("cancel took effect only after %.1fs", r.WallSeconds)
	}
}

// attemptsLog collects the job's claimed and retry events.
type attemptsLog struct {
	mu     sync.Mutex
	events []jobs.Event
}

func (a *attemptsLog) add(e jobs.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, e)
}

func TestRetryAfterBackoffThenSuccess(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	counter := filepath.Join(t.TempDir(), "n")
	cmd := fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s; echo "attempt $n"; [ $n -ge 3 ]`, counter)
	backoff := 1500 * time.Millisecond
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: cmd, MaxAttempts: 5,
		Retry: &jobs.Backoff{Initial: jobs.Duration(backoff), Factor: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var log attemptsLog
	r, err := e.c.Follow(e.ctx, spec.ID, client.FollowOptions{Events: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != jobs.StateSucceeded || r.Attempt != 3 || strings.TrimSpace(r.Stdout.Head) != "attempt 3" {
		t.Fatalf("result %s attempt %d output %q, want succeeded on attempt 3", r.State, r.Attempt, r.Stdout.Head)
	}
	// Each retry waited at least its backoff: from the failed attempt's
	// retry event to the next claim.
	var retryAt []time.Time
	var claimAt []time.Time
	for _, ev := range log.events {
		switch ev.Kind {
		case "retry":
			retryAt = append(retryAt, ev.Time)
		case "claimed":
			claimAt = append(claimAt, ev.Time)
		}
	}
	if len(retryAt) != 2 || len(claimAt) != 3 {
		t.Fatalf("saw %d retries and %d claims, want 2 and 3", len(retryAt), len(claimAt))
	}
	for i, at := range retryAt {
		if gap := claimAt[i+1].Sub(at); gap < backoff-10*time.Millisecond {
			t.Errorf("retry %d claimed %s after the failure, before its %s backoff", i+1, gap, backoff)
		}
	}
}

func TestAlwaysFailingJobEndsInDLQ(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "echo boom >&2; exit 7", MaxAttempts: 3,
		Retry: &jobs.Backoff{Initial: jobs.Duration(500 * time.Millisecond), Factor: 1}})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateDead || r.Attempt != 3 || r.ExitCode != 7 {
		t.Fatalf("result %s attempt %d exit %d, want dead after 3 attempts with exit 7", r.State, r.Attempt, r.ExitCode)
	}
	if r.Stderr.Head != "boom\n" {
		t.Fatalf("stderr %q", r.Stderr.Head)
	}
	entry := e.dlqEntry(t, spec.ID)
	if entry.Attempts != 3 || !strings.Contains(entry.Reason, "exit code 7") || entry.Spec == nil {
		t.Fatalf("dlq entry %+v: want 3 attempts, the last error and the spec", entry)
	}
}

func TestNonRetryableExitCodeFailsAtOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "exit 9", MaxAttempts: 3,
		Retry: &jobs.Backoff{NoRetryExitCodes: []int{9}}})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateFailed || r.Attempt != 1 || r.ExitCode != 9 {
		t.Fatalf("result %s attempt %d exit %d, want failed after 1 attempt", r.State, r.Attempt, r.ExitCode)
	}
}

func (e env) dlqEntry(t *testing.T, id string) jobs.DLQEntry {
	t.Helper()
	var entry jobs.DLQEntry
	// A 10 MB message under a loaded CI machine takes a while: one CI run
	// on two cores shared with the drills and the policy suite went past
	// 30 s (alone it takes about a second); a redelivery after the claim
	// window is part of the path it may take.
	sandruntest.Eventually(t, 2*time.Minute, func() (bool, string) {
		var err error
		entry, _, err = e.st.GetDLQ(e.ctx, id)
		return err == nil, fmt.Sprintf("no DLQ entry for %s: %v", id, err)
	})
	return entry
}

func TestDLQRetryRunsTheJobAgain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	flag := filepath.Join(t.TempDir(), "ok")
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "test -e " + flag, MaxAttempts: 2,
		Retry: &jobs.Backoff{Initial: jobs.Duration(100 * time.Millisecond)}})
	if err != nil {
		t.Fatal(err)
	}
	if r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second); r.State != jobs.StateDead {
		t.Fatalf("state %s, want dead", r.State)
	}
	e.dlqEntry(t, spec.ID)
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.c.RetryDLQ(e.ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	st := e.waitState(t, spec.ID, 30*time.Second, func(s client.Status) bool { return s.State() == jobs.StateSucceeded })
	if st.Result.Attempt != 1 {
		t.Fatalf("attempt %d after dlq retry, want a fresh budget (1)", st.Result.Attempt)
	}
	if _, _, err := e.st.GetDLQ(e.ctx, spec.ID); err == nil {
		t.Fatal("dlq entry still there after retry")
	}
}

func TestGarbageOnJobsSubjectGoesToDLQ(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	big := make([]byte, 10<<20)
	for i := range big {
		big[i] = 'x'
	}
	garbage := []struct {
		body   []byte
		reason string
	}{
		{[]byte("this is not json"), "invalid JSON"},
		{[]byte(`{"id":"g1","queue":"default","command":5}`), "command: wrong type"},
		{[]byte(`{"id":"g2","queue":"default","command":"true","timeout":"soon"}`), "timeout: invalid duration"},
		{[]byte(`{"id":"g3","queue":"default","command":"true","bogus":1}`), "bogus: unknown field"},
		{[]byte(`{"id":"g4","queue":"default","command":"  "}`), "command: must not be empty"},
		{[]byte(`{"id":"g5","queue":"default","command":"x","env":{"TOKEN":"hunter2"},"secret_env":["TOKEN"],"timeout":"bad"}`), "timeout: invalid duration"},
		{big, "spec too large"},
	}
	seqs := make([]uint64, len(garbage))
	for i, g := range garbage {
		ack, err := e.st.JS.Publish(e.ctx, jobs.JobSubject("default", jobs.AnonymousOwner), g.body)
		if err != nil {
			t.Fatalf("publish garbage %d: %v", i, err)
		}
		seqs[i] = ack.Sequence
	}
	// The worker keeps serving: a valid job after the garbage runs.
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "echo still here"})
	if err != nil {
		t.Fatal(err)
	}
	if r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second); r.State != jobs.StateSucceeded {
		t.Fatalf("job after garbage: %s", r.State)
	}
	for i, g := range garbage {
		entry := e.dlqEntry(t, fmt.Sprintf("invalid-default-%d", seqs[i]))
		if !strings.Contains(entry.Reason, g.reason) {
			t.Errorf("garbage %d: reason %q, want it to contain %q", i, entry.Reason, g.reason)
		}
		if strings.Contains(entry.Raw, "hunter2") {
			t.Errorf("garbage %d: secret env value copied to the DLQ: %s", i, entry.Raw)
		}
		if entry.RawSize != len(g.body) || len(entry.Raw) > 4<<10+64 {
			t.Errorf("garbage %d: raw size %d (kept %d bytes), want %d and a bounded copy", i, entry.RawSize, len(entry.Raw), len(g.body))
		}
	}
	if got := counterValue(t, w, "sandrun_invalid_messages_total"); got != float64(len(garbage)) {
		t.Fatalf("invalid messages counted %v, want %d", got, len(garbage))
	}
	e.waitDrained(t, "default")
}

// A valid job published raw (not through submit) is adopted and run.
func TestRawPublishedJobIsAdopted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	body, _ := json.Marshal(jobs.Spec{ID: "raw-1", Queue: "default", Command: "echo adopted"})
	if _, err := e.st.JS.Publish(e.ctx, jobs.JobSubject("default", jobs.AnonymousOwner), body); err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, e.c, "raw-1", 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Stdout.Head != "adopted\n" {
		t.Fatalf("raw job: %s %q", r.State, r.Stdout.Head)
	}
}
