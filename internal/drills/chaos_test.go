package drills

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/testenv"
)

// TestChaos is a randomized fault-injection run with a checker of the
// whole history, in the spirit of Jepsen. Each seed submits a mix of jobs
// (quick, slow, failing and retried, large output, canceled mid-run) to a
// single-node server with three workers, and for a few seconds injects
// overlapping faults chosen by the seed: kill -9 of a worker, SIGSTOP and
// SIGCONT of one past its lease, a drain with a short timeout, a kill -9
// and restart of the server, and extra copies of dispatch messages. Then
// everything heals and every job must end. A watch opened before the first
// submit records every write of the job records and results, and every
// command logs when it starts and ends. The checker asserts that every job
// ends with exactly one committed result, never replaced; that commands
// start no more often than max_attempts; that a succeeded result belongs
// to a command that ran to its end; and that no command starts after its
// cancel was acknowledged.
//
// SANDRUN_CHAOS_SEEDS picks the seeds ("1-200", "7,9"); by default CI runs
// seeds 1-20 and a developer machine seeds 1-3. docs/RELIABILITY.md
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

// chaosJob is one job of a run and what the checker expects of it.
type chaosJob struct {
	spec     jobs.Spec
	kind     string    // quick, slow, failing, large, cancel
	cancelAt time.Time // when its cancel was acknowledged (kind cancel; zero until then)
}

// chaosRun is one seed's world and what it recorded.
type chaosRun struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	dir     string
	logPath string
	url     string
	port    int
	server  *proc
	workers []*proc
	stopped []bool // SIGSTOPped
	cl      *client.Client
	jobs    []*chaosJob
	faults  []string

	mu     sync.Mutex
	writes map[string][]chaosWrite // by key: every write of run.ID and result.ID, in order
}

// chaosWrite is one write of a record, as the watch saw it.
type chaosWrite struct {
	rev   uint64
	op    jetstream.KeyValueOp
	at    time.Time
	state jobs.State
	try   int // the record's attempt
}

func runChaos(t *testing.T, seed uint64) *chaosRun {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "log")
	if err := os.Mkdir(logDir, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(logDir, 0o777) // the umask; the local backend may run jobs as another user
	h := &chaosRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5a4d)), dir: dir,
		logPath: filepath.Join(logDir, "commands"), port: freePort(t), writes: map[string][]chaosWrite{}}
	h.url = fmt.Sprintf("nats://127.0.0.1:%d", h.port)
	h.startServer()
	if err := natsutil.WaitJetStream(t.Context(), h.url, 1); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		h.workers = append(h.workers, nil)
		h.stopped = append(h.stopped, false)
		h.startWorker(i)
	}
	h.cl = connect(t, h.url)
	h.watch()

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	h.submitAll(ctx)
	h.faultWindow(ctx, 6*time.Second)
	h.heal()
	h.waitAllEnded(ctx, 2*time.Minute)
	return h
}

func (h *chaosRun) startServer() {
	h.server = start(h.t, "server", "server", "--no-auth", "--data", filepath.Join(h.dir, "data"), "--port", strconv.Itoa(h.port))
}

func (h *chaosRun) startWorker(i int) {
	name := fmt.Sprintf("chaos-w%d", i)
	h.workers[i] = start(h.t, name, "worker", "--nats-url", h.url, "--replicas", "1", "--name", name,
		"--slots", "4", "--lease-ttl", "3s", "--election-ttl", "2s", "--reaper-scan", "2s", "--kill-grace", "500ms",
		"--drain-timeout", "1s", "--pull-wait", "1s", "--log-format", "text")
	h.stopped[i] = false
}

// watch records every write of the job records and results from before
// the first submit. It reconnects through server restarts (Follow resumes
// after the last revision it saw).
func (h *chaosRun) watch() {
	st := h.cl.Store()
	ready := make(chan error, 1)
	go st.Follow(h.t.Context(), st.State, ">", func(err error) { ready <- err }, func(e jetstream.KeyValueEntry) {
		key := e.Key()
		if !strings.HasPrefix(key, "run.") && !strings.HasPrefix(key, "result.") {
			return
		}
		w := chaosWrite{rev: e.Revision(), op: e.Operation(), at: e.Created()}
		if e.Operation() == jetstream.KeyValuePut {
			if strings.HasPrefix(key, "run.") {
				var r jobs.Run
				_ = json.Unmarshal(e.Value(), &r)
				w.state, w.try = r.State, r.Attempt
				if r.Result != nil {
					// A commit: the result is part of the record's
					// write. Kept with the results, as one was.
					c := chaosWrite{rev: w.rev, op: w.op, at: w.at, state: r.Result.State, try: r.Result.Attempt}
					rk := resultKey(strings.TrimPrefix(key, "run."))
					h.mu.Lock()
					h.writes[rk] = append(h.writes[rk], c)
					h.mu.Unlock()
				}
			} else {
				var r jobs.Result
				_ = json.Unmarshal(e.Value(), &r)
				w.state, w.try = r.State, r.Attempt
			}
		}
		h.mu.Lock()
		h.writes[key] = append(h.writes[key], w)
		h.mu.Unlock()
	})
	if err := <-ready; err != nil {
		h.t.Fatal(err)
	}
}

