package drills

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestStreamLeaderKilled: kill -9 of the JOBS stream's leader during a
// 2,000-job run on a 3-node cluster (R3). Every job ends, exactly one
// result each; the node comes back and catches up.
func TestStreamLeaderKilled(t *testing.T) {
	c, cl := clusterWithWorkers(t, 2)
	st := cl.Store()
	writes := watchResults(t, st)
	ctx := t.Context()

	const n = 2000
	items := make([]client.Spec, n)
	for i := range items {
		items[i] = client.Spec{Command: "true", MaxAttempts: 5}
	}
	if _, err := cl.SubmitBatch(ctx, client.BatchOptions{ID: "leader"}, items); err != nil {
		t.Fatal(err)
	}
	// Kill the leader once a quarter of the jobs have ended.
	writes.waitKeys(t, n/4, 5*time.Minute, "before the kill")
	s, err := st.JS.Stream(ctx, jobs.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("JOBS stream cluster info: %+v, %v (want a leader and 2 replicas)", info.Cluster, err)
	}
	leader := c.node(info.Cluster.Leader)
	doneBefore, _ := writes.total()
	killedAt := time.Now()
	c.servers[leader].kill9()
	t.Logf("killed the JOBS leader %s with %d of %d jobs ended", info.Cluster.Leader, doneBefore, n)

	// The job results keep coming from the two nodes left.
	last := time.Now()
	sandruntest.Eventually(t, 5*time.Minute, func() (bool, string) {
		k, _ := writes.total()
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			t.Logf("%d of %d ended", k, n)
		}
		return k >= n, fmt.Sprintf("%d of %d jobs ended after the kill", k, n)
	})
	first, last := writes.firstAfter(killedAt)
	recovery, allDone := first.Sub(killedAt), last.Sub(killedAt)

	// The killed node restarts and catches up; the workers are still
	// registered.
	c.startNode(leader)
	waitWorkers(t, cl, 2)
	// Then the workers stop: once the watch has seen a later write, no
	// stray commit is left to land before counting.
	stopAll(c.workers...)
	writes.barrier(t)
	keys, total := writes.total()
	dups := writes.duplicates(t)
	// Every job's outcome, from the results as they were committed (a
	// read right after the node's restart may be served by a replica
	// still catching up: docs/RELIABILITY.md).
	lost := n - writes.states()[jobs.StateSucceeded]
	t.Logf("DRILL stream-leader-kill: jobs %d, lost %d, duplicate commits %d (result keys %d, writes %d), first commit %s after the kill, all ended %s after it",
		n, lost, dups, keys, total, recovery.Round(time.Millisecond), allDone.Round(time.Millisecond))
	if lost != 0 || dups != 0 || keys != n {
		t.Fatalf("lost %d, duplicates %d, result keys %d of %d", lost, dups, keys, n)
	}
}

// waitWorkers waits until n workers are registered. Right after a node's
// restart a read may time out (a replica catching up), so it retries for
// up to 30 s.
func waitWorkers(t *testing.T, cl *client.Client, n int) {
	t.Helper()
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		ws, err := cl.Workers(t.Context())
		var names []string
		for _, w := range ws {
			names = append(names, w.Name)
		}
		return err == nil && len(names) == n, fmt.Sprintf("workers after the drill: %v, %v; want %d", names, err, n)
	})
}
