package worker_test

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestRegistrationTakenAgainAfterLoss: a worker whose registration is
// lost (its entry gone under it, as when a heartbeat cannot land while a
// stream leader moves) registers again, and stays listed.
func TestRegistrationTakenAgainAfterLoss(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	cfg := sandruntest.FastConfig()
	cfg.Name = "reg-w"
	sandruntest.StartWorker(t, st, cfg)
	c := sandruntest.Client(st)
	ctx := sandruntest.Ctx(t)

	listed := func() bool {
		ws, err := c.Workers(ctx)
		return err == nil && slices.ContainsFunc(ws, func(w jobs.WorkerInfo) bool { return w.Name == "reg-w" })
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		sandruntest.Eventually(t, 20*time.Second, func() (bool, string) { return cond(), what })
	}
	waitFor("the worker registers", listed)
	before, err := st.Workers.Get(ctx, "reg-w")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Workers.Delete(ctx, "reg-w"); err != nil {
		t.Fatal(err)
	}
	// The keeper's next renewal (every TTL/3) finds the entry moved; the
	// worker takes it again with a new revision.
	var again jetstream.KeyValueEntry
	waitFor("the worker registers again", func() bool {
		e, err := st.Workers.Get(ctx, "reg-w")
		again = e
		return err == nil && e.Revision() > before.Revision()+1 && listed()
	})
	// And keeps it past a whole lease TTL: a renewal written more than a
	// TTL after the entry was taken again (an entry not kept would have
	// expired by then, and no renewal would come).
	waitFor("a renewal a whole lease TTL after the registration was taken again", func() bool {
		e, err := st.Workers.Get(ctx, "reg-w")
		return err == nil && e.Revision() > again.Revision() && e.Created().After(again.Created().Add(cfg.LeaseTTL))
	})
	if !listed() {
		t.Fatal("the registration taken again was not kept")
	}
}
