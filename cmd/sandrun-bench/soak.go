package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
)

// soakConfig sizes the soak benchmark.
type soakConfig struct {
	Config                    string // the worker's config file, if any
	Jobs, Every, Batch, Slots int
	Retention                 time.Duration // of succeeded jobs
	Idle                      time.Duration // how long idle CPU is measured
	Settle                    time.Duration // how long a sample waits before it measures
	// NoWait skips the wait for the retention to pass.
	NoWait bool
	// Retained, if set, is how many finished records are then written
	// straight into the bucket (copies of a real one, kept a day), to
	// sample the idle cost of that many retained jobs without running
	// them.
	Retained int
}

// benchSoak runs cfg.Jobs `true` jobs through an embedded server (this
// binary with -serve) and a `sandrun worker` process, in batches, and
// every cfg.Every jobs stops submitting and samples the server's and the
// worker's RSS, the data directory's size, what the streams hold, and the
// CPU both processes use while nothing runs. After the last job it waits
// for the succeeded jobs' retention to pass and samples again.
func benchSoak(cfg soakConfig) error {
	dir, err := os.MkdirTemp("", "sandrun-soak")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	data := filepath.Join(dir, "js")
	bin, srv, url, err := cliAndServer(dir)
	if err != nil {
		return err
	}
	defer stopChild(srv)
	worker := exec.Command(bin, "worker", "--nats-url", url, "--name", "soak-worker", "--slots", fmt.Sprint(cfg.Slots),
		"--log-format", "text", "--retention", "succeeded="+cfg.Retention.String())
	if cfg.Config != "" {
		worker.Args = append(worker.Args, "--config", cfg.Config)
	}
	if addr := os.Getenv("SANDRUN_BENCH_WORKER_PPROF"); addr != "" {
		worker.Args = append(worker.Args, "--metrics-addr", addr, "--profiles")
	}
	worker.Stdout, worker.Stderr = io.Discard, io.Discard
	if err := worker.Start(); err != nil {
		return err
	}
	defer stopChild(worker)
	if err := waitLayout(url); err != nil {
		return err
	}
	ctx := context.Background()
	cl, err := client.Connect(ctx, client.Options{URL: url})
	if err != nil {
		return err
	}
	defer cl.Close()

	fmt.Printf("soak: %d `true` jobs in batches of %d, one worker of %d slots, succeeded retention %s, idle CPU over %s\n\n",
		cfg.Jobs, cfg.Batch, cfg.Slots, cfg.Retention, cfg.Idle)
	fmt.Println("| jobs done | elapsed | jobs/s since last | jobstate msgs / subjects | OUTPUTS msgs | EVENTS msgs | disk MiB | server RSS MiB | worker RSS MiB | idle CPU server / worker, % of a core |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	began := time.Now()
	lastAt, lastDone := began, 0
	sample := func(done int, label string) error {
		rate := float64(done-lastDone) / time.Since(lastAt).Seconds()
		time.Sleep(cfg.Settle) // the last writes' watchers and the server's flushes settle
		cpu := idleCPU(cfg.Idle, srv.Process.Pid, worker.Process.Pid)
		st := cl.Store()
		msgs := func(name string) (uint64, uint64) {
			s, err := st.JS.Stream(ctx, name)
			if err != nil {
				return 0, 0
			}
			info, err := s.Info(ctx)
			if err != nil {
				return 0, 0
			}
			return info.State.Msgs, uint64(info.State.NumSubjects)
		}
		kvMsgs, kvSubjects := msgs("KV_" + jobs.BucketState)
		outMsgs, _ := msgs(jobs.StreamOutputs)
		evMsgs, _ := msgs(jobs.StreamEvents)
		fmt.Printf("| %s | %s | %.0f | %d / %d | %d | %d | %.0f | %.0f | %.0f | %.2f / %.2f |\n", label, time.Since(began).Round(time.Second), rate,
			kvMsgs, kvSubjects, outMsgs, evMsgs, float64(dirSize(data))/(1<<20), rssMiB(srv.Process.Pid), rssMiB(worker.Process.Pid), cpu[0], cpu[1])
		lastAt, lastDone = time.Now(), done
		return nil
	}
	if err := sample(0, "0"); err != nil {
		return err
	}
	items := make([]client.Spec, cfg.Batch)
	for i := range items {
		items[i] = client.Spec{Command: "true", MaxAttempts: 1}
	}
	done := 0
	for b := 0; done < cfg.Jobs; b++ {
		n := min(cfg.Batch, cfg.Jobs-done)
		id := fmt.Sprintf("soak-%04d", b)
		if _, err := cl.SubmitBatch(ctx, client.BatchOptions{ID: id, InFlight: 4096}, items[:n]); err != nil {
			return err
		}
		p, err := cl.WaitBatch(ctx, id, client.WaitOptions{Interval: 2 * time.Second})
		if err != nil {
			return err
		}
		if !p.Succeeded() {
			return fmt.Errorf("batch %s: %v", id, p.Counts)
		}
		done += n
		if done%cfg.Every == 0 || done == cfg.Jobs {
			if err := sample(done, fmt.Sprint(done)); err != nil {
				return err
			}
		}
	}
	// The succeeded jobs' retention passes (counted from the last
	// commit), and then their records' expiry markers go.
	if !cfg.NoWait {
		wait := cfg.Retention + jobs.ExpiryMarkerTTL + time.Minute
		fmt.Fprintf(os.Stderr, "soak: waiting %s for the retention to pass\n", wait)
		time.Sleep(wait)
		if err := sample(done, fmt.Sprintf("%d, retention and expiry markers passed", done)); err != nil {
			return err
		}
	}
	if cfg.Retained == 0 {
		return nil
	}
	if err := seedRecords(ctx, cl, cfg.Retained); err != nil {
		return err
	}
	return sample(done, fmt.Sprintf("%d more finished records written, kept 24h", cfg.Retained))
}

// seedRecords writes n finished job records, each a copy of a real
// committed `true` job's record under its own ID, with a day's TTL, as
// the terminal write of a worker would.
func seedRecords(ctx context.Context, cl *client.Client, n int) error {
	st := cl.Store()
	spec := jobs.Spec{ID: "seed-template", Command: "true", MaxAttempts: 1}.WithDefaults()
	now := time.Now().UTC()
	r := jobs.Result{JobID: spec.ID, Queue: spec.Queue, Backend: spec.Backend, State: jobs.StateSucceeded, Attempt: 1,
		Worker: "soak-worker", StartedAt: now, FinishedAt: now, WallSeconds: 0.003}
	began := time.Now()
	var futures []jetstream.PubAckFuture
	for i := range n {
		run := jobs.Run{Spec: spec, State: jobs.StateSucceeded, Attempt: 1, Worker: "soak-worker", UpdatedAt: now, Result: &r}
		run.Spec.ID = fmt.Sprintf("seed-%07d", i)
		run.Result = &jobs.Result{}
		*run.Result = r
		run.Result.JobID = run.Spec.ID
		data, err := json.Marshal(run)
		if err != nil {
			return err
		}
		m := nats.NewMsg("$KV." + jobs.BucketState + "." + jobs.RunKey(run.Spec.ID))
		m.Data = data
		f, err := st.JS.PublishMsgAsync(m, jetstream.WithMsgTTL(24*time.Hour))
		if err != nil {
			return err
		}
		futures = append(futures, f)
		if len(futures) == 2048 { // under the connection's 4,000 unacknowledged
			for _, f := range futures {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			futures = futures[:0]
		}
	}
	select {
	case <-st.JS.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return fmt.Errorf("seeding: acks still pending after a minute")
	}
	fmt.Fprintf(os.Stderr, "soak: wrote %d records in %s\n", n, time.Since(began).Round(time.Millisecond))
	return nil
}

// idleCPU is the CPU time the processes use over d, in percent of one
// core.
func idleCPU(d time.Duration, pids ...int) []float64 {
	before := make([]int64, len(pids))
	for i, pid := range pids {
		before[i] = cpuTicks(pid)
	}
	time.Sleep(d)
	out := make([]float64, len(pids))
	for i, pid := range pids {
		out[i] = float64(cpuTicks(pid)-before[i]) / 100 / d.Seconds() * 100 // 100 ticks a second (USER_HZ)
	}
	return out
}

// cpuTicks is the user and system time of pid, in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var u, k int64
	_, _ = fmt.Sscan(fields[11], &u) // utime, field 14 of stat
	_, _ = fmt.Sscan(fields[12], &k) // stime, field 15
	return u + k
}

// rssMiB is a running process's resident set size.
func rssMiB(pid int) float64 {
	kb, _ := procStatusKB(pid, "VmRSS")
	return float64(kb) / 1024
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
