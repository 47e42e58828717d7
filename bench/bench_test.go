package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs every system with tiny numbers and checks that each
// processed every job exactly once and has a row in the report. Without
// redis-server or PostgreSQL it skips, except in CI, where it fails.
func TestSmoke(t *testing.T) {
	_, rerr := findRedis("")
	_, perr := findPostgresBin()
	if err := errors.Join(rerr, perr); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI needs every system installed (scripts/test.sh installs them): %v", err)
		}
		t.Skipf("not installed: %v", err)
	}
	const jobs, latencyJobs = 200, 30
	cfg := config{Jobs: jobs, Concurrency: 4, Enqueuers: 8, LatencyJobs: latencyJobs, LatencyInterval: 5 * time.Millisecond,
		Systems: systems, PhaseTimeout: 2 * time.Minute, Log: testLog{t}}
	rep, err := run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.write(&out)
	t.Logf("report:\n%s", out.String())

	for _, s := range systems {
		res, ok := rep.get(s)
		if !ok {
			t.Errorf("%s: no result", s)
			continue
		}
		if res.Throughput.Jobs != jobs {
			t.Errorf("%s: throughput phase processed %d jobs, want %d", s, res.Throughput.Jobs, jobs)
		}
		if s == "raw" {
			continue
		}
		if !res.HasLatency || res.Latency.Jobs != latencyJobs {
			t.Errorf("%s: latency phase processed %d jobs, want %d", s, res.Latency.Jobs, latencyJobs)
		}
		if d := res.Throughput.Duplicates + res.Latency.Duplicates; d != 0 {
			t.Errorf("%s: %d jobs ran more than once", s, d)
		}
		if res.rate() <= 0 || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 {
			t.Errorf("%s: implausible figures: %.0f jobs/s, p50 %s, p99 %s", s, res.rate(), res.Latency.P50, res.Latency.P99)
		}
	}
	for _, s := range systems {
		if !strings.Contains(out.String(), "| "+labels[s]+" | ") {
			t.Errorf("report has no row for %s", s)
		}
	}
	for _, want := range []string{"| sandrun R1 / asynq + redis |", "| sandrun R1 / River + PostgreSQL |", "nats-server v2."} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestTrackerCountsEachJobOnce(t *testing.T) {
	t.Parallel()
	tr := newTracker(2)
	t0 := time.Now()
	tr.started("a", t0, t0.Add(2*time.Millisecond))
	tr.finished("a", nil, t0.Add(3*time.Millisecond))
	// b's end is seen before its enqueue call returned.
	tr.started("b", time.Time{}, t0.Add(5*time.Millisecond))
	tr.finished("b", nil, t0.Add(6*time.Millisecond))
	tr.enqueued("b", t0.Add(time.Millisecond))
	// a runs again: a duplicate, not a third job.
	tr.started("a", t0, t0.Add(7*time.Millisecond))
	tr.finished("a", nil, t0.Add(8*time.Millisecond))
	select {
	case <-tr.done:
	default:
		t.Fatal("not done after both jobs finished")
	}
	s, err := tr.stats(t0, t0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Jobs != 2 || s.Duplicates != 1 || s.Elapsed != 6*time.Millisecond {
		t.Errorf("stats = %+v, want 2 jobs, 1 duplicate, 6ms", s)
	}
}

func TestTrackerFailsWithoutTimes(t *testing.T) {
	t.Parallel()
	tr := newTracker(1)
	tr.finished("x", nil, time.Now())
	if _, err := tr.stats(time.Now(), time.Now()); err == nil {
		t.Error("stats of a job without enqueue or start time: no error")
	}
	tr = newTracker(1)
	tr.started("y", time.Now(), time.Now())
	tr.finished("y", errors.New("exit 1"), time.Now())
	if _, err := tr.stats(time.Now(), time.Now()); err == nil || !strings.Contains(err.Error(), "exit 1") {
		t.Errorf("stats of a failed job: %v", err)
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0.001, 1}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("percentile(1..100, %v) = %d, want %d", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %d", got)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := config{Jobs: 1, Concurrency: 1, Enqueuers: 1, LatencyJobs: 1, LatencyInterval: time.Millisecond,
		PhaseTimeout: time.Second, Systems: []string{"raw"}}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.Systems = []string{"raw", "sidekiq"}
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "-systems") {
		t.Errorf("unknown system: %v", err)
	}
	bad = ok
	bad.Concurrency = 0
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "-concurrency") {
		t.Errorf("zero concurrency: %v", err)
	}
}

// testLog sends progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
