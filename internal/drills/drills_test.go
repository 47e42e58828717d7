// Package drills holds failure drills: sandrun's invariants checked on a
// 3-node JetStream cluster of separate processes while parts of it fail.
// Each drill ends with every job's state and its number of committed
// results, and logs the figures docs/RELIABILITY.md records.
package drills

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// sandrunBin is the CLI (built without the race detector): the servers
// and the workers of a drill are its processes.
var sandrunBin string

func TestMain(m *testing.M) { os.Exit(sandruntest.MainWithCLI(m, false, &sandrunBin)) }

// proc is a child process of a drill.
type proc struct {
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(sandrunBin, args...), log: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, tail(p.log.String(), 4000))
		}
	})
	return p
}

func (p *proc) kill9() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// cluster is three `sandrun server` nodes on loopback.
type cluster struct {
	t       *testing.T
	names   []string
	ports   []int
	routes  []int
	dirs    []string
	servers []*proc
	workers []*proc // those clusterWithWorkers started
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{t: t}
	base := t.TempDir()
	for i := range 3 {
		c.names = append(c.names, fmt.Sprintf("drill-%d", i+1))
		c.ports = append(c.ports, freePort(t))
		c.routes = append(c.routes, freePort(t))
		c.dirs = append(c.dirs, filepath.Join(base, c.names[i]))
	}
	c.servers = make([]*proc, 3)
	for i := range 3 {
		c.startNode(i)
	}
	return c
}

func (c *cluster) startNode(i int) {
	var routes []string
	for j, p := range c.routes {
		if j != i {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
		}
	}
	c.servers[i] = start(c.t, c.names[i], "server", "--no-auth", "--data", c.dirs[i], "--name", c.names[i], "--port", fmt.Sprint(c.ports[i]),
		"--cluster-name", "drill", "--cluster-port", fmt.Sprint(c.routes[i]), "--routes", strings.Join(routes, ","),
		// Clients use only the URLs they are given: a worker behind a
		// proxy stays behind it.
		"--no-advertise")
}

func (c *cluster) url() string {
	urls := make([]string, len(c.ports))
	for i, p := range c.ports {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	return strings.Join(urls, ",")
}

// node returns the index of the server named name.
func (c *cluster) node(name string) int {
	for i, n := range c.names {
		if n == name {
			return i
		}
	}
	c.t.Fatalf("no node %q", name)
	return -1
}

// clusterWithWorkers starts a 3-node cluster and n workers on it (R3
// layout, 8 slots, 10s lease TTL), all at once, and returns a client.
func clusterWithWorkers(t *testing.T, n int, extra ...string) (*cluster, *client.Client) {
	t.Helper()
	c := startCluster(t)
	url := c.url()
	if err := natsutil.WaitJetStream(t.Context(), url, 3); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c.workers = append(c.workers, startWorker(t, url, fmt.Sprintf("drill-w%d", i), extra...))
	}
	return c, connect(t, url)
}

// startWorker starts a worker process named name (R3 layout, 8 slots,
// 10s lease TTL); extra flags follow those.
func startWorker(t *testing.T, url, name string, extra ...string) *proc {
	t.Helper()
	args := append([]string{"worker", "--nats-url", url, "--replicas", "3", "--name", name,
		"--slots", "8", "--lease-ttl", "10s", "--kill-grace", "2s", "--log-format", "text"}, extra...)
	return start(t, name, args...)
}

// connect waits for the layout (created by the workers) and returns a
// client.
func connect(t *testing.T, url string) *client.Client {
	t.Helper()
	var cl *client.Client
	sandruntest.Eventually(t, 90*time.Second, func() (bool, string) {
		var err error
		cl, err = client.Connect(t.Context(), client.Options{URL: url, Name: "drill"})
		return err == nil, fmt.Sprintf("connect: %v", err)
	})
	t.Cleanup(cl.Close)
	return cl
}

// resultWrites counts every committed write of each result key.
type resultWrites struct {
	st    *jobs.Store
	mu    sync.Mutex
	rev   uint64 // the last revision of the bucket delivered
	n     map[string]int
	state map[string]jobs.State // the last written result's state
	at    []time.Time           // when each write was stored (the server's time)
	last  map[string]time.Time  // when each job's last result write was stored
}

