package drills

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestRollingRestart: each of the three servers is stopped and started
// again in turn while a submitter keeps adding 100 jobs a second and two
// workers run them. The next node goes only once every stream has a leader
// and the restarted node is a current replica again. Every job submitted
// ends, with exactly one committed result.
func TestRollingRestart(t *testing.T) {
	c, cl := clusterWithWorkers(t, 2)
	st := cl.Store()
	writes := watchResults(t, st)
	ctx := t.Context()

	load := startLoad(ctx, t, cl, "roll", 100, time.Second)
	// Roll once the workers are busy.
	writes.waitKeys(t, 200, time.Minute, "before the roll")
	for i := range 3 {
		t0 := time.Now()
		c.servers[i].stop()
		down := time.Since(t0)
		c.startNode(i)
		current := waitCurrent(t, st.JS, c.names[i])
		k, _ := writes.total()
		t.Logf("restarted %s: stopped in %s, a current replica of every stream %s after its start; %d results so far",
			c.names[i], down.Round(time.Millisecond), current.Round(time.Millisecond), k)
		// Load on the full cluster before the next node goes: 300 more
		// results (about 3 s of the submitter's 100 a second).
		writes.waitKeys(t, k+300, 2*time.Minute, fmt.Sprintf("after %s was back", c.names[i]))
	}
	submitted, submitErrs := load.stop()
	rolledAt := time.Now()

	n := len(submitted)
	writes.waitKeys(t, n, 3*time.Minute, "after the roll")
	_, last := writes.firstAfter(rolledAt)
	drained := last.Sub(rolledAt)
	// The workers stop, then the watch sees a later write: no stray
	// commit is left to land before counting.
	stopAll(c.workers...)
	writes.barrier(t)
	keys, total := writes.total()
	got := writes.snapshot()
	dups, lost := 0, 0
	for id, k := range got {
		if k != 1 {
			dups++
			t.Errorf("%s: %d result writes", id, k)
		}
	}
	for _, id := range submitted {
		if got[id] == 0 {
			lost++
			t.Errorf("%s: no result", id)
		}
	}
	failed := n - writes.states()[jobs.StateSucceeded]
	t.Logf("DRILL rolling-restart: jobs %d (%d submit calls retried), lost %d, not succeeded %d, duplicate commits %d (result keys %d, writes %d), backlog drained %s after the last node was back",
		n, submitErrs, lost, failed, dups, keys, total, drained.Round(time.Millisecond))
	if lost != 0 || dups != 0 || failed != 0 || keys != n {
		t.Fatalf("lost %d, not succeeded %d, duplicates %d, result keys %d of %d", lost, failed, dups, keys, n)
	}
}

// load submits a batch of per jobs every interval until stopped. A
// failed submit (a leader election under way) is retried with the same
// batch ID: submitting a batch again adds only what is missing.
type load struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	ids    []string
	errs   int
}

func startLoad(ctx context.Context, t *testing.T, cl *client.Client, prefix string, per int, every time.Duration) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel, done: make(chan struct{})}
	items := make([]client.Spec, per)
	for i := range items {
		items[i] = client.Spec{Command: "true", MaxAttempts: 5}
	}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for b := 0; ; b++ {
			id := fmt.Sprintf("%s-%04d", prefix, b)
			var err error
			if ok, _ := sandruntest.Poll(2*time.Minute, func() (bool, string) {
				// The submit is not cut short by stop: a batch once
				// started is submitted whole.
				sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer scancel()
				if _, err = cl.SubmitBatch(sctx, client.BatchOptions{ID: id}, items); err != nil {
					l.mu.Lock()
					l.errs++
					l.mu.Unlock()
					return false, ""
				}
				l.mu.Lock()
				for i := range items {
					l.ids = append(l.ids, jobs.BatchItemID(id, i))
				}
				l.mu.Unlock()
				return true, ""
			}); !ok {
				t.Errorf("batch %s: not submitted within 2 minutes: %v", id, err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

// stop ends the load and returns the IDs of every job submitted and the
// number of submit calls that failed and were retried.
func (l *load) stop() ([]string, int) {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids, l.errs
}

// waitCurrent waits until every stream (the KV buckets' and the object
// store's included) has a leader and node is one of its current peers,
// and returns how long that took.
func waitCurrent(t *testing.T, js jetstream.JetStream, node string) time.Duration {
	t.Helper()
	t0 := time.Now()
	sandruntest.Eventually(t, 2*time.Minute, func() (bool, string) {
		lag, err := notCurrent(t.Context(), js, node)
		return err == nil && lag == "", fmt.Sprintf("%s not current after its start: %s %v", node, lag, err)
	})
	return time.Since(t0)
}

// notCurrent names a stream of which node is not yet a current peer ("":
// none).
func notCurrent(ctx context.Context, js jetstream.JetStream, node string) (string, error) {
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return name, err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return name, err
		}
		cl := info.Cluster
		if cl == nil || cl.Leader == "" {
			return name + " (no leader)", nil
		}
		if cl.Leader == node {
			continue
		}
		ok := false
		for _, p := range cl.Replicas {
			ok = ok || (p.Name == node && p.Current && !p.Offline)
		}
		if !ok {
			return fmt.Sprintf("%s (replicas %+v)", name, cl.Replicas), nil
		}
	}
	return "", names.Err()
}

// stop stops the process as an operator would (SIGTERM) and waits for it.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	<-p.done
}
