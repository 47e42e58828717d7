package main

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
)

// benchBatch submits one batch of n `true` items to `sandrun dev`
// in-process (embedded server, worker with slots, scheduler) and reports
// the submit rate, the end-to-end completion rate, the Go heap the submit
// allocated, and the process's peak RSS (server, worker and client).
func benchBatch(n, slots int) error {
	s, err := startStack(slots)
	if err != nil {
		return err
	}
	defer s.stop()
	items := make([]jobs.Spec, n)
	for i := range items {
		items[i] = jobs.Spec{Command: "true", MaxAttempts: 1}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	began := time.Now()
	res, err := s.cl.SubmitBatch(context.Background(), client.BatchOptions{ID: "bench", InFlight: 4096}, items)
	if err != nil {
		return err
	}
	submitted := time.Since(began)
	runtime.ReadMemStats(&after)
	fmt.Printf("batch: %d items submitted in %s: %.0f items/s (%d new); the process (server, worker and client together) allocated %.1f MiB meanwhile, heap in use after %.1f MiB\n",
		res.Batch.Total, submitted.Round(time.Millisecond), float64(n)/submitted.Seconds(), res.Submitted,
		float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), float64(after.HeapInuse)/(1<<20))
	for {
		v, err := s.cl.Batch(context.Background(), "bench")
		if err != nil {
			return err
		}
		if done := v.Done(); done == n {
			total := time.Since(began)
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			fmt.Printf("batch: all %d items ended %s after the submit began: %.0f items/s end to end with %d slots; peak RSS %.0f MiB (server, worker, client)\n",
				n, total.Round(time.Millisecond), float64(n)/total.Seconds(), slots, float64(ru.Maxrss)/1024)
			return nil
		}
		time.Sleep(2 * time.Second)
	}
}
