package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// TestBatchMaxParallel: with 4 worker processes of 4 slots each, a batch
// submitted with --max-parallel 3 never has more than 3 items running,
// judged from the items' own start and end times.
func TestBatchMaxParallel(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	url := s.ClientURL()
	startWorkers(t, url, 4, 4)

	const n = 30
	var b strings.Builder
	for range n {
		b.WriteString(`{"command": "sleep 0.3", "max_attempts": 1}` + "\n")
	}
	file := writeTemp(t, "items.jsonl", b.String())
	code, out, errOut := sandrun(t, "batch", "submit", "--nats-url", url, "--id", "throttled", "--max-parallel", "3", file)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errOut)
	}
	if id := strings.TrimSpace(out); id != "throttled" {
		t.Fatalf("submit printed %q", id)
	}
	if code, _, errOut := sandrun(t, "batch", "wait", "--nats-url", url, "throttled"); code != 0 {
		t.Fatalf("wait: %d %s", code, errOut)
	}
	v, err := client.New(st).Batch(t.Context(), "throttled")
	if err != nil {
		t.Fatal(err)
	}
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	workers := map[string]bool{}
	for _, it := range v.Items {
		r := it.Result
		if r == nil || r.State != jobs.StateSucceeded {
			t.Fatalf("item %d: %+v", it.Index, r)
		}
		end := r.StartedAt.Add(time.Duration(r.WallSeconds * float64(time.Second)))
		edges = append(edges, edge{r.StartedAt, +1}, edge{end, -1})
		workers[r.Worker] = true
	}
	// Ends sort before starts at the same instant: touching is not overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	running, peak := 0, 0
	for _, e := range edges {
		running += e.delta
		peak = max(peak, running)
	}
	t.Logf("%d items on %d workers, peak %d running at once", len(v.Items), len(workers), peak)
	if peak > 3 {
		t.Fatalf("%d items ran at once, max-parallel is 3", peak)
	}
	if peak < 2 || len(workers) < 2 {
		t.Fatalf("peak %d on %d workers: the batch did not run in parallel across workers", peak, len(workers))
	}
}

// TestBatchWaitProgress checks `batch wait` on a terminal (a bar redrawn
// in place, through a pty) and on a pipe (plain lines), and that a wait
// started again picks up where the batch is.
func TestBatchWaitProgress(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	url := s.ClientURL()
	st := sandruntest.Store(t, url)
	sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	submit := func(id string) {
		t.Helper()
		var b strings.Builder
		for i := range 12 {
			cmd := "sleep 0.2"
			if i%6 == 5 {
				cmd = "sleep 0.2; exit 3"
			}
			b.WriteString(`{"command": "` + cmd + `", "max_attempts": 1}` + "\n")
		}
		if code, _, errOut := sandrun(t, "batch", "submit", "--nats-url", url, "--id", id, "--max-parallel", "2", writeTemp(t, id+".jsonl", b.String())); code != 0 {
			t.Fatalf("submit %s: %d %s", id, code, errOut)
		}
	}

	t.Run("terminal", func(t *testing.T) {
		submit("tty")
		master, slave := openPTY(t)
		var screen bytes.Buffer
		copied := make(chan struct{})
		go func() { _, _ = io.Copy(&screen, master); close(copied) }()
		var errb bytes.Buffer
		code := cli{stdout: slave, stderr: &errb, stdin: strings.NewReader("")}.run([]string{"batch", "wait", "--nats-url", url, "--interval", "100ms", "tty"})
		_ = slave.Close()
		select {
		case <-copied:
		case <-time.After(5 * time.Second):
			_ = master.Close()
			<-copied
		}
		out := screen.String()
		if code != 1 {
			t.Fatalf("wait exit %d, want 1 (2 items fail); stderr %q", code, errb.String())
		}
		frames := strings.Split(out, "\r\x1b[K")[1:]
		if len(frames) < 3 {
			t.Fatalf("%d frames, want the bar redrawn in place several times:\n%q", len(frames), out)
		}
		bar := regexp.MustCompile(`^\[([#x.]{30})\] batch tty: (\d+)/12 done`)
		last := -1
		for _, f := range frames {
			m := bar.FindStringSubmatch(f)
			if m == nil {
				t.Fatalf("frame %q is not a bar", f)
			}
			done, _ := strconv.Atoi(m[2])
			if done < last {
				t.Fatalf("done went back from %d to %d: %q", last, done, out)
			}
			last = done
		}
		final := frames[len(frames)-1]
		if !strings.Contains(final, "12/12 done (succeeded 10, failed 2)") || !strings.Contains(final, "xxxxx") ||
			!strings.HasSuffix(final, "\r\n") {
			t.Fatalf("final frame %q", final)
		}
		if !slices.ContainsFunc(frames, func(f string) bool { return !strings.Contains(f, "12/12") }) {
			t.Fatalf("no frame before the end: %q", out)
		}
	})

	t.Run("pipe", func(t *testing.T) {
		submit("plain")
		code, out, _ := sandrun(t, "batch", "wait", "--nats-url", url, "--interval", "100ms", "plain")
		if code != 1 {
			t.Fatalf("wait exit %d, want 1", code)
		}
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\r") {
			t.Fatalf("terminal control sequences on a pipe: %q", out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		line := regexp.MustCompile(`^batch plain: (\d+)/12 done.*, \d+ running, [0-9.]+/s`)
		for _, l := range lines {
			if !line.MatchString(l) {
				t.Fatalf("line %q", l)
			}
		}
		if len(lines) < 2 || !strings.Contains(lines[len(lines)-1], "12/12 done (succeeded 10, failed 2)") {
			t.Fatalf("lines: %q", lines)
		}
		// Started again on the ended batch: the first report is the end.
		code, out, _ = sandrun(t, "batch", "wait", "--nats-url", url, "plain")
		if code != 1 || strings.Count(out, "\n") > 2 || !strings.Contains(out, "12/12 done") {
			t.Fatalf("wait again: %d %q", code, out)
		}
	})
}

// writeTemp writes a file in the test's temporary directory.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
