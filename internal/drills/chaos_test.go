package drills

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/testenv"
)

// TestChaos is a randomized fault-injection run with a checker of the
// whole history, in the spirit of Jepsen. Each seed submits a mix of jobs
// (quick, slow, failing and retried, large output, canceled mid-run) to
// three workers on a single-node server, or, one seed in four, on a
// 3-node cluster, and for a few seconds injects overlapping faults chosen
// by the seed: kill -9 of a worker, SIGSTOP and SIGCONT of one past its
// lease, a drain with a short timeout, a kill -9 and restart of the
// server (of one node of three), a worker's connections cut at the TCP
// proxy it reaches the servers through, and extra copies of dispatch
// messages. Then everything heals and every job must end. Watches opened
// before the first submit record every write of the job records and
// results, and every command logs its attempt (SANDRUN_ATTEMPT) when it
// starts and ends. chaos_check_test.go holds the checker and its rules.
//
// SANDRUN_CHAOS_SEEDS picks the seeds ("1-200", "7,9"); by default CI runs
// seeds 1-20 and a developer machine seeds 1-3. A failed seed logs its
// history; SANDRUN_CHAOS_REPORT=1 logs every seed's. docs/RELIABILITY.md
// records the long runs.
func TestChaos(t *testing.T) {
	seeds := chaosSeeds(t)
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel() // seeds are independent worlds; -parallel bounds how many run at once
			h := runChaos(t, seed)
			h.check(t)
		})
	}
}

func chaosSeeds(t *testing.T) []uint64 {
	spec := os.Getenv("SANDRUN_CHAOS_SEEDS")
	if spec == "" {
		spec = "1-3"
		if testenv.InCI() {
			spec = "1-20"
		}
	}
	var out []uint64
	for part := range strings.SplitSeq(spec, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			t.Fatalf("SANDRUN_CHAOS_SEEDS %q: %v", spec, err)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				t.Fatalf("SANDRUN_CHAOS_SEEDS %q: bad range %q", spec, part)
			}
		}
		for s := a; s <= b; s++ {
			out = append(out, s)
		}
	}
	return out
}

// chaosClustered reports whether a seed runs on a 3-node cluster: one
// seed in four, as they cost about twice a single node's.
func chaosClustered(seed uint64) bool { return seed%4 == 0 }

// chaosJob is one job of a run and what the checker expects of it.
type chaosJob struct {
	spec     jobs.Spec
	kind     string    // quick, slow, failing, large, cancel
	cancelAt time.Time // when its cancel was acknowledged (kind cancel; zero until then)
}

// chaosRun is one seed's world and what it recorded. The fault loop's
// goroutine alone changes the world; the watches write under mu.
type chaosRun struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	dir     string
	logPath string
	servers *chaosServers
	workers []*chaosWorker
	cl      *client.Client
	jobs    []*chaosJob
	faults  []string       // what happened when, for a report
	tally   map[string]int // faults by kind
	healed  time.Time      // when the last fault ended
	batch   string         // the batch whose items are among jobs
	counted map[jobs.State]int

	rewatch []chan struct{} // asks each watch to start again

	mu      sync.Mutex
	history map[string][]chaosWrite // by job ID: every write of run.ID and result.ID, in revision order
	revs    map[uint64]time.Time    // every revision of the bucket a watch delivered, and its store time
}

func runChaos(t *testing.T, seed uint64) *chaosRun {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	if err := os.Mkdir(logDir, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(logDir, 0o777) // the umask; the local backend may run jobs as another user
	h := &chaosRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5a4d)), dir: dir,
		logPath: filepath.Join(logDir, "commands"), tally: map[string]int{},
		history: map[string][]chaosWrite{}, revs: map[uint64]time.Time{}}
	h.servers = startChaosServers(t, dir, chaosClustered(seed))
	url := h.servers.url()
	if err := natsutil.WaitJetStream(t.Context(), url, h.servers.replicas()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h.workers = append(h.workers, newChaosWorker(t, fmt.Sprintf("chaos-w%d", i), h.servers))
		h.startWorker(i)
	}
	h.cl = connect(t, url)
	h.watch()
	// Registered last, so it runs first of the cleanups, whatever
	// processes the faults started.
	defer t.Cleanup(h.stop)
	h.note("%d node(s)", h.servers.size())

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	h.submitAll(ctx)
	h.faultWindow(ctx, 6*time.Second)
	h.heal()
	h.waitAllEnded(ctx, 2*time.Minute)
	return h
}

