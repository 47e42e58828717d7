package scheduler_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// On a 3-node cluster (R3 buckets, where any replica may answer a read), a
// schedule edited several times in a row and then suspended fires no slot
// after the suspension's write was acknowledged, plus one tick.
func TestClusterSuspendStopsFiring(t *testing.T) {
	t.Parallel()
	st, err := sandruntest.StoreWith(t, natsutil.ClusterURL(sandruntest.Cluster(t, 3)), jobs.LayoutConfig{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	e := env{st: st, c: client.New(st), cat: scheduler.NewCatalog(st), ctx: sandruntest.Ctx(t)}
	version := func(v int) scheduler.Schedule {
		return scheduler.Schedule{Name: "tick", Cron: "@every 1s", Job: jobs.Spec{Command: "true", Queue: fmt.Sprintf("v%d", v)}}
	}
	if err := e.cat.Put(e.ctx, version(0), false); err != nil {
		t.Fatal(err)
	}
	m := e.start(t, scheduler.Config{})
	eventually(t, 30*time.Second, "a slot fired", func() bool {
		return testutil.ToFloat64(m.ScheduleFires.WithLabelValues("slot")) >= 1
	})
	// Rapid edits, the last of them the suspension.
	for v := 1; v <= 5; v++ {
		if err := e.cat.Put(e.ctx, version(v), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.cat.SetSuspended(e.ctx, "tick", true); err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	var hist []scheduler.Fire
	sandruntest.Eventually(t, 15*time.Second, func() (bool, string) {
		st, err := e.cat.State(e.ctx, "tick")
		if err != nil {
			return false, err.Error()
		}
		hist = st.History
		skipped := 0
		for _, f := range hist {
			if f.Kind == "skipped" && f.Reason == "suspended" && f.Slot.After(acked) {
				skipped++
			}
		}
		return skipped >= 2, fmt.Sprintf("%d slots after the suspension skipped as suspended, want 2; history %+v", skipped, hist)
	})
	tick := acked.Add(time.Second)
	for _, f := range hist {
		if (f.Kind == "slot" || f.Kind == "catchup") && f.Slot.After(tick) {
			t.Errorf("slot %s fired (%s) after the suspension was acknowledged at %s", f.Slot, f.JobID, acked)
		}
	}
	// The jobs themselves: none of a slot after the suspension plus a tick.
	for _, spec := range sandruntest.Queued(t, st) {
		unix, err := strconv.ParseInt(strings.TrimPrefix(spec.ID, "cron-tick-"), 10, 64)
		if err != nil {
			t.Fatalf("job id %s", spec.ID)
		}
		if slot := time.Unix(unix, 0); slot.After(tick) {
			t.Errorf("job %s (queue %s) of slot %s dispatched after the suspension was acknowledged at %s", spec.ID, spec.Queue, slot, acked)
		}
	}
}
