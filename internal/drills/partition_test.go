package drills

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/ssh/sshtest"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestWorkerCutOff: a worker reaches the cluster only through a TCP proxy,
// which is blocked while the worker runs jobs. The cut-off worker kills
// its jobs before their leases expire (self-fencing), the other worker
// runs them again, and each job commits exactly one result. A job writes
// its mark only when it runs to the end, so a copy that outlived its
// lease would show as a second mark.
func TestWorkerCutOff(t *testing.T) {
	c, cl := clusterWithWorkers(t, 1) // worker 0: direct to every node
	proxy := sshtest.NewProxy(t, fmt.Sprintf("127.0.0.1:%d", c.ports[0]))
	start(t, "worker-cut", "worker", "--nats-url", "nats://"+proxy.Addr, "--name", "drill-cut",
		"--slots", "8", "--lease-ttl", "10s", "--kill-grace", "2s", "--log-format", "text")
	st := cl.Store()
	writes := watchResults(t, st)
	ctx := t.Context()

	marks := filepath.Join(t.TempDir(), "marks")
	pids := filepath.Join(t.TempDir(), "pids")
	const n = 24
	items := make([]client.Spec, n)
	for i := range items {
		// Each copy notes its shell's pid first: once every one noted
		// has exited, no late copy is left to write a mark.
		items[i] = client.Spec{Command: `echo $$ >> ` + pids + `; sleep 14; echo "$J" >> ` + marks, Env: map[string]string{"J": fmt.Sprint(i)}, MaxAttempts: 3}
	}
	if _, err := cl.SubmitBatch(ctx, client.BatchOptions{ID: "cut"}, items); err != nil {
		t.Fatal(err)
	}
	// Wait until the proxied worker runs some of them.
	var onCut []string
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		v, err := cl.Batch(ctx, "cut")
		if errors.Is(err, jobs.ErrNotFound) {
			return false, "no item claimed yet: the first claim writes the batch's record"
		}
		if err != nil {
			t.Fatal(err)
		}
		onCut = onCut[:0]
		for _, it := range v.Items {
			if it.Run.State == jobs.StateRunning && it.Run.Worker == "drill-cut" {
				onCut = append(onCut, it.Run.Spec.ID)
			}
		}
		return len(onCut) >= 3, fmt.Sprintf("the proxied worker runs %d jobs, want 3", len(onCut))
	})
	cutAt := time.Now()
	proxy.Block()
	t.Logf("cut the worker off with %d jobs running on it", len(onCut))

	writes.waitKeys(t, n, 3*time.Minute, "after the cut")
	_, last := writes.firstAfter(cutAt)
	allDone := last.Sub(cutAt)
	// Every copy of a job that started, on either worker, has exited:
	// a late copy of a cut-off job would have written its mark.
	sandruntest.Eventually(t, time.Minute, func() (bool, string) {
		data, err := os.ReadFile(pids)
		if err != nil {
			return false, err.Error()
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pids file: %q", data)
			}
			if !backendtest.HostProcessGone(t, pid) {
				return false, fmt.Sprintf("the copy with pid %d still runs", pid)
			}
		}
		return true, ""
	})
	keys, total := writes.total()
	dups := writes.duplicates(t)
	data, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	slices.Sort(lines)
	twice := len(lines) - len(slices.Compact(slices.Clone(lines)))
	lost := n - writes.states()[jobs.StateSucceeded]
	t.Logf("DRILL worker-cut-off: jobs %d, %d running on the cut worker, lost %d, duplicate commits %d (result keys %d, writes %d), marks %d (%d twice), all ended %s after the cut",
		n, len(onCut), lost, dups, keys, total, len(lines), twice, allDone.Round(time.Millisecond))
	if lost != 0 || dups != 0 || keys != n || len(lines) != n || twice != 0 {
		t.Fatalf("lost %d, duplicate commits %d, result keys %d, marks %d (%d twice), want %d, 0, %d, %d, 0", lost, dups, keys, len(lines), twice, 0, n, n)
	}
	for _, id := range onCut {
		r, err := st.GetResult(ctx, id)
		if err != nil || r.Worker == "drill-cut" || r.Attempt < 2 {
			t.Fatalf("%s (running on the cut worker): result %+v, %v; want another worker's, attempt 2 or later", id, r, err)
		}
	}
}
