package drills

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// TestLeadersKilled: on a 3-node cluster, two schedulers fire three
// @every 1s schedules whose jobs sleep 2 s, on two workers. The scheduler
// leader is killed with SIGKILL, then the worker that leads the reaper,
// with jobs running on it. The other scheduler takes over and catches up
// the slots it missed; the other worker becomes the reaper leader and
// recovers the dead worker's jobs once their leases expire. Every slot of
// the run has exactly one job, and every job exactly one result.
func TestLeadersKilled(t *testing.T) {
	c := startCluster(t)
	url := c.url()
	if err := natsutil.WaitJetStream(t.Context(), url, 3); err != nil {
		t.Fatal(err)
	}
	fast := []string{"--election-ttl", "5s", "--reaper-scan", "5s"}
	workers := map[string]*proc{"drill-w0": startWorker(t, url, "drill-w0", fast...)}
	cl := connect(t, url)
	workers["drill-w1"] = startWorker(t, url, "drill-w1", fast...)
	scheds := map[string]*proc{}
	for _, name := range []string{"drill-s0", "drill-s1"} {
		scheds[name] = start(t, name, "scheduler", "--nats-url", url, "--replicas", "3", "--name", name,
			"--election-ttl", "5s", "--log-format", "text")
	}
	st := cl.Store()
	writes := watchResults(t, st)
	ctx := t.Context()

	cat := scheduler.NewCatalog(st)
	window := jobs.Duration(time.Minute)
	names := []string{"drill-a", "drill-b", "drill-c"}
	for _, name := range names {
		s := scheduler.Schedule{Name: name, Cron: "@every 1s", CatchupWindow: &window,
			Job: client.Spec{Command: "sleep 2", MaxAttempts: 5}}
		if err := cat.Put(ctx, s, false); err != nil {
			t.Fatal(err)
		}
	}
	writes.waitKeys(t, 10, time.Minute, "after the schedules were added")

	// The scheduler leader dies; the other one wins the election and
	// fires every schedule again (only it can record a fire after the
	// kill).
	leader := electedAs(t, st, "scheduler")
	schedKilledAt := time.Now()
	scheds[leader].kill9()
	t.Logf("killed the scheduler leader %s", leader)
	waitFires(t, cat, names, schedKilledAt, 1, "by the new scheduler leader")

	// The reaper leader dies with jobs running on it.
	reaper := electedAs(t, st, "reaper")
	var orphans []string
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		running, err := cl.List(ctx, client.ListFilter{State: jobs.StateRunning})
		if err != nil {
			// A node of the cluster may not answer for a moment.
			return false, fmt.Sprintf("list running jobs: %v", err)
		}
		orphans = orphans[:0]
		for _, s := range running {
			if s.Run.Worker == reaper {
				orphans = append(orphans, s.Run.Spec.ID)
			}
		}
		return len(orphans) > 0, fmt.Sprintf("no job running on the reaper leader %s", reaper)
	})
	reaperKilledAt := time.Now()
	workers[reaper].kill9()
	reaperDeadAt := time.Now()
	t.Logf("killed the reaper leader %s with %d jobs running on it", reaper, len(orphans))
	workers["drill-w2"] = startWorker(t, url, "drill-w2", fast...)

	// Orphans recovered: each has a result from another worker.
	var orphansDone time.Duration
	sandruntest.Eventually(t, 2*time.Minute, func() (bool, string) {
		at := writes.storedAt(orphans)
		if at.IsZero() {
			return false, "the dead reaper leader's jobs have not all ended after the kill"
		}
		orphansDone = at.Sub(reaperKilledAt)
		return true, ""
	})
	recoveredAt := time.Now()
	newReaper := electedAs(t, st, "reaper")

	// The run goes on after the recovery for five more slots of every
	// schedule; then firing stops: the scheduler left stops, and once it
	// has exited, every fire it had begun has been dispatched (a submit
	// once begun is finished).
	waitFires(t, cat, names, recoveredAt, 5, "after the recovery")
	for name, p := range scheds {
		if name != leader {
			stopAll(p)
		}
	}
	// A slot's job has a record once a worker has claimed it. Once the
	// JOBS work queue is empty, every job dispatched has been claimed: a
	// gap in the records is a missing slot. One the killed worker had
	// fetched and not yet claimed waits out its claim window (60 s) in the
	// queue first.
	sandruntest.Eventually(t, 3*time.Minute, func() (bool, string) {
		q := sandruntest.Queued(t, st)
		ids := make([]string, 0, len(q))
		for _, s := range q {
			ids = append(ids, s.ID)
		}
		return len(q) == 0, fmt.Sprintf("jobs still in the queue: %v", ids)
	})
	// A node's listing can lag the results the watch has seen (a record
	// written a moment before, read from a follower): list until it holds
	// a job for every cron result. A job without a record has no result,
	// so a real gap stays a gap.
	var (
		fired map[string][]int64
		n     int
	)
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		fired, n = cronJobs(t, cl, names), 0
		listed := map[string]bool{}
		for name, slots := range fired {
			n += len(slots)
			for _, slot := range slots {
				listed[scheduler.SlotID(name, time.Unix(slot, 0))] = true
			}
		}
		var unlisted []string
		for id := range writes.snapshot() {
			if strings.HasPrefix(id, "cron-") && !listed[id] {
				unlisted = append(unlisted, id)
			}
		}
		return len(unlisted) == 0, fmt.Sprintf("jobs listed %d; cron results of jobs not listed: %v", n, unlisted)
	})
	writes.waitKeys(t, n, 2*time.Minute, "after the scheduler stopped")
	// The workers stop; once the watch has seen a later write, no stray
	// commit is left to land before counting.
	stopAll(slices.Collect(maps.Values(workers))...)
	writes.barrier(t)

	got := writes.snapshot()
	dups, lost, gaps := 0, 0, 0
	var firstAfterKill time.Time
	for name, slots := range fired {
		for i, slot := range slots {
			id := scheduler.SlotID(name, time.Unix(slot, 0))
			switch got[id] {
			case 0:
				lost++
				t.Errorf("%s: no result", id)
			case 1:
			default:
				dups++
				t.Errorf("%s: %d result writes", id, got[id])
			}
			if i > 0 && slot != slots[i-1]+1 {
				gaps += int(slot - slots[i-1] - 1)
				t.Errorf("%s: slots %d..%d have no job", name, slots[i-1]+1, slot-1)
			}
		}
	}
	// A job listed as running on the killed worker either committed just
	// before the kill (its result stored by the time the worker was dead,
	// give or take what was already on the wire) or ran again elsewhere.
	rerun := 0
	for _, id := range orphans {
		r, err := st.GetResult(ctx, id)
		switch {
		case err != nil:
			t.Errorf("%s (running on the killed worker): %v", id, err)
		case r.Worker == reaper:
			if at := writes.storedAt([]string{id}); at.After(reaperDeadAt.Add(time.Second)) {
				t.Errorf("%s: result of the killed worker stored %s after its death", id, at.Sub(reaperDeadAt))
			}
		case r.Attempt < 2:
			t.Errorf("%s (running on the killed worker): result %+v; want attempt 2 or later", id, r)
		default:
			rerun++
		}
	}
	if rerun == 0 {
		t.Errorf("none of the %d jobs running on the killed worker ran again: the recovery was not exercised", len(orphans))
	}
	// The first job the new scheduler leader fired: the earliest submit
	// after the kill.
	for _, name := range names {
		for _, slot := range fired[name] {
			r, _, err := st.GetRun(ctx, scheduler.SlotID(name, time.Unix(slot, 0)))
			if err == nil && r.Spec.SubmittedAt.After(schedKilledAt) && (firstAfterKill.IsZero() || r.Spec.SubmittedAt.Before(firstAfterKill)) {
				firstAfterKill = r.Spec.SubmittedAt
			}
		}
	}
	failed := n - writes.states()[jobs.StateSucceeded]
	keys, total := writes.total()
	t.Logf("DRILL leaders-killed: jobs %d (%d schedules, slots %d..%d), lost %d, not succeeded %d, duplicate commits %d (result keys %d, writes %d), missing slots %d; "+
		"scheduler leader %s killed: next fire %s after; reaper leader %s killed with %d jobs on it (%d ran again): new reaper %s, its jobs ended %s after the kill",
		n, len(names), fired[names[0]][0], fired[names[0]][len(fired[names[0]])-1], lost, failed, dups, keys, total, gaps,
		leader, firstAfterKill.Sub(schedKilledAt).Round(time.Millisecond), reaper, len(orphans), rerun, newReaper, orphansDone.Round(time.Millisecond))
	if lost != 0 || dups != 0 || gaps != 0 || failed != 0 || newReaper == reaper {
		t.Fatalf("lost %d, duplicates %d, missing slots %d, not succeeded %d, reaper leader %s after killing %s", lost, dups, gaps, failed, newReaper, reaper)
	}
}

