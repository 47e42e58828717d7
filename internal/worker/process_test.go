package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// proc is a worker running as its own process.
type proc struct {
	cmd         *exec.Cmd
	name        string
	metricsAddr string
	mu          sync.Mutex
	log         bytes.Buffer
	done        chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// metricsAddrRE finds the address the worker logged it serves metrics on.
var metricsAddrRE = regexp.MustCompile(`msg="metrics served" metrics_addr=(\S+)`)

// waitMetricsAddr waits until the process has logged the address its
// metrics listener bound: it is started on port 0, so that no other test
// can take the port between a probe and the bind.
func (p *proc) waitMetricsAddr(t *testing.T) {
	t.Helper()
	sandruntest.Eventually(t, 20*time.Second, func() (bool, string) {
		if m := metricsAddrRE.FindStringSubmatch(p.logs()); m != nil {
			p.mu.Lock()
			p.metricsAddr = m[1]
			p.mu.Unlock()
			return true, ""
		}
		return false, "the worker has not logged its metrics address"
	})
}

// startProc runs `sandrun worker` against url with test timings.
func startProc(t *testing.T, url, name string, extra ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(sandrunBin, "worker", "--nats-url", url, "--name", name, "--slots", "2",
		"--lease-ttl", "3s", "--election-ttl", "2s", "--reaper-scan", "2s", "--pull-wait", "1s",
		"--kill-grace", "1s", "--metrics-addr", "127.0.0.1:0", "--log-format", "text")
	p.cmd.Args = append(p.cmd.Args, extra...)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("worker %s log:\n%s", name, p.logs())
		}
	})
	p.waitMetricsAddr(t)
	return p
}

// metric scrapes the process's /metrics for one un-labelled sample.
func (p *proc) metric(name string) (float64, error) {
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			return strconv.ParseFloat(f[1], 64)
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return 0, fmt.Errorf("%s not found", name)
}

// resultWrites counts every write of a job's record that carries a result
// (a commit) from now on. It watches the whole state bucket, so that a
// barrier (a key of its own) shows when it has seen every earlier write.
type resultWrites struct {
	st  *jobs.Store
	mu  sync.Mutex
	n   map[string]int
	rev uint64 // the last revision delivered
}

// barrierKey is the state key barrier writes: no part of sandrun reads it.
const barrierKey = "test.barrier"

func watchResults(t *testing.T, e env) *resultWrites {
	t.Helper()
	rw := &resultWrites{st: e.st, n: map[string]int{}}
	ctx, cancel := context.WithCancel(e.ctx)
	ready := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.st.Follow(ctx, e.st.State, ">", func(err error) { ready <- err }, func(ent jetstream.KeyValueEntry) {
			var run jobs.Run
			rw.mu.Lock()
			defer rw.mu.Unlock()
			rw.rev = max(rw.rev, ent.Revision())
			if strings.HasPrefix(ent.Key(), jobs.RunKey("")) && ent.Operation() == jetstream.KeyValuePut && json.Unmarshal(ent.Value(), &run) == nil && run.Result != nil {
				rw.n[strings.TrimPrefix(ent.Key(), jobs.RunKey(""))]++
			}
		})
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return rw
}

// barrier writes barrierKey and waits until the watch has delivered it:
// every write made before the call has then been counted. With the
// workers that could write stopped, the counts are final: a positive
// proof that no stray write is left to land.
func (rw *resultWrites) barrier(t *testing.T) {
	t.Helper()
	rev, err := rw.st.State.Put(t.Context(), barrierKey, []byte("barrier"))
	if err != nil {
		t.Fatal(err)
	}
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		rw.mu.Lock()
		defer rw.mu.Unlock()
		return rw.rev >= rev, fmt.Sprintf("the result watch is at revision %d, the barrier at %d", rw.rev, rev)
	})
}

func (rw *resultWrites) count(id string) int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.n[id]
}

func TestKill9WorkerMidJob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	writes := watchResults(t, e)
	a := startProc(t, e.url, "worker-a")
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "echo started; sleep 2; echo finished", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(t, spec.ID, 20*time.Second, func(s client.Status) bool { return running(s) && s.Run.Worker == "worker-a" })
	if err := a.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-a.done
	cfg := sandruntest.FastConfig()
	cfg.Name = "worker-b"
	b := sandruntest.StartWorker(t, e.st, cfg)
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Worker != "worker-b" || r.Attempt != 2 {
		t.Fatalf("result %s by %s on attempt %d, want succeeded by worker-b on attempt 2", r.State, r.Worker, r.Attempt)
	}
	if r.Stdout.Head != "started\nfinished\n" {
		t.Fatalf("output %q", r.Stdout.Head)
	}
	// Every worker that could write is gone (a killed, b drained): once
	// the watch has seen a later write, the count is final.
	b.Stop()
	writes.barrier(t)
	if n := writes.count(spec.ID); n != 1 {
		t.Fatalf("%d results committed, want exactly 1", n)
	}
}

func TestFrozenWorkerLateCommitIsRejected(t *testing.T) {
	t.Parallel()
	e := setup(t)
	writes := watchResults(t, e)
	a := startProc(t, e.url, "worker-frozen")
	// The job marks its start, so the worker is frozen only once its
	// command runs (the command keeps running: it has its own group).
	mark := filepath.Join(t.TempDir(), "started")
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "touch " + mark + "; sleep 2; echo done", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(t, spec.ID, 20*time.Second, func(s client.Status) bool {
		_, err := os.Stat(mark)
		return running(s) && s.Run.Worker == "worker-frozen" && err == nil
	})
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cfg := sandruntest.FastConfig()
	cfg.Name = "worker-live"
	sandruntest.StartWorker(t, e.st, cfg)
	r := sandruntest.WaitResult(t, e.c, spec.ID, 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Worker != "worker-live" {
		t.Fatalf("result %s by %s, want succeeded by worker-live", r.State, r.Worker)
	}
	// The frozen worker's job ended while it was stopped; on waking it
	// commits, and the server refuses the stale lease revision.
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	sandruntest.Eventually(t, 15*time.Second, func() (bool, string) {
		v, err := a.metric("sandrun_stale_commits_rejected_total")
		return err == nil && v == 1, fmt.Sprintf("stale commits rejected = %v (%v), want 1", v, err)
	})
	st, err := e.c.Status(e.ctx, spec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Result == nil || st.Result.Worker != "worker-live" {
		t.Fatalf("result after the late commit: %+v, want worker-live's", st.Result)
	}
	writes.barrier(t)
	if n := writes.count(spec.ID); n != 1 {
		t.Fatalf("%d results committed, want exactly 1", n)
	}
}

func TestSIGTERMDrainsTheWorkerProcess(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a := startProc(t, e.url, "worker-term")
	mark := filepath.Join(t.TempDir(), "started")
	spec, err := e.c.Submit(e.ctx, jobs.Spec{Command: "touch " + mark + "; sleep 1; echo drained"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitState(t, spec.ID, 20*time.Second, func(s client.Status) bool {
		_, err := os.Stat(mark)
		return running(s) && err == nil
	})
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not exit after SIGTERM")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("worker exit code %d after SIGTERM, want 0", code)
	}
	r := sandruntest.WaitResult(t, e.c, spec.ID, 5*time.Second)
	if r.State != jobs.StateSucceeded || r.Worker != "worker-term" || r.Stdout.Head != "drained\n" {
		t.Fatalf("result %s by %s %q, want the draining worker to finish the job", r.State, r.Worker, r.Stdout.Head)
	}
}
