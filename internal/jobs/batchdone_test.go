package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/jobs/jobstest"
)

// TestBatchCountsExactUnderRacingCommits: a batch's counts are what its
// commits decided, exactly, when every item's end is raced by two holders
// (one of them stale, fenced off), markers are written twice (a retried
// write, a reaper's repair) and some items are run again and end in
// another state. The server's counts (CountBatch) are checked against
// the records themselves.
func TestBatchCountsExactUnderRacingCommits(t *testing.T) {
	t.Parallel()
	st := jobstest.Store(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	const batch, total = "race", 300
	states := []jobs.State{jobs.StateSucceeded, jobs.StateFailed, jobs.StateTimedOut, jobs.StateDead}
	type item struct {
		spec jobs.Spec
		rev  uint64
		// the two racing holders' end states
		a, b jobs.State
	}
	items := make([]item, total)
	for i := range items {
		spec := jobs.Spec{ID: jobs.BatchItemID(batch, i), Command: "true",
			Labels: map[string]string{jobs.LabelBatch: batch}}.WithDefaults()
		rev, err := st.CreateRun(ctx, jobs.Run{Spec: spec, State: jobs.StateRunning, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		items[i] = item{spec: spec, rev: rev, a: states[rng.IntN(len(states))], b: states[rng.IntN(len(states))]}
	}
	// end commits state over rev as a worker does: the commit, then the
	// marker (written twice when dup).
	end := func(it item, state jobs.State, rev uint64, dup bool) (jobs.State, error) {
		run := jobs.Run{Spec: it.spec, State: jobs.StateRunning, Attempt: 1}
		var ended jobs.Run
		var err error
		if ended, _, err = st.End(ctx, run, jobs.Result{JobID: it.spec.ID, State: state, Attempt: 1, FinishedAt: time.Now()}, rev); err != nil {
			return "", err
		}
		for range 1 + btoi(dup) {
			if _, err := st.MarkBatchEnd(ctx, ended); err != nil {
				return "", err
			}
		}
		return state, nil
	}
	won := make([]jobs.State, total)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, it := range items {
		for k, state := range []jobs.State{it.a, it.b} {
			dup := rng.IntN(3) == 0
			wg.Go(func() {
				got, err := end(it, state, it.rev, dup)
				if errors.Is(err, jobs.ErrFenced) {
					return
				}
				if err != nil {
					t.Errorf("item %d holder %d: %v", i, k, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if won[i] != "" {
					t.Errorf("item %d: two commits won", i)
				}
				won[i] = got
			})
		}
	}
	wg.Wait()
	check := func(when string) {
		t.Helper()
		want := map[jobs.State]int{}
		for i := range total {
			run, _, err := st.GetRun(ctx, jobs.BatchItemID(batch, i))
			if err != nil {
				t.Fatal(err)
			}
			if run.Result != nil {
				want[run.Result.State]++
			}
		}
		c, err := st.CountBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(c.Ended) != fmt.Sprint(want) || c.Recorded != total {
			t.Fatalf("%s: counted %v with %d records, the records say %v of %d (seed %d)", when, c.Ended, c.Recorded, want, total, seed)
		}
	}
	check("after racing commits")

	// Run a third of the items again (Reruns counted, markers removed);
	// half of those end in another state. Each gets its old marker
	// written again meanwhile, as a repair late by a lease TTL would.
	for i := 0; i < total; i += 3 {
		run, rev, err := st.GetRun(ctx, jobs.BatchItemID(batch, i))
		if err != nil {
			t.Fatal(err)
		}
		old := run
		run.State, run.Result, run.Reruns = jobs.StateQueued, nil, run.Reruns+1
		if rev, err = st.UpdateRun(ctx, run, rev); err != nil {
			t.Fatal(err)
		}
		if err := st.UnmarkBatchEnd(ctx, run.Spec); err != nil {
			t.Fatal(err)
		}
		old.Reruns = 0
		if _, err := st.MarkBatchEnd(ctx, old); err != nil {
			t.Fatal(err)
		}
		run.State = jobs.StateRunning
		if rev, err = st.UpdateRun(ctx, run, rev); err != nil {
			t.Fatal(err)
		}
		next := states[(slicesIndex(states, old.State)+i%2)%len(states)]
		ended, _, err := st.End(ctx, run, jobs.Result{JobID: run.Spec.ID, State: next, Attempt: 1, FinishedAt: time.Now()}, rev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.MarkBatchEnd(ctx, ended); err != nil {
			t.Fatal(err)
		}
	}
	check("after reruns")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func slicesIndex(s []jobs.State, v jobs.State) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return 0
}
