package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	_ "net/http/pprof" //nolint:gosec // the benchmark server serves profiles only when SANDRUN_BENCH_PPROF asks
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// benchBatch measures one batch of n `true` items with the server, the
// worker and the client in separate processes, so that each one's memory
// is its own: an embedded server (this binary with -serve), a `sandrun
// worker` built from ./cmd/sandrun (run from the repository root), and
// the client here. It reports the submit rate, the end-to-end completion
// rate (submit start to last item ended, followed with WaitBatch) and
// each process's peak RSS.
//
// With workerAfter, the worker starts only once the submit is done, so
// the submit has the server to itself.
func benchBatch(n, slots int, workerAfter bool) error {
	dir, err := os.MkdirTemp("", "sandrun-bench-batch")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin, srv, url, err := cliAndServer(dir)
	if err != nil {
		return err
	}
	defer stopChild(srv)
	worker := exec.Command(bin, "worker", "--nats-url", url, "--name", "bench-worker", "--slots", fmt.Sprint(slots), "--log-format", "text")
	worker.Stdout, worker.Stderr = io.Discard, io.Discard
	startWorker := func() error {
		if err := worker.Start(); err != nil {
			return err
		}
		return nil
	}
	// The worker creates the layout as it starts; with workerAfter, a
	// first worker run only creates it.
	if err := startWorker(); err != nil {
		return err
	}
	if workerAfter {
		if err := waitLayout(url); err != nil {
			return err
		}
		stopChild(worker)
		worker = exec.Command(bin, "worker", "--nats-url", url, "--name", "bench-worker", "--slots", fmt.Sprint(slots), "--log-format", "text")
		worker.Stdout, worker.Stderr = io.Discard, io.Discard
	}
	defer func() {
		if worker.Process != nil {
			stopChild(worker)
		}
	}()

	ctx := context.Background()
	var cl *client.Client
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// The worker creates the layout as it starts.
		if cl, err = client.Connect(ctx, client.Options{URL: url}); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	items := make([]client.Spec, n)
	for i := range items {
		items[i] = client.Spec{Command: "true", MaxAttempts: 1}
	}
	runtime.GC()
	began := time.Now()
	res, err := cl.SubmitBatch(ctx, client.BatchOptions{ID: "bench", InFlight: 4096}, items)
	if err != nil {
		return err
	}
	submitted := time.Since(began)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("submit: %d items (%d new) in %s: %.0f items/s (worker consuming meanwhile: %t); client heap in use %.1f MiB\n",
		res.Batch.Total, res.Submitted, submitted.Round(time.Millisecond), float64(n)/submitted.Seconds(), !workerAfter, float64(ms.HeapInuse)/(1<<20))
	if workerAfter {
		if err := startWorker(); err != nil {
			return err
		}
	}
	last := time.Now()
	p, err := cl.WaitBatch(ctx, "bench", client.WaitOptions{Interval: 10 * time.Second, OnProgress: func(p client.BatchProgress) {
		if time.Since(last) >= 10*time.Second {
			last = time.Now()
			fmt.Printf("  %d/%d ended, %.0f/s\n", p.Done, p.Total, p.PerSecond)
		}
	}})
	if err != nil {
		return err
	}
	total := time.Since(began)
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("end to end: %d items ended (%d succeeded) %s after the submit began: %.0f items/s with one worker of %d slots\n",
		p.Done, p.Counts[client.StateSucceeded], total.Round(time.Millisecond), float64(n)/total.Seconds(), slots)
	fmt.Printf("peak RSS: worker %s, server %s, client %.0f MiB (client heap in use after the wait %.1f MiB)\n",
		peakRSS(worker.Process.Pid), peakRSS(srv.Process.Pid), float64(ru.Maxrss)/1024, float64(ms.HeapInuse)/(1<<20))
	// What `batch status` costs on this batch: the median of 7 calls.
	var took []time.Duration
	for range 7 {
		t0 := time.Now()
		if _, err := cl.BatchStatus(ctx, "bench"); err != nil {
			return err
		}
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	fmt.Printf("batch status of %d items: median %s (min %s, max %s)\n", n, took[3].Round(10*time.Microsecond), took[0].Round(10*time.Microsecond), took[6].Round(10*time.Microsecond))
	// The same worker's plain `true`-job throughput, in the same run.
	plain := min(n, 20_000)
	rate, err := plainThroughput(ctx, cl, plain)
	if err != nil {
		return err
	}
	fmt.Printf("plain: %d `true` jobs at %.0f jobs/s with the same worker; batch/plain = %.2f\n", plain, rate, float64(n)/total.Seconds()/rate)
	return nil
}

// plainThroughput submits n plain `true` jobs from 16 goroutines and
// returns how many ended per second, submit start to last result.
func plainThroughput(ctx context.Context, cl *client.Client, n int) (float64, error) {
	w, err := cl.Store().State.Watch(ctx, jobs.RunKey("*"), jetstream.UpdatesOnly())
	if err != nil {
		return 0, err
	}
	defer func() { _ = w.Stop() }()
	start := time.Now()
	var next atomic.Int64
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			for next.Add(1) <= int64(n) {
				if _, err := cl.Submit(ctx, jobs.Spec{Command: "true", MaxAttempts: 1}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	got := 0
	timeout := time.After(10 * time.Minute)
	for got < n {
		select {
		case e := <-w.Updates():
			if e != nil && e.Operation() == jetstream.KeyValuePut && bytes.Contains(e.Value(), []byte(`"result":`)) {
				got++
			}
		case err := <-errs:
			return 0, err
		case <-timeout:
			return 0, fmt.Errorf("only %d of %d results after 10 minutes", got, n)
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// serve runs an embedded server on a free port, prints its URL and runs
// until its standard input closes.
func serve(dir string) error {
	srv, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: dir, Port: -1})
	if err != nil {
		return err
	}
	if addr := os.Getenv("SANDRUN_BENCH_PPROF"); addr != "" {
		// net/http/pprof's handlers, for profiling the server while a
		// benchmark runs: go tool pprof http://ADDR/debug/pprof/profile
		go func() { _ = http.ListenAndServe(addr, nil) }() //nolint:gosec // a local benchmark's profiler
	}
	fmt.Println(srv.ClientURL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}

// startChild starts cmd and reads the URL it prints first.
func startChild(cmd *exec.Cmd) (*exec.Cmd, string, error) {
	if _, err := cmd.StdinPipe(); err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, "", fmt.Errorf("server: %w", err)
	}
	return cmd, strings.TrimSpace(line), nil
}

// stopChild interrupts a child and waits for it.
func stopChild(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// peakRSS reads a running process's peak resident set size (VmHWM).
func peakRSS(pid int) string {
	kb, ok := procStatusKB(pid, "VmHWM")
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%.0f MiB", float64(kb)/1024)
}

// procStatusKB reads a kB field of a running process's /proc status.
func procStatusKB(pid int, field string) (int, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for l := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			var kb int
			_, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb, err == nil
		}
	}
	return 0, false
}

// cliAndServer builds the CLI into dir and starts an embedded server
// (this binary with -serve) storing in dir/js. Run from the repository
// root.
func cliAndServer(dir string) (bin string, srv *exec.Cmd, url string, err error) {
	bin = filepath.Join(dir, "sandrun")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/sandrun").CombinedOutput(); err != nil {
		return "", nil, "", fmt.Errorf("build the CLI (run from the repository root): %w\n%s", err, out)
	}
	srv, url, err = startChild(exec.Command(os.Args[0], "-serve", filepath.Join(dir, "js"))) //nolint:gosec // this binary, re-run as the server
	return bin, srv, url, err
}

// waitLayout waits until sandrun's layout exists on the server at url.
func waitLayout(url string) error {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cl, err := client.Connect(context.Background(), client.Options{URL: url})
		if err == nil {
			cl.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}