func (h *chaosRun) startWorker(i int) {
	w := h.workers[i]
	w.p = start(h.t, w.name, "worker", "--nats-url", w.url(), "--replicas", strconv.Itoa(h.servers.replicas()), "--name", w.name,
		"--slots", "4", "--lease-ttl", "3s", "--election-ttl", "2s", "--reaper-scan", "2s", "--kill-grace", "500ms",
		"--drain-timeout", "1s", "--pull-wait", "1s", "--log-format", "text")
	w.stopped = false
}

func (h *chaosRun) submitAll(ctx context.Context) {
	kinds := []string{"quick", "quick", "slow", "failing", "large", "cancel"}
	for i := range 18 {
		kind := kinds[h.rng.IntN(len(kinds))]
		id := fmt.Sprintf("chaos%d-%02d-%s", h.seed, i, kind)
		spec := jobs.Spec{ID: id, MaxAttempts: 3, Timeout: jobs.Duration(30 * time.Second),
			Retry: &jobs.Backoff{Initial: jobs.Duration(200 * time.Millisecond), Max: jobs.Duration(time.Second), Factor: 2}}
		switch kind {
		case "quick":
			spec.Command = h.command(id, "true")
		case "slow":
			spec.Command = h.command(id, "sleep 1.5")
		case "failing":
			spec.Command = h.command(id, "exit 3")
		case "large":
			spec.Command = h.command(id, "head -c 300000 /dev/zero | tr '\\0' x")
		case "cancel":
			spec.Command = h.command(id, "sleep 4")
		}
		spec.MaxAttempts = 1 + h.rng.IntN(3)
		j := &chaosJob{spec: spec, kind: kind}
		h.jobs = append(h.jobs, j)
		h.retry(ctx, "submit "+id, func() error {
			_, err := h.cl.Submit(ctx, spec)
			if errors.Is(err, jobs.ErrExists) {
				return nil // an earlier try was stored
			}
			return err
		})
	}
	// A batch too: its items are checked as jobs, and its counts (the
	// server's, from the end markers) against what the history
	// committed.
	h.batch = fmt.Sprintf("chaos%db", h.seed)
	items := make([]jobs.Spec, 8)
	for i := range items {
		kind := []string{"quick", "slow", "failing"}[h.rng.IntN(3)]
		id := jobs.BatchItemID(h.batch, i)
		body := map[string]string{"quick": "true", "slow": "sleep 1.5", "failing": "exit 3"}[kind]
		items[i] = jobs.Spec{Command: h.command(id, body), MaxAttempts: 1 + h.rng.IntN(3), Timeout: jobs.Duration(30 * time.Second),
			Retry: &jobs.Backoff{Initial: jobs.Duration(200 * time.Millisecond), Max: jobs.Duration(time.Second), Factor: 2}}
		// The item as SubmitBatch sends it, so that a copy of its
		// message (a fault) is the same message.
		spec := items[i]
		spec.ID = id
		spec.Labels = map[string]string{jobs.LabelBatch: h.batch, jobs.LabelBatchIndex: fmt.Sprint(i), jobs.LabelBatchTotal: fmt.Sprint(len(items))}
		h.jobs = append(h.jobs, &chaosJob{spec: spec, kind: kind})
	}
	h.retry(ctx, "submit batch "+h.batch, func() error {
		_, err := h.cl.SubmitBatch(ctx, client.BatchOptions{ID: h.batch}, items)
		return err
	})
}

// waitBatchCounted waits until the server counts every item of the batch
// as ended (a marker a killed worker did not write is the reaper's to
// write, a lease TTL after) and keeps the counts for the check.
func (h *chaosRun) waitBatchCounted(within time.Duration) {
	// Its own time, not what is left of the run's: a slow seed (a
	// cluster's) may have spent that waiting for its results.
	ctx, cancel := context.WithTimeout(h.t.Context(), within+30*time.Second)
	defer cancel()
	var c jobs.BatchCounts
	var err error
	if ok, _ := sandruntest.PollCtx(ctx, within, func() (bool, string) {
		c, err = h.cl.Store().CountBatch(ctx, h.batch)
		return err == nil && c.Done() >= 8, ""
	}); !ok {
		h.t.Errorf("seed %d: batch %s counted %v (%v) %s after every item committed, want 8 ended; markers: %v", h.seed, h.batch, c.Ended, err, within, h.markers(ctx))
	}
	h.counted = c.Ended
}

