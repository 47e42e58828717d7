package drills

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
)

// chaosServers is the server side of a chaos run: one `sandrun server`,
// or, for a cluster seed, three clustered nodes with R3 streams and
// buckets. Only the fault loop's goroutine uses it.
type chaosServers struct {
	t    *testing.T
	dir  string
	port int      // the one node's client port
	one  *proc    // the one node; nil on a cluster
	c    *cluster // the three nodes; nil for one
	down int      // the cluster node that is down, -1 if none
}

func startChaosServers(t *testing.T, dir string, clustered bool) *chaosServers {
	s := &chaosServers{t: t, dir: dir, down: -1}
	if clustered {
		s.c = startCluster(t)
		return s
	}
	s.port = freePort(t)
	s.start(0)
	return s
}

// size is the number of nodes.
func (s *chaosServers) size() int {
	if s.c != nil {
		return len(s.c.ports)
	}
	return 1
}

// replicas is what the workers pass as --replicas.
func (s *chaosServers) replicas() int { return s.size() }

// addr is node i's client address, host:port.
func (s *chaosServers) addr(i int) string {
	if s.c != nil {
		return fmt.Sprintf("127.0.0.1:%d", s.c.ports[i])
	}
	return fmt.Sprintf("127.0.0.1:%d", s.port)
}

// url names every node directly: the drill's own client and watch use it.
func (s *chaosServers) url() string {
	urls := make([]string, s.size())
	for i := range urls {
		urls[i] = "nats://" + s.addr(i)
	}
	return strings.Join(urls, ",")
}

// kill9 kills node i with SIGKILL.
func (s *chaosServers) kill9(i int) {
	if s.c != nil {
		s.c.servers[i].kill9()
		s.down = i
		return
	}
	s.one.kill9()
}

// start starts node i again from its data (or for the first time).
func (s *chaosServers) start(i int) {
	if s.c != nil {
		s.c.startNode(i)
		s.down = -1
		return
	}
	s.one = start(s.t, "server", "server", "--no-auth", "--data", filepath.Join(s.dir, "data"), "--port", strconv.Itoa(s.port))
}

// chaosWorker is one worker slot of a run: its process (nil while killed)
// and the TCP proxies, one per node, it reaches the servers through. The
// proxies outlive the process, so that a worker started again is cut off
// like the one it replaces.
type chaosWorker struct {
	name    string
	p       *proc
	stopped bool // SIGSTOPped
	cut     bool // its proxies block every connection
	proxies []*sshtest.Proxy
}

func newChaosWorker(t *testing.T, name string, s *chaosServers) *chaosWorker {
	w := &chaosWorker{name: name}
	for i := range s.size() {
		w.proxies = append(w.proxies, sshtest.NewProxy(t, s.addr(i)))
	}
	return w
}

// url names the worker's proxies, one per node.
func (w *chaosWorker) url() string {
	urls := make([]string, len(w.proxies))
	for i, p := range w.proxies {
		urls[i] = "nats://" + p.Addr
	}
	return strings.Join(urls, ",")
}

// alive reports whether the worker's process runs (frozen or not).
func (w *chaosWorker) alive() bool {
	if w.p == nil {
		return false
	}
	select {
	case <-w.p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the worker's process.
func (w *chaosWorker) signal(sig syscall.Signal) {
	_ = w.p.cmd.Process.Signal(sig)
}

// block cuts the worker's connections and refuses new ones until unblock.
func (w *chaosWorker) block() {
	for _, p := range w.proxies {
		p.Block()
	}
	w.cut = true
}

func (w *chaosWorker) unblock() {
	for _, p := range w.proxies {
		p.Unblock()
	}
	w.cut = false
}