// command is a job's command line: it logs its start and its end (with
// the time in nanoseconds) around body.
func (h *chaosRun) command(id, body string) string {
	stamp := func(what string) string {
		return fmt.Sprintf(`echo "%s %s $(date +%%s%%N)" >> %s`, what, id, h.logPath)
	}
	return stamp("start") + "; " + body + "; s=$?; " + stamp("end") + "; exit $s"
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
}

// retry runs op until it succeeds: the server may be down for a moment.
func (h *chaosRun) retry(ctx context.Context, what string, op func() error) {
	for {
		err := op()
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			h.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// faultWindow injects overlapping faults for d, and cancels the jobs of
// kind cancel at random times in it.
func (h *chaosRun) faultWindow(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	type timed struct {
		at time.Time
		do func()
	}
	var later []timed
	for _, j := range h.jobs {
		if j.kind == "cancel" {
			j := j
			later = append(later, timed{time.Now().Add(time.Duration(300+h.rng.IntN(3000)) * time.Millisecond), func() {
				h.retry(ctx, "cancel "+j.spec.ID, func() error { _, err := h.cl.Cancel(ctx, j.spec.ID); return err })
				j.cancelAt = time.Now()
				h.note("cancel %s", j.spec.ID)
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
			time.Sleep(20 * time.Millisecond)
			continue
		}
		next = now.Add(time.Duration(150+h.rng.IntN(450)) * time.Millisecond)
		i := h.rng.IntN(len(h.workers))
		switch f := h.rng.IntN(10); {
		case f < 2: // kill -9 a worker; it comes back a little later
			if h.workers[i] != nil && !h.stopped[i] {
				h.workers[i].kill9()
				h.workers[i] = nil
				h.note("kill -9 w%d", i)
				back := time.Duration(h.rng.IntN(1500)) * time.Millisecond
				later = append(later, timed{now.Add(back), func() {
					if h.workers[i] == nil {
						h.startWorker(i)
						h.note("start w%d", i)
					}
				}})
			}
		case f < 4: // freeze a worker, often past its lease
			if h.workers[i] != nil && !h.stopped[i] {
				_ = h.workers[i].cmd.Process.Signal(syscall.SIGSTOP)
				h.stopped[i] = true
				h.note("SIGSTOP w%d", i)
				thaw := time.Duration(500+h.rng.IntN(4500)) * time.Millisecond
				p := h.workers[i]
				later = append(later, timed{now.Add(thaw), func() {
					if h.workers[i] == p && h.stopped[i] {
						_ = p.cmd.Process.Signal(syscall.SIGCONT)
						h.stopped[i] = false
						h.note("SIGCONT w%d", i)
					}
				}})
			}
		case f < 5: // drain a worker with a short timeout, then start it again
			if h.workers[i] != nil && !h.stopped[i] {
				p := h.workers[i]
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				h.note("drain w%d", i)
				select {
				case <-p.done:
				case <-time.After(10 * time.Second):
					p.kill9()
				}
				h.startWorker(i)
			}
		case f < 6: // restart the server
			h.server.kill9()
			h.note("kill -9 server")
			time.Sleep(time.Duration(h.rng.IntN(500)) * time.Millisecond)
			h.startServer()
			h.note("start server")
		default: // an extra copy of a dispatch message
			j := h.jobs[h.rng.IntN(len(h.jobs))]
			msgID := fmt.Sprintf("chaos-copy-%d-%d", h.seed, h.rng.Uint64())
			h.retry(ctx, "copy "+j.spec.ID, func() error {
				spec := j.spec.WithDefaults()
				spec.SubmittedAt = time.Now().UTC()
				return h.cl.Store().PublishJob(ctx, spec, jobs.AnonymousOwner, msgID)
			})
			h.note("copy %s", j.spec.ID)
		}
	}
	for _, l := range later {
		l.do()
	}
}

func (h *chaosRun) note(format string, args ...any) {
	h.faults = append(h.faults, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// heal thaws every frozen worker and starts every killed one.
func (h *chaosRun) heal() {
	for i, p := range h.workers {
		switch {
		case p == nil:
			h.startWorker(i)
		case h.stopped[i]:
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			h.stopped[i] = false
		}
	}
	h.note("healed")
}

// waitAllEnded waits until every job has a result.
func (h *chaosRun) waitAllEnded(ctx context.Context, within time.Duration) {
	deadline := time.Now().Add(within)
	for {
		missing := ""
		h.mu.Lock()
		for _, j := range h.jobs {
			if len(h.writes[resultKey(j.spec.ID)]) == 0 {
				missing = j.spec.ID
				break
			}
		}
		h.mu.Unlock()
		if missing == "" {
			time.Sleep(500 * time.Millisecond) // late duplicate writes, if any, show up
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			h.t.Errorf("seed %d: %s has no result %s after the faults healed", h.seed, missing, within)
			h.report()
			h.t.FailNow()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// commandLog reads what the commands logged: per job, the start and end
// times of each run of its command, in order.
func (h *chaosRun) commandLog() (starts, ends map[string][]time.Time) {
	starts, ends = map[string][]time.Time{}, map[string][]time.Time{}
	f, err := os.Open(h.logPath)
	if err != nil {
		h.t.Fatalf("command log: %v", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			h.t.Errorf("command log: torn line %q", sc.Text())
			continue
		}
		ns, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil {
			h.t.Errorf("command log: %q: %v", sc.Text(), err)
			continue
		}
		at := time.Unix(0, ns)
		if fields[0] == "start" {
			starts[fields[1]] = append(starts[fields[1]], at)
		} else {
			ends[fields[1]] = append(ends[fields[1]], at)
		}
	}
	return starts, ends
}

// check is the history checker.
func (h *chaosRun) check(t *testing.T) {
	starts, ends := h.commandLog()
	h.mu.Lock()
	defer h.mu.Unlock()
	bad := false
	fail := func(format string, args ...any) {
		bad = true
		t.Errorf("seed %d: "+format, append([]any{h.seed}, args...)...)
	}
	for _, j := range h.jobs {
		id := j.spec.ID
		var results []chaosWrite
		for _, w := range h.writes[resultKey(id)] {
			if w.op == jetstream.KeyValuePut {
				results = append(results, w)
			}
		}
		switch {
		case len(results) == 0:
			fail("%s: no committed result", id)
			continue
		case len(results) > 1:
			states := make([]string, len(results))
			for i, r := range results {
				states[i] = fmt.Sprintf("%s (attempt %d)", r.state, r.try)
			}
			fail("%s: %d committed results, one replaced another: %s", id, len(results), strings.Join(states, " then "))
		}
		final := results[len(results)-1]
		// A job a draining worker hands back gives its attempt back: it
		// did not fail. Those starts are allowed on top of max_attempts.
		handBacks, running := 0, false
		for _, w := range h.writes[jobs.RunKey(id)] {
			if w.state == jobs.StateQueued && running {
				handBacks++
			}
			running = w.state == jobs.StateRunning
		}
		if n := len(starts[id]); n > j.spec.MaxAttempts+handBacks {
			fail("%s: its command started %d times, max_attempts %d (+%d handed back)", id, n, j.spec.MaxAttempts, handBacks)
		}
		if final.state == jobs.StateSucceeded && len(ends[id]) == 0 {
			fail("%s: succeeded, but its command never ran to its end", id)
		}
		if j.kind == "failing" && final.state == jobs.StateSucceeded {
			fail("%s: a command that exits 3 succeeded", id)
		}
		if !j.cancelAt.IsZero() {
			h.checkCancel(j, starts[id], final, fail)
		}
	}
	if bad {
		h.report()
	}
}

// checkCancel: no attempt claimed after the cancel was acknowledged starts
// its command. An attempt
// claimed before the cancel may still start its command after it (a
// worker frozen between its claim and the start of the process; no check
// before a start can close that window), and is then stopped — or, when
// its worker cannot act on the cancel in time (frozen), it ends as it
// would have; a succeeded result still needs a command that ran to its end.
func (h *chaosRun) checkCancel(j *chaosJob, starts []time.Time, final chaosWrite, fail func(string, ...any)) {
	id := j.spec.ID
	var claims []time.Time // claims stored after the cancel was acknowledged
	for _, w := range h.writes[jobs.RunKey(id)] {
		if w.state == jobs.StateRunning && w.at.After(j.cancelAt) {
			claims = append(claims, w.at)
		}
	}
	for _, s := range starts {
		for _, c := range claims {
			if !s.Before(c) {
				fail("%s: an attempt claimed %v after its cancel was acknowledged started its command", id, c.Sub(j.cancelAt).Round(time.Millisecond))
			}
		}
	}
	if final.state == jobs.StateQueued || final.state == jobs.StateRunning {
		fail("%s: result in state %s", id, final.state)
	}
}

// report logs the faults and each job's history, for a failed seed.
func (h *chaosRun) report() {
	h.t.Logf("seed %d faults:\n%s", h.seed, strings.Join(h.faults, "\n"))
	for _, j := range h.jobs {
		var b strings.Builder
		for _, key := range []string{jobs.RunKey(j.spec.ID), resultKey(j.spec.ID)} {
			for _, w := range h.writes[key] {
				fmt.Fprintf(&b, "  %s %s rev %d %s attempt %d\n", w.at.Format("15:04:05.000"), key, w.rev, w.state, w.try)
			}
		}
		h.t.Logf("%s (%s, max_attempts %d, cancel %v):\n%s", j.spec.ID, j.kind, j.spec.MaxAttempts, j.cancelAt.Format("15:04:05.000"), b.String())
	}
}

// resultKey is where the history keeps a job's commits: the record writes
// that carry a result (and the writes of result.<id>, where results were
// kept before they moved into the record).
func resultKey(id string) string { return "result." + id }
