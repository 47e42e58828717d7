package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/scheduler"
)

// benchScheduler loads loadN schedules into a leading scheduler and
// reports load time and memory, then measures the fire lag of fireN
// `@every 1s` schedules over dur (fireN slots due on the same second,
// every second), and of loadN schedules spread over a minute (one slot
// a minute each, loadN/60 due on each second).
func benchScheduler(loadN, fireN int, dur time.Duration) error {
	fmt.Printf("\n### Scheduler\n\n")
	if err := schedLoad(loadN); err != nil {
		return err
	}
	if err := schedLag(fireN, dur); err != nil {
		return err
	}
	return schedSpread(loadN, time.Minute)
}

type schedStack struct {
	store *jobs.Store
	stop  func()
}

func startSchedStack() (*schedStack, error) {
	dir, err := os.MkdirTemp("", "sandrun-bench-sched")
	if err != nil {
		return nil, err
	}
	srv, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: dir, Port: -1})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	nc, js, err := natsutil.Connect(ctx, natsutil.ConnConfig{URL: srv.ClientURL(), Daemon: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	st, err := jobs.EnsureLayout(ctx, js, nc.ConnectedServerVersion(), jobs.LayoutConfig{})
	if err != nil {
		return nil, err
	}
	return &schedStack{store: st, stop: func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}}, nil
}

// putAll stores schedules from 16 goroutines.
func putAll(ctx context.Context, cat *scheduler.Catalog, list []scheduler.Schedule) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(list)); i = next.Add(1) - 1 {
				if err := cat.Put(ctx, list[i], false); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func runScheduler(ctx context.Context, st *jobs.Store, m *metrics.Metrics, onFire func(slot, at time.Time)) (func(), error) {
	sc, err := scheduler.New(scheduler.Config{ID: "bench", ElectionTTL: 5 * time.Second, OnFire: onFire}, st, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = sc.Run(ctx) }()
	return func() { cancel(); <-done }, nil
}

func schedLoad(n int) error {
	s, err := startSchedStack()
	if err != nil {
		return err
	}
	defer s.stop()
	ctx := context.Background()
	list := make([]scheduler.Schedule, n)
	for i := range list {
		list[i] = scheduler.Schedule{Name: fmt.Sprintf("load-%05d", i), Cron: fmt.Sprintf("%d %d * * *", i%60, (i/60)%24),
			TimeZone: "Europe/Madrid", Job: jobs.Spec{Command: "true", Queue: "bench-load"}}
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	start := time.Now()
	if err := putAll(ctx, scheduler.NewCatalog(s.store), list); err != nil {
		return err
	}
	stored := time.Since(start)
	m := metrics.New()
	start = time.Now()
	stop, err := runScheduler(ctx, s.store, m, nil)
	if err != nil {
		return err
	}
	defer stop()
	for testutil.ToFloat64(m.Schedules) < float64(n) {
		time.Sleep(10 * time.Millisecond)
	}
	// Every schedule has read its state once it is loaded; give the
	// goroutines a moment to park on their timers.
	time.Sleep(2 * time.Second)
	led := time.Since(start)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	fmt.Printf("%d schedules (5-field crons in Europe/Madrid): stored in %s (16 writers), led and armed in %s.\n",
		n, stored.Round(time.Millisecond), led.Round(time.Millisecond))
	fmt.Printf("Heap in use grew by %.1f MiB (%.1f KiB per schedule, including the embedded server's share); goroutines +%d.\n",
		float64(after.HeapInuse-before.HeapInuse)/(1<<20), float64(after.HeapInuse-before.HeapInuse)/1024/float64(n), runtime.NumGoroutine()-g0)
	return nil
}

func schedLag(n int, dur time.Duration) error {
	s, err := startSchedStack()
	if err != nil {
		return err
	}
	defer s.stop()
	ctx := context.Background()
	list := make([]scheduler.Schedule, n)
	for i := range list {
		list[i] = scheduler.Schedule{Name: fmt.Sprintf("tick-%04d", i), Cron: "@every 1s", Job: jobs.Spec{Command: "true", Queue: "bench-lag"}}
	}
	if err := putAll(ctx, scheduler.NewCatalog(s.store), list); err != nil {
		return err
	}
	var log lagLog
	stop, err := runScheduler(ctx, s.store, metrics.New(), log.fire)
	if err != nil {
		return err
	}
	time.Sleep(dur)
	stop()
	return log.report(fmt.Sprintf("%d `@every 1s` schedules (%d due on each second)", n, n), "fire lag (slot → job published)", dur)
}

// lagLog collects fire lags from the scheduler's OnFire hook: every
// slot's, or only those of the window set by count.
type lagLog struct {
	mu       sync.Mutex
	from, to time.Time
	lags     []time.Duration
}

func (l *lagLog) fire(slot, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.from.IsZero() || !slot.Before(l.from) && slot.Before(l.to) {
		l.lags = append(l.lags, at.Sub(slot))
	}
}

// count makes the slots in [from, from+dur) the only ones counted from
// now on, and drops what was counted before.
func (l *lagLog) count(from time.Time, dur time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from, l.to, l.lags = from, from.Add(dur), nil
}

// report prints the fires counted over dur and their lag quantiles.
func (l *lagLog) report(what, lag string, dur time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lags) == 0 {
		return fmt.Errorf("no fires in %s", dur)
	}
	p50, p99, worst := quantiles(l.lags)
	fmt.Printf("%s for %s: %d fires (%.0f/s); %s p50 %.1f ms, p99 %.1f ms, max %.1f ms.\n",
		what, dur, len(l.lags), float64(len(l.lags))/dur.Seconds(), lag, p50, p99, worst)
	return nil
}

// quantiles sorts lags and returns their p50, p99 and maximum in ms.
func quantiles(lags []time.Duration) (p50, p99, worst float64) {
	slices.Sort(lags)
	q := func(p float64) float64 { return ms(lags[int(p*float64(len(lags)-1))]) }
	return q(0.5), q(0.99), ms(lags[len(lags)-1])
}

// schedSpread measures the fire lag of n schedules spread over a minute
// (6-field crons, second i%60 of every minute: n/60 due on each second)
// for one minute once all are led and armed, so that each fires once.
func schedSpread(n int, dur time.Duration) error {
	s, err := startSchedStack()
	if err != nil {
		return err
	}
	defer s.stop()
	ctx := context.Background()
	list := make([]scheduler.Schedule, n)
	for i := range list {
		list[i] = scheduler.Schedule{Name: fmt.Sprintf("spread-%05d", i), Cron: fmt.Sprintf("%d * * * * *", i%60),
			Job: jobs.Spec{Command: "true", Queue: "bench-spread"}}
	}
	if err := putAll(ctx, scheduler.NewCatalog(s.store), list); err != nil {
		return err
	}
	// Slots in [from, from+dur) are counted: not those while loading.
	log := lagLog{from: time.Now().Add(24 * time.Hour)}
	m := metrics.New()
	stop, err := runScheduler(ctx, s.store, m, log.fire)
	if err != nil {
		return err
	}
	for testutil.ToFloat64(m.Schedules) < float64(n) {
		time.Sleep(10 * time.Millisecond)
	}
	// Every schedule reads (and, new, writes) its state once loaded.
	time.Sleep(2 * time.Second)
	from := time.Now().Truncate(time.Second).Add(time.Second)
	log.count(from, dur)
	time.Sleep(time.Until(from.Add(dur)) + time.Second)
	stop()
	return log.report(fmt.Sprintf("%d schedules spread over a minute (%d due on each second)", n, n/60), "fire lag", dur)
}
