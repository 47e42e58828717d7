package client_test

import (
	"fmt"
	"testing"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestListPagesThroughManyJobs: 2,500 records, listed 1,000 at a time,
// come back on three pages, each job once, most recently changed first;
// a filtered listing pages the same way.
func TestListPagesThroughManyJobs(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	const n = 2500
	// Written in order, so that job i is the i-th most recent from the
	// end; every third one failed. Leases and other keys in between.
	for i := range n {
		state := jobs.StateSucceeded
		if i%3 == 0 {
			state = jobs.StateFailed
		}
		spec := jobs.Spec{ID: fmt.Sprintf("job-%05d", i), Command: "true"}.WithDefaults()
		r := jobs.Result{JobID: spec.ID, State: state}
		if _, err := st.CreateRun(ctx, jobs.Run{Spec: spec, State: state, Result: &r}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if _, err := st.State.Put(ctx, jobs.LeaseKey(spec.ID), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	list := func(f client.ListFilter) []string {
		t.Helper()
		var ids []string
		seen := map[string]bool{}
		pages := 0
		for {
			p, err := c.ListPage(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if len(p.Jobs) > f.Limit {
				t.Fatalf("page of %d, limit %d", len(p.Jobs), f.Limit)
			}
			for _, j := range p.Jobs {
				if seen[j.Run.Spec.ID] {
					t.Fatalf("%s listed twice", j.Run.Spec.ID)
				}
				seen[j.Run.Spec.ID] = true
				ids = append(ids, j.Run.Spec.ID)
			}
			if p.Next == "" {
				break
			}
			f.Continue = p.Next
			if pages > 100 {
				t.Fatal("no end to the pages")
			}
		}
		return ids
	}
	all := list(client.ListFilter{Limit: 1000})
	if len(all) != n || all[0] != "job-02499" || all[n-1] != "job-00000" {
		t.Fatalf("listed %d jobs, first %s last %s: want %d, newest first", len(all), all[0], all[len(all)-1], n)
	}
	for i := 1; i < len(all); i++ {
		if all[i] > all[i-1] {
			t.Fatalf("order: %s after %s", all[i], all[i-1])
		}
	}
	failed := list(client.ListFilter{Limit: 300, State: jobs.StateFailed})
	if len(failed) != (n+2)/3 {
		t.Fatalf("listed %d failed jobs, want %d", len(failed), (n+2)/3)
	}
	if _, err := c.ListPage(ctx, client.ListFilter{Continue: "soon"}); err == nil {
		t.Fatal("a bad page token was taken")
	}
}

// TestBatchPages: a batch's items are read a page at a time, in index
// order, with the index of the next page.
func TestBatchPages(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	items := make([]jobs.Spec, 25)
	for i := range items {
		items[i] = jobs.Spec{Command: fmt.Sprintf("echo %d", i)}
	}
	if _, err := c.SubmitBatch(ctx, client.BatchOptions{ID: "paged"}, items); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitBatch(ctx, "paged", client.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []int
	var nexts []int
	for from := 0; from >= 0; {
		v, next, err := c.BatchPage(ctx, "paged", from, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range v.Items {
			if it.Result == nil || it.Result.Stdout.Head != fmt.Sprintf("%d\n", it.Index) {
				t.Fatalf("item %d: %+v", it.Index, it.Result)
			}
			got = append(got, it.Index)
		}
		nexts = append(nexts, next)
		from = next
	}
	if fmt.Sprint(nexts) != "[10 20 -1]" || len(got) != 25 || got[0] != 0 || got[24] != 24 {
		t.Fatalf("pages: next %v, items %v", nexts, got)
	}
	if _, _, err := c.BatchPage(ctx, "paged", 0, 0); err == nil {
		t.Fatal("a page of 0 items was taken")
	}
}

// TestListShowsJobsChangedDuringIt: a job whose record changes while a
// listing reads is listed, as it now is, once. Its old record is
// replaced (and so gone from the stream) before the walk gets to it;
// the new one lies past where the walk began.
func TestListShowsJobsChangedDuringIt(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)
	const n = 1200 // more than one fetch of the walk
	for i := range n {
		spec := jobs.Spec{ID: fmt.Sprintf("job-%05d", i), Command: "true"}.WithDefaults()
		if _, err := st.CreateRun(ctx, jobs.Run{Spec: spec, State: jobs.StateQueued}); err != nil {
			t.Fatal(err)
		}
	}
	// listChanging lists with f, starting id as the walk reads its first
	// record.
	listChanging := func(f client.ListFilter, id string) []client.Status {
		t.Helper()
		done := false
		client.OnRecord(c, func(uint64) {
			if done {
				return
			}
			done = true
			r, rev, err := st.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			r.State = jobs.StateRunning
			if _, err := st.UpdateRun(ctx, r, rev); err != nil {
				t.Fatal(err)
			}
		})
		defer client.OnRecord(c, nil)
		list, err := c.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !done {
			t.Fatal("the walk read no record")
		}
		return list
	}
	all := listChanging(client.ListFilter{Limit: 100_000}, "job-01000")
	seen := map[string]int{}
	for _, j := range all {
		seen[j.Run.Spec.ID]++
	}
	if len(all) != n || len(seen) != n {
		t.Fatalf("listed %d jobs (%d distinct), want %d, each once", len(all), len(seen), n)
	}
	if all[0].Run.Spec.ID != "job-01000" || all[0].Run.State != jobs.StateRunning {
		t.Fatalf("first listed %s (%s): want job-01000, running: the most recently changed", all[0].Run.Spec.ID, all[0].Run.State)
	}
	// Filtered: a job that no longer matches is not shown as it was.
	queued := listChanging(client.ListFilter{State: jobs.StateQueued, Limit: 100_000}, "job-01100")
	for _, j := range queued {
		if j.Run.Spec.ID == "job-01000" || j.Run.Spec.ID == "job-01100" {
			t.Errorf("%s listed as queued; it is running", j.Run.Spec.ID)
		}
	}
	if len(queued) != n-2 {
		t.Fatalf("listed %d queued jobs, want %d", len(queued), n-2)
	}
}
