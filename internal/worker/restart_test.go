package worker_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestNATSRestartDuringRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.ClientURL())
	port, _ := strconv.Atoi(u.Port())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			s.Shutdown()
			s.WaitForShutdown()
		}
	})
	st := sandruntest.Store(t, s.ClientURL())
	c := client.New(st)
	ctx := sandruntest.Ctx(t)
	writes := watchResults(t, env{st: st, c: c, ctx: ctx})

	const n = 200
	ids := make([]string, n)
	for i := range n {
		spec, err := c.Submit(ctx, jobs.Spec{Command: fmt.Sprintf("sleep 0.1; echo %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = spec.ID
	}
	var workers []*sandruntest.Worker
	for i := range 2 {
		cfg := sandruntest.FastConfig()
		cfg.Name = fmt.Sprintf("w%d", i)
		cfg.LeaseTTL = 10 * time.Second
		workers = append(workers, sandruntest.StartWorker(t, st, cfg))
	}
	// Restart mid-run: wait for some results, then stop and start the
	// server on the same port and store.
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		n := countResults(ctx, c, ids)
		return n >= 20, fmt.Sprintf("no progress before the restart: %d results", n)
	})
	s.Shutdown()
	s.WaitForShutdown()
	stopped = true
	// The server is down until the workers' connection has noticed.
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		return !st.JS.Conn().IsConnected(), "the workers' connection has not seen the server go"
	})
	s2, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Shutdown(); s2.WaitForShutdown() })

	for _, id := range ids {
		r := sandruntest.WaitResult(t, c, id, 90*time.Second)
		if !r.State.Terminal() {
			t.Fatalf("job %s: %s", id, r.State)
		}
		if r.State != jobs.StateSucceeded {
			t.Errorf("job %s: %s (%s)", id, r.State, r.Error)
		}
	}
	// Drained, the workers write nothing more: their counts are final.
	var finished float64
	for _, w := range workers {
		w.Stop()
		finished += counterValue(t, w, "sandrun_jobs_finished_total")
	}
	if finished != n {
		t.Errorf("workers committed %v results, want %d", finished, n)
	}
	// The counting watch resumes after its last revision once the
	// connection is back (jobs.Store.Follow); once it has seen a later
	// write, it has seen every write of the workers.
	writes.barrier(t)
	for _, id := range ids {
		if k := writes.count(id); k != 1 {
			t.Errorf("job %s: %d result writes, want 1", id, k)
		}
	}
}

func countResults(ctx context.Context, c *client.Client, ids []string) int {
	n := 0
	for _, id := range ids {
		if _, err := c.Store().GetResult(ctx, id); err == nil {
			n++
		}
	}
	return n
}
