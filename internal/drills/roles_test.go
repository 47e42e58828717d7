package drills

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
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

	// The scheduler leader dies.
	leader := electedAs(t, st, "scheduler")
	schedKilledAt := time.Now()
	scheds[leader].kill9()
	t.Logf("killed the scheduler leader %s", leader)
	time.Sleep(8 * time.Second)

	// The reaper leader dies with jobs running on it.
	reaper := electedAs(t, st, "reaper")
	var orphans []string
	for deadline := time.Now().Add(30 * time.Second); len(orphans) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no job running on the reaper leader %s", reaper)
		}
		running, err := cl.List(ctx, client.ListFilter{State: jobs.StateRunning})
		if err != nil {
			// A node of the cluster may not answer for a moment.
			t.Logf("list running jobs: %v (trying again)", err)
			continue
		}
		orphans = orphans[:0]
		for _, s := range running {
			if s.Run.Worker == reaper {
				orphans = append(orphans, s.Run.Spec.ID)
			}
		}
	}
	reaperKilledAt := time.Now()
	workers[reaper].kill9()
	reaperDeadAt := time.Now()
	t.Logf("killed the reaper leader %s with %d jobs running on it", reaper, len(orphans))
	startWorker(t, url, "drill-w2", fast...)

	// Orphans recovered: each has a result from another worker.
	var orphansDone time.Duration
	for deadline := time.Now().Add(2 * time.Minute); orphansDone == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the dead reaper leader's jobs not ended 2 minutes after the kill")
		}
		if at := writes.storedAt(orphans); !at.IsZero() {
			orphansDone = at.Sub(reaperKilledAt)
		}
	}
	newReaper := electedAs(t, st, "reaper")

	// Stop firing, then let every fired job end.
	time.Sleep(5 * time.Second)
	for _, name := range names {
		if err := cat.SetSuspended(ctx, name, true); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // a fire under way when suspended lands
	fired := cronJobs(t, cl, names)
	// A slot's job has a record once a worker has claimed it. One the
	// killed worker had fetched and not yet claimed waits out its claim
	// window (60 s) in the queue: a gap in the records is a missing slot
	// only if no record comes within that window.
	for name, slots := range fired {
		for i := 1; i < len(slots); i++ {
			for slot := slots[i-1] + 1; slot < slots[i]; slot++ {
				id := scheduler.SlotID(name, time.Unix(slot, 0))
				for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
					if _, err := cl.Status(ctx, id); err == nil {
						t.Logf("%s: claimed late (its first delivery went to the killed worker)", id)
						fired[name] = append(fired[name], slot)
						break
					}
				}
			}
		}
		slices.Sort(fired[name])
	}
	n := 0
	for _, slots := range fired {
		n += len(slots)
	}
	writes.waitKeys(t, n, 2*time.Minute, "after the schedules were suspended")
	time.Sleep(500 * time.Millisecond)

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
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		e, err := st.Elections.Get(t.Context(), role)
		if err == nil && len(e.Value()) > 0 {
			return string(e.Value())
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s leader after a minute: %v", role, err)
		}
	}
}

// cronJobs returns the slots (unix seconds, sorted) that have a job, by
// schedule.
func cronJobs(t *testing.T, cl *client.Client, names []string) map[string][]int64 {
	t.Helper()
	var all []client.Status
	var err error
	for try := 0; ; try++ {
		if all, err = cl.List(t.Context(), client.ListFilter{Limit: 100_000}); err == nil {
			break
		}
		if try == 20 {
			t.Fatal(err)
		}
		t.Logf("list jobs: %v (trying again)", err)
		time.Sleep(500 * time.Millisecond)
	}
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
