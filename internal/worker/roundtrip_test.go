package worker_test

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/jobs/jobstest"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/worker"
)

// TestHotPathRoundTrips counts, on the wire, the requests a warm `true`
// job makes: the submitter's and the worker's connections are read as
// NATS protocol, and every publish that names the job (its dispatch, its
// keys, its events) is tallied with whether it asks for an answer. The
// job waits on: the dispatch publish, the pull that delivers it (one per
// job, counted here by design, since it names no job), the lease's
// create, the record's create (the claim) and the record's terminal
// write (the commit). Events and the lease's release are published
// without waiting; an ack asks for no answer. The target is at
// most 5 waited round trips per job, against 9 before.
func TestHotPathRoundTrips(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	var wire tally
	st := countedStore(t, s.ClientURL(), &wire, "worker")
	cfg := sandruntest.FastConfig()
	cfg.NoReaper = true
	var handled sandruntest.Handled
	sandruntest.StartWorkerDeps(t, st, cfg, sandruntest.LocalBackends(t), func(d *worker.Deps) { d.Handled = handled.Add })
	cst := countedStore(t, s.ClientURL(), &wire, "submitter")
	c := client.New(cst)
	// The test waits for results on a connection of its own: a watch of
	// the result is the waiter's cost, not the job's.
	waiter := sandruntest.Client(sandruntest.Store(t, s.ClientURL()))
	ctx := sandruntest.Ctx(t)

	run := func(id string) {
		if _, err := c.Submit(ctx, jobs.Spec{ID: id, Command: "true"}); err != nil {
			t.Fatal(err)
		}
		if r := sandruntest.WaitResult(t, waiter, id, 30*time.Second); r.State != jobs.StateSucceeded {
			t.Fatalf("%s: %s %s", id, r.State, r.Error)
		}
		// The worker is done with the job, and its async publishes
		// reach the wire: a flush writes what its connection buffers.
		handled.Wait(t, id, 1, 30*time.Second)
		if err := st.JS.Conn().Flush(); err != nil {
			t.Fatal(err)
		}
	}
	run("warm-up") // connections, consumers and the cancel watch in place
	wire.reset("hot-path")
	run("hot-path")

	waited, async := 1, 0 // the pull that delivered the job
	for _, p := range wire.pubs() {
		switch {
		case !p.reply: // an ack: no answer asked for
		case strings.HasPrefix(p.subject, jobs.EventSubject("hot-path", "")), bytes.Contains(p.header, []byte("KV-Operation: PURGE")):
			async++
		default:
			waited++
		}
		t.Logf("%-9s %-60s reply=%v", p.conn, p.subject, p.reply)
	}
	t.Logf("hot path: %d waited round trips (incl. the pull), %d publishes not waited for", waited, async)
	if waited > 5 {
		t.Errorf("a `true` job waits on %d round trips, want at most 5", waited)
	}
	if waited < 4 {
		t.Errorf("only %d round trips counted: the tally misses the job's writes", waited)
	}
}

// countedStore is a jobs.Store on its own connection, whose outgoing
// protocol is tallied in w under name.
func countedStore(t *testing.T, url string, w *tally, name string) *jobs.Store {
	t.Helper()
	nc, err := nats.Connect(url, nats.SetCustomDialer(&countingDialer{w: w, name: name}))
	if err != nil {
		t.Fatal(err)
	}
	return jobstest.Layout(t, nc)
}

// pub is one PUB or HPUB a client sent.
type pub struct {
	conn, subject string
	reply         bool
	header        []byte
}

// tally keeps the publishes that name one job, or every publish (all).
type tally struct {
	mu   sync.Mutex
	id   string
	all  bool
	seen []pub
}

func (t *tally) reset(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.id, t.seen = id, nil
}

func (t *tally) countAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.all = true
}

func (t *tally) add(p pub, payload []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.all && (t.id == "" || !strings.Contains(p.subject, t.id) && !bytes.Contains(payload, []byte(`"`+t.id+`"`))) {
		return
	}
	t.seen = append(t.seen, p)
}

func (t *tally) pubs() []pub {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]pub(nil), t.seen...)
}

type countingDialer struct {
	w    *tally
	name string
}

func (d *countingDialer) Dial(network, address string) (net.Conn, error) {
	c, err := net.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, d: d}, nil
}

