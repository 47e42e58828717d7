package main

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// tracker records one phase's jobs as the systems report them: when each
// was enqueued, when its command started, and that it finished. Every
// job is counted once by its system's own ID; a job run again is a
// duplicate. Reports may arrive in any order (a fast worker can finish a
// job before its enqueue call returns). It is safe for concurrent use.
type tracker struct {
	want int
	done chan struct{} // closed when want distinct jobs finished

	mu       sync.Mutex
	jobs     map[string]*jobTimes
	nDone    int // distinct jobs that finished
	dups     int // runs beyond the first of a job
	failed   int
	firstErr error
	last     time.Time // when the want-th job finished
}

type jobTimes struct {
	enqueued, started time.Time
	runs              int
	ended             bool
}

func newTracker(want int) *tracker {
	return &tracker{want: want, done: make(chan struct{}), jobs: make(map[string]*jobTimes, want)}
}

func (t *tracker) job(id string) *jobTimes {
	j := t.jobs[id]
	if j == nil {
		j = &jobTimes{}
		t.jobs[id] = j
	}
	return j
}

// enqueued records when job id was enqueued (systems that do not carry
// the time in the job itself).
func (t *tracker) enqueued(id string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.job(id).enqueued = at
}

// started records that job id's command is about to start. enqueued may
// be zero when the enqueue side reports it.
func (t *tracker) started(id string, enqueued, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(id)
	if !enqueued.IsZero() {
		j.enqueued = enqueued
	}
	j.started = at
	j.runs++
	if j.runs > 1 {
		t.dups++
	}
}

// finished records that job id ended, with err if it failed. The first
// end of each job counts.
func (t *tracker) finished(id string, err error, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := t.job(id)
	if j.ended {
		return
	}
	j.ended = true
	t.nDone++
	if err != nil {
		t.failed++
		if t.firstErr == nil {
			t.firstErr = fmt.Errorf("job %s: %w", id, err)
		}
	}
	if t.nDone == t.want {
		t.last = at
		close(t.done)
	}
}

// count returns how many distinct jobs finished so far.
func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nDone
}

// phaseStats is what a phase measured.
type phaseStats struct {
	Jobs       int // distinct jobs that finished
	Duplicates int // runs beyond the first of a job
	Failed     int
	// Elapsed is from just before the first enqueue to the end of the
	// last job; Enqueued is from then to the return of the last enqueue.
	Elapsed, Enqueued time.Duration
	P50, P99          time.Duration // enqueue→start
}

// stats summarises the phase that began at start and whose last enqueue
// returned at enqDone. It fails when a job failed or lacks a time.
func (t *tracker) stats(start, enqDone time.Time) (phaseStats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := phaseStats{Jobs: t.nDone, Duplicates: t.dups, Failed: t.failed,
		Elapsed: t.last.Sub(start), Enqueued: enqDone.Sub(start)}
	if t.failed > 0 {
		return s, fmt.Errorf("%d of %d jobs failed; first: %w", t.failed, t.nDone, t.firstErr)
	}
	lat := make([]time.Duration, 0, len(t.jobs))
	for id, j := range t.jobs {
		if j.enqueued.IsZero() || j.started.IsZero() {
			return s, fmt.Errorf("job %s: no enqueue or start time recorded", id)
		}
		lat = append(lat, j.started.Sub(j.enqueued))
	}
	slices.Sort(lat)
	s.P50, s.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return s, nil
}

// percentile is the nearest-rank percentile of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(float64(len(sorted))*p)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
