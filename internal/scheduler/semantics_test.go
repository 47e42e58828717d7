package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/scheduler"
)

type env struct {
	st  *jobs.Store
	c   *client.Client
	cat *scheduler.Catalog
	ctx context.Context
}

func setup(t *testing.T) env {
	t.Helper()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	return env{st: st, c: client.New(st), cat: scheduler.NewCatalog(st), ctx: sandruntest.Ctx(t)}
}

// start runs a scheduler until the test ends and returns its metrics.
func (e env) start(t *testing.T, cfg scheduler.Config) *metrics.Metrics {
	t.Helper()
	if cfg.ID == "" {
		cfg.ID = "s1"
	}
	if cfg.ElectionTTL == 0 {
		cfg.ElectionTTL = 2 * time.Second
	}
	m := metrics.New()
	sc, err := scheduler.New(cfg, e.st, m, sandruntest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sc.Run(ctx); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return m
}

// jobsOf lists the jobs of schedule name: their records, and the queued
// jobs no worker claimed yet (which have none) as queued statuses.
func (e env) jobsOf(t *testing.T, name string) []client.Status {
	t.Helper()
	list, err := e.c.List(e.ctx, client.ListFilter{Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	var out []client.Status
	seen := map[string]bool{}
	for _, st := range list {
		if st.Run.Spec.Labels["schedule"] == name {
			out = append(out, st)
			seen[st.Run.Spec.ID] = true
		}
	}
	for _, spec := range sandruntest.Queued(t, e.st) {
		if spec.Labels["schedule"] == name && !seen[spec.ID] {
			seen[spec.ID] = true
			out = append(out, client.Status{Run: jobs.Run{Spec: spec, State: jobs.StateQueued}})
		}
	}
	return out
}

func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	sandruntest.Eventually(t, d, func() (bool, string) { return cond(), what })
}

func every(name, spec string, overlap scheduler.Overlap, cmd string) scheduler.Schedule {
	return scheduler.Schedule{Name: name, Cron: spec, Overlap: overlap, Job: jobs.Spec{Command: cmd}}
}

func TestOverlapForbidSkipsWhilePreviousRuns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	m := e.start(t, scheduler.Config{Schedules: []scheduler.Schedule{every("forbid", "@every 1s", scheduler.OverlapForbid, "sleep 2.5")}})
	eventually(t, 20*time.Second, "3 overlap skips", func() bool {
		return testutil.ToFloat64(m.ScheduleSkipped.WithLabelValues("overlap")) >= 3
	})
	// Never two runs at once: each job started after the previous ended.
	var runs []jobs.Result
	for _, st := range e.jobsOf(t, "forbid") {
		if st.Result != nil {
			runs = append(runs, *st.Result)
		}
	}
	if len(runs) < 1 {
		t.Fatal("no finished runs")
	}
	for i := range runs {
		for j := range runs {
			if i != j && runs[i].StartedAt.Before(runs[j].FinishedAt) && runs[j].StartedAt.Before(runs[i].FinishedAt) {
				t.Fatalf("runs %s and %s overlapped", runs[i].JobID, runs[j].JobID)
			}
		}
	}
}

func TestOverlapReplaceCancelsThePreviousRun(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	e.start(t, scheduler.Config{Schedules: []scheduler.Schedule{every("replace", "@every 2s", scheduler.OverlapReplace, "sleep 60")}})
	eventually(t, 30*time.Second, "a run canceled by its successor", func() bool {
		for _, st := range e.jobsOf(t, "replace") {
			if st.State() == jobs.StateCanceled {
				return true
			}
		}
		return false
	})
}

func TestOverlapAllowRunsConcurrently(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sandruntest.StartWorker(t, e.st, sandruntest.FastConfig())
	e.start(t, scheduler.Config{Schedules: []scheduler.Schedule{every("allow", "@every 1s", scheduler.OverlapAllow, "sleep 4")}})
	eventually(t, 20*time.Second, "two runs at once", func() bool {
		n := 0
		for _, st := range e.jobsOf(t, "allow") {
			if st.State() == jobs.StateRunning {
				n++
			}
		}
		return n >= 2
	})
}

// A scheduler that was down for an hour, with a 10-minute catch-up
// window, fires the last slot inside the window once and counts the
// others as missed (catchup: latest); with catchup: all it fires every
// slot inside the window. The clock is injected: nothing sleeps an hour.
func TestCatchUpAfterAnHourDown(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{scheduler.CatchupLatest, scheduler.CatchupAll} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			now := t0.Add(time.Hour + 30*time.Second)
			window := jobs.Duration(10 * time.Minute)
			sc := scheduler.Schedule{Name: "hourly-gap", Cron: "@every 1m", CatchupWindow: &window, Catchup: mode,
				Job: jobs.Spec{Command: "true", Queue: "nobody"}}
			if err := e.cat.Put(e.ctx, sc, false); err != nil {
				t.Fatal(err)
			}
			if err := scheduler.SetLastSlot(e.ctx, e.cat, sc.Name, t0); err != nil {
				t.Fatal(err)
			}
			m := e.start(t, scheduler.Config{Now: func() time.Time { return now }})
			wantFired, wantMissed := 1, 59
			if mode == scheduler.CatchupAll {
				wantFired, wantMissed = 10, 50
			}
			eventually(t, 15*time.Second, "catch-up fires", func() bool {
				return testutil.ToFloat64(m.ScheduleFires.WithLabelValues("catchup")) == float64(wantFired)
			})
			if got := testutil.ToFloat64(m.ScheduleMissed); got != float64(wantMissed) {
				t.Fatalf("missed %v, want %d", got, wantMissed)
			}
			var slots []string
			for _, st := range e.jobsOf(t, sc.Name) {
				slots = append(slots, st.Run.Spec.ID)
			}
			if len(slots) != wantFired {
				t.Fatalf("jobs %v, want %d", slots, wantFired)
			}
			if last := scheduler.SlotID(sc.Name, t0.Add(time.Hour)); !contains(slots, last) {
				t.Fatalf("jobs %v lack the last slot %s", slots, last)
			}
			if first := scheduler.SlotID(sc.Name, t0.Add(50*time.Minute)); contains(slots, first) {
				t.Fatalf("slot outside the window fired: %s", first)
			}
			st, err := e.cat.State(e.ctx, sc.Name)
			if err != nil || st.Missed != int64(wantMissed) {
				t.Fatalf("state %+v %v: want %d missed recorded", st, err, wantMissed)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestSuspendResumeAndTrigger(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.start(t, scheduler.Config{Schedules: []scheduler.Schedule{{Name: "tick", Cron: "@every 1s", Job: jobs.Spec{Command: "true", Queue: "nobody"}}}})
	eventually(t, 10*time.Second, "first fires", func() bool { return len(e.jobsOf(t, "tick")) >= 2 })
	if err := e.cat.SetSuspended(e.ctx, "tick", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "suspended skips", func() bool {
		return testutil.ToFloat64(m.ScheduleSkipped.WithLabelValues("suspended")) >= 2
	})
	// Two more slots come while suspended: each is skipped, none fired.
	before := len(e.jobsOf(t, "tick"))
	skipped := testutil.ToFloat64(m.ScheduleSkipped.WithLabelValues("suspended"))
	eventually(t, 10*time.Second, "two more suspended skips", func() bool {
		return testutil.ToFloat64(m.ScheduleSkipped.WithLabelValues("suspended")) >= skipped+2
	})
	if after := len(e.jobsOf(t, "tick")); after != before {
		t.Fatalf("suspended schedule fired: %d -> %d jobs", before, after)
	}
	id, err := e.cat.Trigger(e.ctx, "tick")
	if err != nil || !strings.HasPrefix(id, "cron-tick-trigger-") {
		t.Fatalf("trigger: %q %v", id, err)
	}
	triggered := false
	for _, st := range e.jobsOf(t, "tick") {
		triggered = triggered || st.Run.Spec.ID == id
	}
	if !triggered {
		t.Fatalf("triggered job %s was not dispatched", id)
	}
	resumedAt := time.Now()
	if err := e.cat.SetSuspended(e.ctx, "tick", false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "fires after resume", func() bool { return len(e.jobsOf(t, "tick")) >= before+3 })
	// Slots passed while suspended were not caught up on resume.
	for _, st := range e.jobsOf(t, "tick") {
		if st.Run.Spec.Labels["trigger"] == "" && st.Run.Spec.SubmittedAt.Before(resumedAt) && st.Run.Spec.SubmittedAt.After(resumedAt.Add(-1200*time.Millisecond)) {
			t.Fatalf("job %s submitted while suspended", st.Run.Spec.ID)
		}
	}
	st, err := e.cat.State(e.ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, f := range st.History {
		kinds[f.Kind]++
	}
	if kinds["trigger"] != 1 || kinds["skipped"] == 0 || kinds["slot"] == 0 {
		t.Fatalf("history kinds %v", kinds)
	}
}
