package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// target is one system under test, up and ready: a client to enqueue
// with, and a worker running cfg.Concurrency jobs at once.
//
//  1. track directs what the worker side observes to a phase's tracker;
//     it is called before each phase, never during one.
//  2. enqueue is called from many goroutines at once. It takes the
//     enqueue time itself, just before its enqueue call, and gets it to
//     the tracker (in the job's payload, or by reporting it).
//  3. close stops the worker, the client and every process the target
//     started, and removes its files. It is called once, also after a
//     failure.
type target interface {
	track(tr *tracker)
	enqueue(ctx context.Context) error
	close() error
}

// stamp is the payload of an asynq or River job: its enqueue time.
type stamp struct {
	EnqueuedAt int64 `json:"enqueued_at"` // Unix nanoseconds
}

func newStamp(at time.Time) stamp { return stamp{EnqueuedAt: at.UnixNano()} }

func (s stamp) time() time.Time { return time.Unix(0, s.EnqueuedAt) }

func (s stamp) encode() []byte {
	b, _ := json.Marshal(s) // cannot fail for this type
	return b
}

func decodeStamp(b []byte) (stamp, error) {
	var s stamp
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("payload: %w", err)
	}
	return s, nil
}

// runJob is the asynq and River handlers' work: run `sh -c true` as a
// child process and report it to tr. The start time is taken just before
// the exec, as sandrun's local backend takes its own.
func runJob(ctx context.Context, tr *tracker, id string, enqueued time.Time) error {
	tr.started(id, enqueued, time.Now())
	err := exec.CommandContext(ctx, "sh", "-c", "true").Run()
	tr.finished(id, err, time.Now())
	return err
}

// warmUpJobs are run through a target before it is measured: they bring
// every connection and code path up (and wait for a worker that is still
// subscribing).
const warmUpJobs = 20

// warmUp runs warmUpJobs one after another.
func warmUp(ctx context.Context, t target, within time.Duration) error {
	tr := newTracker(warmUpJobs)
	t.track(tr)
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for range warmUpJobs {
		if err := t.enqueue(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	return awaitPhase(ctx, tr, "warm-up")
}

// throughput enqueues n jobs from enqueuers goroutines at once and waits
// for all of them to finish.
func throughput(ctx context.Context, t target, n, enqueuers int, within time.Duration) (phaseStats, error) {
	tr := newTracker(n)
	t.track(tr)
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		enqErr  error
	)
	start := time.Now()
	for range enqueuers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := t.enqueue(ctx); err != nil {
					errOnce.Do(func() { enqErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	enqDone := time.Now()
	if enqErr != nil {
		return phaseStats{}, fmt.Errorf("enqueue: %w", enqErr)
	}
	if err := awaitPhase(ctx, tr, "throughput"); err != nil {
		return phaseStats{}, err
	}
	return tr.stats(start, enqDone)
}

// paced enqueues n jobs one every interval (from one goroutine, so an
// enqueue slower than interval stretches the pace) and waits for them.
func paced(ctx context.Context, t target, n int, interval, within time.Duration) (phaseStats, error) {
	tr := newTracker(n)
	t.track(tr)
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	start := time.Now()
	for i := range n {
		if i > 0 {
			select {
			case <-ctx.Done():
				return phaseStats{}, fmt.Errorf("latency: %w", ctx.Err())
			case <-tick.C:
			}
		}
		if err := t.enqueue(ctx); err != nil {
			return phaseStats{}, fmt.Errorf("enqueue: %w", err)
		}
	}
	enqDone := time.Now()
	if err := awaitPhase(ctx, tr, "latency"); err != nil {
		return phaseStats{}, err
	}
	return tr.stats(start, enqDone)
}

// awaitPhase waits for every job of tr to finish.
func awaitPhase(ctx context.Context, tr *tracker, phase string) error {
	select {
	case <-tr.done:
		return nil
	case <-ctx.Done():
		got := tr.count()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s: only %d of %d jobs finished in time", phase, got, tr.want)
		}
		return fmt.Errorf("%s: %w", phase, ctx.Err())
	}
}

// rawSpawnRate runs `sh -c true` n times, par at once, with os/exec and
// no queue: the machine's ceiling for this workload.
func rawSpawnRate(ctx context.Context, n, par int) (phaseStats, error) {
	var (
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	start := time.Now()
	for range par {
		wg.Go(func() {
			for ctx.Err() == nil && next.Add(1) <= int64(n) {
				if err := exec.CommandContext(ctx, "sh", "-c", "true").Run(); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s := phaseStats{Jobs: n, Elapsed: time.Since(start)}
	if err := ctx.Err(); err != nil {
		return s, err
	}
	if f := failed.Load(); f > 0 {
		return s, fmt.Errorf("%d of %d spawns failed", f, n)
	}
	return s, nil
}
