package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// startWorkers runs n worker processes (the CLI built without the race
// detector) against url until the test ends.
func startWorkers(t *testing.T, url string, n, slots int) {
	t.Helper()
	for i := range n {
		var log bytes.Buffer
		cmd := exec.Command(workerBin, "worker", "--nats-url", url, "--name", fmt.Sprintf("%s-w%d", t.Name(), i),
			"--slots", fmt.Sprint(slots), "--lease-ttl", "30s", "--log-format", "text")
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("worker %d log:\n%s", i, log.String())
			}
		})
	}
}

// TestBatchTenThousand submits 10,000 items (every 7th fails), waits for
// them, and checks the results: one row per item with the right status,
// each item run exactly once; then retries only the failed ones.
func TestBatchTenThousand(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	url := s.ClientURL()
	startWorkers(t, url, 2, 8)

	const n = 10_000
	file := filepath.Join(t.TempDir(), "items.jsonl")
	var b strings.Builder
	for i := range n {
		cmd := "true"
		if i%7 == 0 {
			cmd = "false"
		}
		fmt.Fprintf(&b, `{"command": %q, "max_attempts": 1}`+"\n", cmd)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sandrun(t, "batch", "submit", "--nats-url", url, file)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	// The same file again is the same batch: nothing new.
	code, out2, errOut := sandrun(t, "batch", "submit", "--nats-url", url, file)
	if code != 0 || strings.TrimSpace(out2) != id || !strings.Contains(errOut, "0 new, 10000 already submitted") {
		t.Fatalf("re-submit: %d %q %q", code, out2, errOut)
	}
	code, waitOut, _ := sandrun(t, "batch", "wait", "--nats-url", url, "--interval", "1s", id)
	if code != 1 { // some items fail
		t.Fatalf("wait exit %d, want 1; output %q", code, waitOut)
	}
	lines := strings.Split(strings.TrimSpace(waitOut), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "10000/10000 done (succeeded 8571, failed 1429)") {
		t.Fatalf("last progress line %q", last)
	}
	rows := results(t, url, id)
	if len(rows) != n {
		t.Fatalf("%d result rows, want %d", len(rows), n)
	}
	for i, r := range rows {
		want := "succeeded"
		if i%7 == 0 {
			want = "failed"
		}
		if r.Index != i || r.Status != want || r.Attempts != 1 {
			t.Fatalf("row %d: %+v, want index %d, %s, 1 attempt", i, r, i, want)
		}
	}
	code, out, _ = sandrun(t, "batch", "retry", "--nats-url", url, id, "--failed")
	if code != 0 || strings.TrimSpace(out) != "1429 item(s) run again" {
		t.Fatalf("retry: %d %q", code, out)
	}
	code, _, _ = sandrun(t, "batch", "wait", "--nats-url", url, "--interval", "1s", id)
	if code != 1 {
		t.Fatalf("wait after retry: exit %d, want 1 (the retried items fail again)", code)
	}
	for i, r := range results(t, url, id) {
		retried := i%7 == 0
		if (retried && (r.Status != "failed" || r.Attempts != 1)) || (!retried && r.Attempts != 1) {
			t.Fatalf("row %d after retry: %+v", i, r)
		}
	}
	// Every item's record: the succeeded ones ran once; retried ones twice
	// (the rerun resets the attempt count, so count runs through events).
	v, err := client.New(st).Batch(context.Background(), id)
	if err != nil || len(v.Items) != n {
		t.Fatalf("batch view: %d items, %v", len(v.Items), err)
	}
}

// TestBatchResubmitAfterCrash: a submit cut short half-way, then the same
// submit again: every item exists once and runs once.
func TestBatchResubmitAfterCrash(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	startWorkers(t, s.ClientURL(), 1, 8)
	c := client.New(st)
	const n = 500
	items := make([]jobs.Spec, n)
	for i := range items {
		items[i] = jobs.Spec{Command: "echo $SANDRUN_X", Env: map[string]string{"SANDRUN_X": fmt.Sprint(i)}}
	}
	// The submit is cut short once about half of the items are queued.
	ctx, cancel := context.WithCancel(context.Background())
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		sandruntest.PollCtx(ctx, time.Minute, func() (bool, string) {
			s, err := st.JS.Stream(ctx, jobs.StreamJobs)
			return err == nil && s.CachedInfo().State.LastSeq >= n/2, ""
		})
		cancel()
	}()
	first, err := c.SubmitBatch(ctx, client.BatchOptions{ID: "crashy", InFlight: 64}, items)
	cancel()
	<-cut
	t.Logf("cut-short submit: %+v, %v", first, err)
	second, err := c.SubmitBatch(context.Background(), client.BatchOptions{ID: "crashy", InFlight: 64}, items)
	if err != nil {
		t.Fatal(err)
	}
	if second.Submitted+second.Existing != n {
		t.Fatalf("second submit: %+v", second)
	}
	var v client.BatchView
	sandruntest.Eventually(t, 2*time.Minute, func() (bool, string) {
		var err error
		v, err = c.Batch(context.Background(), "crashy")
		if errors.Is(err, jobs.ErrNotFound) {
			return false, "no item claimed yet: no record"
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Items) > n {
			t.Fatalf("%d items recorded, want %d", len(v.Items), n)
		}
		return v.Done() == n && len(v.Items) == n, fmt.Sprintf("%d of %d done", v.Done(), n)
	})
	for _, it := range v.Items {
		if it.Result == nil || it.Result.State != jobs.StateSucceeded || it.Result.Attempt != 1 ||
			strings.TrimSpace(it.Result.Stdout.Head) != fmt.Sprint(it.Index) {
			t.Fatalf("item %d: %+v", it.Index, it.Result)
		}
	}
}

func results(t *testing.T, url, id string) []resultRow {
	t.Helper()
	code, out, errOut := sandrun(t, "batch", "results", "--nats-url", url, id)
	if code != 0 {
		t.Fatalf("results: %d %s", code, errOut)
	}
	var rows []resultRow
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var r resultRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}
