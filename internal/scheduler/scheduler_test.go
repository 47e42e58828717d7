package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// Two schedulers on one deployment: one leads, each slot becomes exactly
// one job, with the slot-derived ID.
func TestTwoSchedulersFireEachSlotOnce(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	ctx, cancel := context.WithCancel(sandruntest.Ctx(t))
	sched := []scheduler.Schedule{{Name: "tick", Cron: "@every 1s", Job: jobs.Spec{Command: "true", Queue: "ticks"}}}
	done := make(chan struct{}, 2)
	for _, id := range []string{"s1", "s2"} {
		sc, err := scheduler.New(scheduler.Config{Schedules: sched, ID: id, ElectionTTL: 2 * time.Second}, st, metrics.New(), sandruntest.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = sc.Run(ctx); done <- struct{}{} }()
	}
	// Let four slots fire, then stop both.
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		n := len(sandruntest.Queued(t, st))
		return n >= 4, fmt.Sprintf("%d jobs fired, want 4", n)
	})
	cancel()
	<-done
	<-done
	// No worker runs: every fired job is still queued, recorded nowhere
	// but in its message.
	queued := sandruntest.Queued(t, st)
	specs := map[string]jobs.Spec{}
	var ids []string
	for _, s := range queued {
		ids = append(ids, s.ID)
		specs[s.ID] = s
	}
	if len(ids) < 4 || len(ids) > 5 {
		t.Fatalf("%d jobs from the 4 slots of @every 1s waited for, want 4..5: %v", len(ids), ids)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !strings.HasPrefix(id, "cron-tick-") || seen[id] {
			t.Fatalf("job id %q", id)
		}
		seen[id] = true
		if s := specs[id]; s.Origin != jobs.OriginCron || s.Labels["schedule"] != "tick" {
			t.Fatalf("job %s: %+v", id, s)
		}
	}
	js, _ := st.JS.Stream(context.Background(), jobs.StreamJobs)
	info, err := js.Info(context.Background(), jetstream.WithSubjectFilter(jobs.QueueFilter("ticks")))
	if err != nil {
		t.Fatal(err)
	}
	if int(info.State.Msgs) != len(ids) {
		t.Fatalf("%d dispatch messages for %d jobs", info.State.Msgs, len(ids))
	}
}

func TestScheduleValidationNamesTheField(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"schedules:\n  - {name: a, cron: '* * *', job: {command: x}}\n":                         "schedules.a.cron",
		"schedules:\n  - {name: a, cron: '@hourly', time_zone: Mars/Base, job: {command: x}}\n": "schedules.a.time_zone",
		"schedules:\n  - {name: A!, cron: '@hourly', job: {command: x}}\n":                      "schedules[0].name",
		"schedules:\n  - {name: a, cron: '@hourly', job: {command: ''}}\n":                      "schedules.a.job.command",
		"schedules:\n  - {name: a, cron: '@hourly', job: {command: x, id: fixed}}\n":            "schedules.a.job.id",
		"schedules:\n  - {name: a, cron: '@hourly', jbo: {command: x}}\n":                       "jbo",
	}
	for in, want := range cases {
		_, err := scheduler.DecodeFile([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want it to name %s", in, err, want)
		}
	}
}