// electedAs returns the candidate leading role, waiting for an election.
func electedAs(t *testing.T, st *jobs.Store, role string) string {
	t.Helper()
	var leader string
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		e, err := st.Elections.Get(t.Context(), role)
		if err != nil || len(e.Value()) == 0 {
			return false, fmt.Sprintf("no %s leader: %v", role, err)
		}
		leader = string(e.Value())
		return true, ""
	})
	return leader
}

// waitFires waits until every schedule has fired n slots after t0, as the
// leading scheduler records them in the schedule's state; when says when,
// for the message.
func waitFires(t *testing.T, cat *scheduler.Catalog, names []string, t0 time.Time, n int, when string) {
	t.Helper()
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		for _, name := range names {
			st, err := cat.State(t.Context(), name)
			if err != nil {
				return false, fmt.Sprintf("state of %s: %v", name, err)
			}
			got := 0
			for _, f := range st.History {
				if (f.Kind == "slot" || f.Kind == "catchup") && f.At.After(t0) {
					got++
				}
			}
			if got < n {
				return false, fmt.Sprintf("schedule %s fired %d of %d slots %s", name, got, n, when)
			}
		}
		return true, ""
	})
}

// cronJobs returns the slots (unix seconds, sorted) that have a job, by
// schedule.
func cronJobs(t *testing.T, cl *client.Client, names []string) map[string][]int64 {
	t.Helper()
	var all []client.Status
	// A node of the cluster may not answer for a moment: try again.
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		var err error
		all, err = cl.List(t.Context(), client.ListFilter{Limit: 100_000})
		return err == nil, fmt.Sprintf("list jobs: %v", err)
	})
	out := map[string][]int64{}
	for _, s := range all {
		for _, name := range names {
			rest, ok := strings.CutPrefix(s.Run.Spec.ID, "cron-"+name+"-")
			if !ok {
				continue
			}
			v, err := strconv.ParseInt(rest, 10, 64)
			if err != nil {
				t.Fatalf("job %s: %v", s.Run.Spec.ID, err)
			}
			out[name] = append(out[name], v)
		}
	}
	for _, name := range names {
		slices.Sort(out[name])
		if len(out[name]) == 0 {
			t.Fatalf("schedule %s fired nothing", name)
		}
	}
	return out
}