// markers lists the batch's end markers, for a report.
func (h *chaosRun) markers(ctx context.Context) []string {
	lister, err := h.cl.Store().State.ListKeysFiltered(ctx, jobs.BatchEndsFilter(h.batch, ""))
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for k := range lister.Keys() {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// retry runs op until it succeeds: the server may be down for a moment.
func (h *chaosRun) retry(ctx context.Context, what string, op func() error) {
	var err error
	if ok, _ := sandruntest.PollCtx(ctx, time.Hour, func() (bool, string) {
		err = op()
		return err == nil, ""
	}); !ok {
		h.t.Fatalf("%s: %v", what, err)
	}
}

// timed is a step of the fault window due at a moment: a cancel, or the
// end of a fault (a worker started again, thawed, reconnected, a node
// started again).
type timed struct {
	at time.Time
	do func()
}

// faultWindow injects overlapping faults for d, and cancels the jobs of
// kind cancel at random times in it.
func (h *chaosRun) faultWindow(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	var later []timed
	for _, j := range h.jobs {
		if j.kind == "cancel" {
			later = append(later, timed{time.Now().Add(time.Duration(300+h.rng.IntN(3000)) * time.Millisecond), func() {
				h.retry(ctx, "cancel "+j.spec.ID, func() error { _, err := h.cl.Cancel(ctx, j.spec.ID); return err })
				j.cancelAt = time.Now()
				h.note("cancel %s", j.spec.ID)
				h.tally["cancel"]++
			}})
		}
	}
	next := time.Now()
	for time.Now().Before(end) {
		now := time.Now()
		slices.SortFunc(later, func(a, b timed) int { return a.at.Compare(b.at) })
		for len(later) > 0 && !later[0].at.After(now) {
			do := later[0].do
			later = later[1:]
			do()
		}
		if now.Before(next) {
			// Wait for the next step due: a fault, or a timed one.
			due := next
			if len(later) > 0 && later[0].at.Before(due) {
				due = later[0].at
			}
			<-time.After(time.Until(due))
			continue
		}
		next = now.Add(time.Duration(150+h.rng.IntN(450)) * time.Millisecond)
		later = append(later, h.fault(ctx, now)...)
	}
	for _, l := range later {
		l.do()
	}
}

// fault injects one fault chosen by the seed and returns the steps that
// end it later, if any.
func (h *chaosRun) fault(ctx context.Context, now time.Time) []timed {
	i := h.rng.IntN(len(h.workers))
	w := h.workers[i]
	switch f := h.rng.IntN(12); {
	case f < 2: // kill -9 a worker; it comes back a little later
		if !w.alive() || w.stopped {
			return nil
		}
		w.p.kill9()
		w.p = nil
		h.note("kill -9 w%d", i)
		h.tally["kill -9 worker"]++
		back := time.Duration(h.rng.IntN(1500)) * time.Millisecond
		return []timed{{now.Add(back), func() {
			if w.p == nil {
				h.startWorker(i)
				h.note("start w%d", i)
			}
		}}}
	case f < 4: // freeze a worker, often past its lease
		if !w.alive() || w.stopped {
			return nil
		}
		w.signal(syscall.SIGSTOP)
		w.stopped = true
		h.note("SIGSTOP w%d", i)
		h.tally["SIGSTOP"]++
		thaw := time.Duration(500+h.rng.IntN(4500)) * time.Millisecond
		p := w.p
		return []timed{{now.Add(thaw), func() {
			if w.p == p && w.stopped {
				w.signal(syscall.SIGCONT)
				w.stopped = false
				h.note("SIGCONT w%d", i)
			}
		}}}
	case f < 5: // drain a worker with a short timeout, then start it again
		if !w.alive() || w.stopped {
			return nil
		}
		w.signal(syscall.SIGTERM)
		h.note("drain w%d", i)
		h.tally["drain"]++
		select {
		case <-w.p.done:
		case <-time.After(10 * time.Second):
			w.p.kill9()
		}
		h.startWorker(i)
		return nil
	case f < 6 || (f == 11 && h.servers.c != nil):
		// kill -9 the server, or one node of three, and restart it; on
		// a cluster twice as often (node restarts are what it is for)
		return h.serverFault(now)
	case f < 8: // cut a worker's connections at its proxy for a while
		if w.cut {
			return nil
		}
		w.block()
		h.note("cut w%d", i)
		h.tally["cut"]++
		back := time.Duration(500+h.rng.IntN(3500)) * time.Millisecond
		return []timed{{now.Add(back), func() {
			if w.cut {
				w.unblock()
				h.note("reconnect w%d", i)
			}
		}}}
	default: // an extra copy of a dispatch message
		j := h.jobs[h.rng.IntN(len(h.jobs))]
		msgID := fmt.Sprintf("chaos-copy-%d-%d", h.seed, h.rng.Uint64())
		h.retry(ctx, "copy "+j.spec.ID, func() error {
			spec := j.spec.WithDefaults()
			spec.SubmittedAt = time.Now().UTC()
			return h.cl.Store().PublishJob(ctx, spec, jobs.AnonymousOwner, msgID)
		})
		h.note("copy %s", j.spec.ID)
		h.tally["copy"]++
		return nil
	}
}

// serverFault kills the server with SIGKILL and starts it again 0–0.5 s
// later; on a cluster it kills one node, never a second while one is
// down, and starts it again 0–1.5 s later.
func (h *chaosRun) serverFault(now time.Time) []timed {
	s := h.servers
	if s.c == nil {
		s.kill9(0)
		h.note("kill -9 server")
		h.tally["kill -9 server"]++
		time.Sleep(time.Duration(h.rng.IntN(500)) * time.Millisecond)
		s.start(0)
		h.note("start server")
		return nil
	}
	if s.down >= 0 {
		return nil
	}
	k := h.rng.IntN(s.size())
	s.kill9(k)
	h.restartWatches()
	h.note("kill -9 node %d", k)
	h.tally["kill -9 node"]++
	back := time.Duration(h.rng.IntN(1500)) * time.Millisecond
	return []timed{{now.Add(back), func() {
		if s.down == k {
			s.start(k)
			h.note("start node %d", k)
		}
	}}}
}

func (h *chaosRun) note(format string, args ...any) {
	h.faults = append(h.faults, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// heal starts a node that is down, reconnects every cut worker, thaws
// every frozen one and starts every one that is not running.
func (h *chaosRun) heal() {
	if k := h.servers.down; k >= 0 {
		h.servers.start(k)
	}
	for i, w := range h.workers {
		if w.cut {
			w.unblock()
		}
		switch {
		case w.p != nil && !w.alive():
			h.note("w%d had exited on its own", i)
			h.startWorker(i)
		case w.p == nil:
			h.startWorker(i)
		case w.stopped:
			w.signal(syscall.SIGCONT)
			w.stopped = false
		}
	}
	h.note("healed")
	h.healed = time.Now()
}

// stop ends the world once its history is checked: the workers first, all
// at once, then (by the cleanups of start) the servers. A worker whose
// server stopped first retries its last writes until it is killed, 20 s
// later.
func (h *chaosRun) stop() {
	var wg sync.WaitGroup
	for _, w := range h.workers {
		if !w.alive() {
			continue
		}
		if w.cut {
			w.unblock()
		}
		if w.stopped {
			w.signal(syscall.SIGCONT)
		}
		wg.Go(func() {
			w.signal(syscall.SIGINT)
			select {
			case <-w.p.done:
			case <-time.After(10 * time.Second):
				w.p.kill9()
			}
		})
	}
	wg.Wait()
}

// waitAllEnded waits until every job has a committed result.
func (h *chaosRun) waitAllEnded(ctx context.Context, within time.Duration) {
	missing := ""
	if ok, _ := sandruntest.PollCtx(ctx, within, func() (bool, string) {
		missing = ""
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, j := range h.jobs {
			if committed(h.history[j.spec.ID]) < 0 {
				missing = j.spec.ID
				break
			}
		}
		return missing == "", ""
	}); !ok {
		h.t.Errorf("seed %d: %s has no result %s after the faults healed", h.seed, missing, within)
		h.mu.Lock()
		h.report(nil, nil)
		h.mu.Unlock()
		h.t.FailNow()
	}
	h.waitBatchCounted(time.Minute)
	// Late duplicate writes, if any, show up: the workers stop (a worker
	// that could still write has written or gone), then a watch sees a
	// write of the test's own, made after them.
	h.stop()
	h.barrier(ctx)
}
