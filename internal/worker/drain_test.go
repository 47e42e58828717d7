package worker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestDrainLetsShortJobsFinishAndHandsBackLongOnes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := sandruntest.FastConfig()
	cfg.Name = "draining"
	cfg.DrainTimeout = 2 * time.Second
	a := sandruntest.StartWorker(t, e.st, cfg)
	short, err := e.c.Submit(e.ctx, jobs.Spec{Command: "sleep 1; echo short"})
	if err != nil {
		t.Fatal(err)
	}
	long, err := e.c.Submit(e.ctx, jobs.Spec{Command: "echo long-$ATTEMPT_MARK; sleep 30", Env: map[string]string{"ATTEMPT_MARK": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(t, short.ID, 10*time.Second, running)
	e.waitState(t, long.ID, 10*time.Second, running)
	a.Stop() // what SIGTERM does

	if r := sandruntest.WaitResult(t, e.c, short.ID, time.Second); r.State != jobs.StateSucceeded || r.Worker != "draining" {
		t.Fatalf("short job: %s by %s, want succeeded by the draining worker", r.State, r.Worker)
	}
	st := e.waitState(t, long.ID, 5*time.Second, func(s client.Status) bool { return s.State() == jobs.StateQueued })
	if st.Run.Attempt != 0 || !strings.Contains(st.Run.LastError, "shutdown") {
		t.Fatalf("handed-back job: attempt %d, last error %q; want the attempt given back", st.Run.Attempt, st.Run.LastError)
	}
	cfg.Name = "next"
	sandruntest.StartWorker(t, e.st, cfg)
	e.waitState(t, long.ID, 10*time.Second, func(s client.Status) bool { return running(s) && s.Run.Worker == "next" })
}

func TestMetricsCountOutcomes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	w := sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	specs := []jobs.Spec{
		{Command: "true"},
		{Command: "exit 1", MaxAttempts: 1},
		{Command: "sleep 10", Timeout: jobs.Duration(500 * time.Millisecond)},
		{Command: "mkfs.ext4 /dev/sda1"},
	}
	for _, s := range specs {
		sub, err := e.c.Submit(e.ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		sandruntest.WaitResult(t, e.c, sub.ID, 30*time.Second)
	}
	want := `
# HELP sandrun_jobs_finished_total Job attempts finished, by outcome (retry_wait for a failed attempt that will be retried).
# TYPE sandrun_jobs_finished_total counter
sandrun_jobs_finished_total{backend="local",queue="default",status="denied"} 1
sandrun_jobs_finished_total{backend="local",queue="default",status="failed"} 1
sandrun_jobs_finished_total{backend="local",queue="default",status="succeeded"} 1
sandrun_jobs_finished_total{backend="local",queue="default",status="timed_out"} 1
# HELP sandrun_script_timeouts_total Job commands killed by their timeout.
# TYPE sandrun_script_timeouts_total counter
sandrun_script_timeouts_total{backend="local"} 1
# HELP sandrun_jobs_claimed_total Job attempts claimed by this worker.
# TYPE sandrun_jobs_claimed_total counter
sandrun_jobs_claimed_total{backend="local",queue="default"} 4
`
	if err := testutil.GatherAndCompare(w.Metrics.Registry, strings.NewReader(want),
		"sandrun_jobs_finished_total", "sandrun_script_timeouts_total", "sandrun_jobs_claimed_total"); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, w, "sandrun_policy_decisions_total"); got != 4 {
		t.Fatalf("policy decisions %v, want 4", got)
	}
	if n := testutil.CollectAndCount(w.Metrics.RunDuration); n != 1 {
		t.Fatalf("run duration series %d, want 1 (queue=default, backend=local)", n)
	}
}