// countingConn parses the client's side of the NATS protocol as it is
// written: op lines, and the payloads of PUB and HPUB.
type countingConn struct {
	net.Conn
	d   *countingDialer
	buf []byte
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for {
		eol := bytes.Index(c.buf, []byte("\r\n"))
		if eol < 0 {
			break
		}
		f := strings.Fields(string(c.buf[:eol]))
		if len(f) == 0 || (f[0] != "PUB" && f[0] != "HPUB") {
			c.buf = c.buf[eol+2:]
			continue
		}
		// PUB subj [reply] size; HPUB subj [reply] hdrlen size.
		hdr := 0
		if f[0] == "HPUB" {
			hdr, _ = strconv.Atoi(f[len(f)-2])
		}
		size, _ := strconv.Atoi(f[len(f)-1])
		if len(c.buf) < eol+2+size+2 {
			break // the payload is still to come
		}
		payload := c.buf[eol+2 : eol+2+size]
		nargs := 3
		if f[0] == "HPUB" {
			nargs = 4
		}
		c.d.w.add(pub{conn: c.d.name, subject: f[1], reply: len(f) > nargs, header: bytes.Clone(payload[:hdr])}, payload)
		c.buf = c.buf[eol+2+size+2:]
	}
	return c.Conn.Write(p)
}

// TestReaperPassSkipsFinishedJobs is item 7 of the issue: the reaper's
// periodic pass read every job record (a listing of all keys, then one read
// each) every reaper_scan, so its cost grew with every finished job. It
// now keeps an index of the jobs that have not ended from one watch; with
// 300 finished jobs and a pass every 100 ms, its connection reads no job
// record and lists nothing, and a job whose worker is gone is still
// recovered by the pass.
func TestReaperPassSkipsFinishedJobs(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	ctx := sandruntest.Ctx(t)
	const n = 300
	now := time.Now().UTC()
	for i := range n {
		id := "done-" + strconv.Itoa(i)
		run := jobs.Run{Spec: jobs.Spec{ID: id, Command: "true"}, State: jobs.StateRunning, Attempt: 1, UpdatedAt: now}
		rev, err := st.CreateRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.End(ctx, run, jobs.Result{JobID: id, State: jobs.StateSucceeded, Attempt: 1, FinishedAt: now}, rev); err != nil {
			t.Fatal(err)
		}
	}
	// A job whose worker died before the reaper started: running, no lease.
	orphan := record(jobs.Spec{ID: "orphan", Command: "true", MaxAttempts: 1}.WithDefaults(), jobs.StateRunning, 1, "gone", now)
	if _, err := st.CreateRun(ctx, orphan); err != nil {
		t.Fatal(err)
	}

	var wire tally
	wire.countAll()
	wst := countedStore(t, s.ClientURL(), &wire, "reaper")
	cfg := sandruntest.FastConfig()
	cfg.ReaperScan = 100 * time.Millisecond
	var passes atomic.Int64
	w := sandruntest.StartWorkerDeps(t, wst, cfg, sandruntest.LocalBackends(t), func(d *worker.Deps) {
		d.ReaperPass = func() { passes.Add(1) }
	})
	c := sandruntest.Client(st)
	if r := sandruntest.WaitResult(t, c, "orphan", 30*time.Second); r.State != jobs.StateDead {
		t.Fatalf("orphan: %s %q, want dead (its one attempt spent by a lost worker)", r.State, r.Error)
	}
	// The reaper's own watch has seen the orphan end (a pass that runs
	// before it does looks at the orphan once more, which is not a pass
	// over finished jobs).
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		n := testutil.ToFloat64(w.Metrics.ReaperIndexed)
		return n == 0, fmt.Sprintf("the reaper still indexes %v jobs", n)
	})
	wire.reset("")
	// 20 whole passes (one may be under way at the reset).
	from := passes.Load()
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		n := passes.Load() - from
		return n >= 21, fmt.Sprintf("%d reaper passes", n)
	})
	counted := passes.Load() - from
	reads, lists, checks := 0, 0, 0
	for _, p := range wire.pubs() {
		switch {
		case strings.Contains(p.subject, "DIRECT.GET") && strings.HasSuffix(p.subject, ".>"):
			checks++ // the stall check: the newest record or lease, one read each, whatever the count of jobs
		case strings.Contains(p.subject, "DIRECT.GET") && strings.Contains(p.subject, "run."):
			reads++
		case strings.HasPrefix(p.subject, "$JS.API.CONSUMER.CREATE"):
			lists++
		}
	}
	t.Logf("%d finished jobs, %d passes every 100 ms: %d record reads, %d consumers created, %d newest-revision reads", n, counted, reads, lists, checks)
	if reads != 0 || lists != 0 {
		t.Errorf("the reaper's passes read %d job records and created %d consumers, want none", reads, lists)
	}
	if checks > 2*int(counted) { // two per pass
		t.Errorf("the reaper's stall checks made %d reads in %d passes, want at most two a pass", checks, counted)
	}
}
