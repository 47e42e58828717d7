// Command sandrun-bench measures sandrun end to end on the embedded
// default, next to the raw process spawn rate of the same machine, and
// prints a Markdown report (docs/BENCHMARKS.md holds the recorded runs).
//
//	go run ./cmd/sandrun-bench -jobs 3000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/natsutil"
)

func main() {
	n := flag.Int("jobs", 3000, "jobs per throughput run")
	lat := flag.Int("latency-jobs", 300, "jobs for the latency run (one at a time)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	sched := flag.Bool("scheduler", false, "run the scheduler benchmarks instead")
	dock := flag.Bool("docker", false, "run the docker backend benchmark instead")
	batch := flag.Int("batch", 0, "run the batch benchmark with this many items instead")
	slots := flag.Int("slots", 16, "worker slots for -batch")
	workerAfter := flag.Bool("worker-after", false, "with -batch: start the worker once the submit is done")
	soak := flag.Int("soak", 0, "run the soak benchmark with this many jobs instead")
	soakEvery := flag.Int("soak-every", 100_000, "with -soak: sample every this many jobs")
	soakBatch := flag.Int("soak-batch", 10_000, "with -soak: jobs per batch")
	soakRetention := flag.Duration("soak-retention", 10*time.Minute, "with -soak: retention of succeeded jobs")
	soakIdle := flag.Duration("soak-idle", 20*time.Second, "with -soak: how long idle CPU is measured at each sample")
	soakSettle := flag.Duration("soak-settle", 5*time.Second, "with -soak: how long each sample waits before it measures")
	soakNoWait := flag.Bool("soak-no-wait", false, "with -soak: do not wait for the retention to pass")
	soakWorkerConfig := flag.String("soak-config", "", "with -soak: the worker's YAML config file (backends, policy)")
	soakRetained := flag.Int("soak-retained", 0, "with -soak: then write this many finished records (kept a day) and sample once more")
	serveDir := flag.String("serve", "", "run only an embedded server storing in this directory (the -batch benchmark's server process)")
	flag.Parse()
	if *serveDir != "" {
		if err := serve(*serveDir); err != nil {
			fmt.Fprintln(os.Stderr, "sandrun-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *soak > 0 {
		if err := benchSoak(soakConfig{Jobs: *soak, Every: *soakEvery, Batch: *soakBatch, Slots: *slots,
			Retention: *soakRetention, Idle: *soakIdle, Retained: *soakRetained, NoWait: *soakNoWait, Settle: *soakSettle, Config: *soakWorkerConfig}); err != nil {
			fmt.Fprintln(os.Stderr, "sandrun-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandrun-bench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var err error
	switch {
	case *batch > 0:
		err = benchBatch(*batch, *slots, *workerAfter)
	case *dock:
		err = benchDocker(30)
	case *sched:
		err = benchScheduler(10_000, 1_000, 20*time.Second)
	default:
		err = run(*n, *lat)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandrun-bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, latN int) error {
	fmt.Printf("## Run of %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("Machine: %d CPUs, %s/%s, %s. Embedded nats-server, file storage, default fsync.\n\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Println("| slots | raw `sh -c true` spawns/s | local backend `Run(true)`/s | sandrun `true` jobs/s | ratio to raw |")
	fmt.Println("|---|---|---|---|---|")
	for _, slots := range []int{2, 8} {
		raw := spawnRate(slots, n)
		be, err := backendRate(slots, n)
		if err != nil {
			return err
		}
		thr, err := throughput(slots, n)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.0f | %.0f | %.0f | %.2f |\n", slots, raw, be, thr, thr/raw)
	}
	p50, p99, err := latency(latN)
	if err != nil {
		return err
	}
	fmt.Printf("\nSubmit→start latency with idle workers (%d jobs, one at a time, 8 slots): p50 %.2f ms, p99 %.2f ms\n",
		latN, ms(p50), ms(p99))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// spawnRate runs `sh -c true` n times with par at once.
func spawnRate(par, n int) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range par {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				_ = exec.Command("/bin/sh", "-c", "true").Run()
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// backendRate runs `true` n times through the local backend, par at once:
// the spawn path of a job without any queueing.
func backendRate(par, n int) (float64, error) {
	lb, err := local.New(local.Config{})
	if err != nil {
		return 0, err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range par {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				_, _ = lb.Run(context.Background(), backends.Spec{Command: "true"}, backends.Output{Stdout: io.Discard, Stderr: io.Discard})
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), nil
}

// stack is `sandrun dev` in-process: embedded server, worker, scheduler.
type stack struct {
	cl   *client.Client
	stop func()
}

func startStack(slots int) (*stack, error) {
	dir, err := os.MkdirTemp("", "sandrun-bench")
	if err != nil {
		return nil, err
	}
	srv, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: dir, Port: -1})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *jobs.Store, 1)
	done := make(chan error, 1)
	cfg := app.Config{}
	cfg.NATS.URL = srv.ClientURL()
	cfg.Worker.Slots = slots
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- app.Run(ctx, cfg, app.Roles{Worker: true, Scheduler: true}, log, func(st *jobs.Store, _ *metrics.Metrics) { ready <- st })
	}()
	var st *jobs.Store
	select {
	case st = <-ready:
	case err := <-done:
		cancel()
		return nil, err
	}
	return &stack{cl: client.New(st), stop: func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "sandrun-bench: stack:", err)
		}
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}}, nil
}

// throughput submits n `true` jobs from 16 submitters and measures until
// the last result is committed.
func throughput(slots, n int) (float64, error) {
	s, err := startStack(slots)
	if err != nil {
		return 0, err
	}
	defer s.stop()
	return plainThroughput(context.Background(), s.cl, n)
}

// latency submits jobs one at a time to idle workers and measures from
// submit to the start of the command on the backend.
func latency(n int) (p50, p99 time.Duration, err error) {
	s, err := startStack(8)
	if err != nil {
		return 0, 0, err
	}
	defer s.stop()
	ctx := context.Background()
	var ds []time.Duration
	for i := range n + 10 {
		spec, err := s.cl.Submit(ctx, jobs.Spec{Command: "true"})
		if err != nil {
			return 0, 0, err
		}
		r, err := s.cl.Wait(ctx, spec.ID)
		if err != nil {
			return 0, 0, err
		}
		if i >= 10 { // warm-up
			ds = append(ds, r.StartedAt.Sub(spec.SubmittedAt))
		}
		time.Sleep(5 * time.Millisecond) // workers idle again
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)*99/100], nil
}
