package scheduler_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

type schedProc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	mu   *sync.Mutex
	log  *bytes.Buffer
}

type lockedBuffer struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func startSched(t *testing.T, url, file, name string, logs *bytes.Buffer, mu *sync.Mutex) *schedProc {
	t.Helper()
	p := &schedProc{name: name, done: make(chan struct{}), mu: mu, log: logs}
	p.cmd = exec.Command(sandrunBin, "scheduler", "--nats-url", url, "--schedules", file, "--name", name,
		"--election-ttl", "2s", "--log-format", "text")
	w := lockedBuffer{mu: mu, buf: logs}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p
}

// Two scheduler processes, an @every 1s schedule for 30 s, and the leader
// killed with SIGKILL every few seconds: every slot in the run has exactly
// one job — slots missed during a failover are fired by catch-up.
func TestFailoverKill9KeepsEverySlot(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	ctx := sandruntest.Ctx(t)
	file := filepath.Join(t.TempDir(), "schedules.yaml")
	if err := os.WriteFile(file, []byte(`schedules:
  - name: failover
    cron: "@every 1s"
    catchup_window: 1m
    job: {command: "true", queue: nobody}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs bytes.Buffer
	procs := map[string]*schedProc{}
	for _, n := range []string{"sched-a", "sched-b"} {
		procs[n] = startSched(t, s.ClientURL(), file, n, &logs, &mu)
	}
	defer func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("scheduler logs:\n%s", logs.String())
			mu.Unlock()
		}
	}()

	// fired is the count of dispatch messages of the schedule's queue.
	fired := func() int {
		js, err := st.JS.Stream(ctx, jobs.StreamJobs)
		if err != nil {
			t.Fatal(err)
		}
		info, err := js.Info(ctx, jetstream.WithSubjectFilter(jobs.QueueFilter("nobody")))
		if err != nil {
			t.Fatal(err)
		}
		return int(info.State.Msgs)
	}
	// Six times: once a leader is elected (the election key) and has
	// fired five slots since the last kill, kill it with SIGKILL.
	const kills = 6
	for range kills {
		from := fired()
		var leader string
		sandruntest.Eventually(t, 60*time.Second, func() (bool, string) {
			e, err := st.Elections.Get(ctx, "scheduler")
			if err != nil {
				return false, fmt.Sprintf("no leader: %v", err) // between leaders
			}
			leader = string(e.Value())
			n := fired() - from
			return n >= 5, fmt.Sprintf("leader %q, %d slots fired since the last kill", leader, n)
		})
		p := procs[leader]
		if p == nil {
			t.Fatalf("unknown leader %q", leader)
		}
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		procs[leader] = startSched(t, s.ClientURL(), file, leader, &logs, &mu)
	}
	// Let the last leader settle and fire a few more slots, then stop.
	from := fired()
	sandruntest.Eventually(t, 60*time.Second, func() (bool, string) {
		n := fired() - from
		return n >= 4, fmt.Sprintf("%d slots fired since the last kill", n)
	})
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
	}
	var slots []int64
	for _, s := range sandruntest.Queued(t, st) {
		rest, ok := strings.CutPrefix(s.ID, "cron-failover-")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			t.Fatalf("job id %s", s.ID)
		}
		slots = append(slots, v)
	}
	slices.Sort(slots)
	if len(slots) < 30 {
		t.Fatalf("%d slots fired, want at least 30 (5 before each of %d kills, and 4 after)", len(slots), kills)
	}
	for i := 1; i < len(slots); i++ {
		if slots[i] != slots[i-1]+1 {
			t.Errorf("slots %d..%d missing (no job)", slots[i-1]+1, slots[i]-1)
		}
	}
	// One dispatch per slot: no slot was published twice.
	js, err := st.JS.Stream(ctx, jobs.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	info, err := js.Info(ctx, jetstream.WithSubjectFilter(jobs.QueueFilter("nobody")))
	if err != nil {
		t.Fatal(err)
	}
	if int(info.State.Msgs) != len(slots) {
		t.Errorf("%d dispatch messages for %d slots", info.State.Msgs, len(slots))
	}
	t.Logf("%d slots, %d leader kills, all slots present once", len(slots), kills)
}