func watchResults(t *testing.T, st *jobs.Store) *resultWrites {
	t.Helper()
	rw := &resultWrites{st: st, n: map[string]int{}, state: map[string]jobs.State{}, last: map[string]time.Time{}}
	// The whole bucket is watched, so that a barrier (a key of its own)
	// shows when every earlier write has been seen.
	go st.Follow(t.Context(), st.State, ">", nil, func(e jetstream.KeyValueEntry) {
		rw.mu.Lock()
		rw.rev = max(rw.rev, e.Revision())
		rw.mu.Unlock()
		id, isRun := strings.CutPrefix(e.Key(), jobs.RunKey(""))
		if !isRun || e.Operation() != jetstream.KeyValuePut {
			return
		}
		var run jobs.Run
		if json.Unmarshal(e.Value(), &run) != nil || run.Result == nil {
			return // not a commit
		}
		r := *run.Result
		rw.mu.Lock()
		rw.n[id]++
		rw.state[id] = r.State
		rw.at = append(rw.at, e.Created())
		rw.last[id] = e.Created()
		rw.mu.Unlock()
	})
	return rw
}

// barrier writes a key of its own to the bucket and waits until the watch
// has delivered it: every write made before the call has then been
// counted. With every worker that could write stopped, the counts are
// final: no stray commit is left to land.
func (rw *resultWrites) barrier(t *testing.T) {
	t.Helper()
	var rev uint64
	// Right after a node's restart a write may time out: try again.
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		var err error
		rev, err = rw.st.State.Put(t.Context(), "test.barrier", []byte("barrier"))
		return err == nil, fmt.Sprintf("write the barrier: %v", err)
	})
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		rw.mu.Lock()
		defer rw.mu.Unlock()
		return rw.rev >= rev, fmt.Sprintf("the result watch is at revision %d, the barrier at %d", rw.rev, rev)
	})
}

// stopAll stops the processes (SIGINT, a worker drains) and waits for
// them to exit.
func stopAll(ps ...*proc) {
	for _, p := range ps {
		_ = p.cmd.Process.Signal(os.Interrupt)
	}
	for _, p := range ps {
		<-p.done
	}
}

func (rw *resultWrites) total() (keys, writes int) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for _, n := range rw.n {
		keys++
		writes += n
	}
	return keys, writes
}

// waitKeys waits until n jobs have a result, for at most within, and
// fails the test after that; when says when the wait started, for the
// message.
func (rw *resultWrites) waitKeys(t *testing.T, n int, within time.Duration, when string) {
	t.Helper()
	sandruntest.Eventually(t, within, func() (bool, string) {
		k, _ := rw.total()
		return k >= n, fmt.Sprintf("%d of %d jobs ended %s", k, n, when)
	})
}

// storedAt is when the last of ids' results was stored (zero: one has no
// result yet).
func (rw *resultWrites) storedAt(ids []string) time.Time {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	var last time.Time
	for _, id := range ids {
		at, ok := rw.last[id]
		if !ok {
			return time.Time{}
		}
		if at.After(last) {
			last = at
		}
	}
	return last
}

// duplicates reports every job with more than one result write and
// returns how many there are.
func (rw *resultWrites) duplicates(t *testing.T) int {
	t.Helper()
	dups := 0
	for id, k := range rw.snapshot() {
		if k != 1 {
			dups++
			t.Errorf("%s: %d result writes", id, k)
		}
	}
	return dups
}

// snapshot copies the write counts by job ID.
func (rw *resultWrites) snapshot() map[string]int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return maps.Clone(rw.n)
}

// states counts the last written results by state.
func (rw *resultWrites) states() map[jobs.State]int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	out := map[jobs.State]int{}
	for _, s := range rw.state {
		out[s]++
	}
	return out
}

// firstAfter is the first write stored after t0, and last the last
// write stored. They are the server's times, so a watch that lags after a
// failure does not count as recovery time.
func (rw *resultWrites) firstAfter(t0 time.Time) (first, last time.Time) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for _, at := range rw.at {
		if at.After(t0) && (first.IsZero() || at.Before(first)) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	return first, last
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := natsutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
