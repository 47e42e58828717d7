package drills

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// TestChaosChecker runs TestChaos's checker on made-up histories: each
// rule must catch what it is for and pass what the product does, in both
// result formats (result.<id>, or the result in the job record).
func TestChaosChecker(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rev := uint64(0)
	record := func(ms int, state jobs.State, try int, worker string) chaosWrite {
		rev++
		return chaosWrite{rev: rev, op: jetstream.KeyValuePut, at: at(ms), state: state, try: try, worker: worker}
	}
	outcome := func(state jobs.State, try int, worker string) *chaosOutcome {
		code := 0
		if state != jobs.StateSucceeded {
			code = 3
		}
		return &chaosOutcome{State: state, Attempt: try, Worker: worker, ExitCode: code}
	}
	// result is a write of result.<id> (today's format).
	result := func(ms int, state jobs.State, try int, worker string) chaosWrite {
		w := record(ms, state, try, worker)
		w.result, w.outcome = true, outcome(state, try, worker)
		return w
	}
	// ended is a record write that carries its result (the new format).
	ended := func(ms int, state jobs.State, try int, worker string) chaosWrite {
		w := record(ms, state, try, worker)
		w.outcome = outcome(state, try, worker)
		return w
	}
	line := func(ms, try int) chaosLine { return chaosLine{attempt: try, at: at(ms)} }
	const (
		queued    = jobs.StateQueued
		running   = jobs.StateRunning
		retryWait = jobs.StateRetryWait
		succeeded = jobs.StateSucceeded
		failed    = jobs.StateFailed
		canceled  = jobs.StateCanceled
		dead      = jobs.StateDead
	)

	for _, tc := range []struct {
		name         string
		kind         string
		max          int
		cancelAt     int // ms; 0: no cancel
		history      []chaosWrite
		starts, ends []chaosLine
		gaps         []chaosGap
		want         string // a failure containing this; empty: none
	}{{
		name:    "result key: one run",
		history: []chaosWrite{record(0, queued, 0, ""), record(10, running, 1, "w0"), result(30, succeeded, 1, "w0"), record(31, succeeded, 1, "w0")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
	}, {
		name:    "result in the record: one run",
		history: []chaosWrite{record(0, queued, 0, ""), record(10, running, 1, "w0"), ended(30, succeeded, 1, "w0"), ended(40, succeeded, 1, "w0")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
	}, {
		name:    "result in the record: replaced",
		history: []chaosWrite{record(10, running, 1, "w0"), ended(30, succeeded, 1, "w0"), ended(40, dead, 2, "w1")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
		want: "was replaced by dead",
	}, {
		name:    "result key, then another result in the record",
		history: []chaosWrite{record(10, running, 1, "w0"), result(30, succeeded, 1, "w0"), ended(31, failed, 1, "w0")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
		want: "was replaced by failed",
	}, {
		name:    "result key written twice",
		history: []chaosWrite{record(10, running, 1, "w0"), result(30, succeeded, 1, "w0"), result(35, succeeded, 1, "w0")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
		want: "written 2 times",
	}, {
		name:    "the record drops its result",
		history: []chaosWrite{record(10, running, 1, "w0"), ended(30, succeeded, 1, "w0"), record(40, succeeded, 1, "w0")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
		want: "dropped the committed result",
	}, {
		name:    "the record runs again after the result",
		history: []chaosWrite{record(10, running, 1, "w0"), result(30, succeeded, 1, "w0"), record(40, running, 2, "w1")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
		want: "its record says running",
	}, {
		name:    "no result",
		history: []chaosWrite{record(10, running, 1, "w0")},
		want:    "no committed result",
	}, {
		name:    "succeeded, but its attempt never ended",
		max:     2,
		history: []chaosWrite{record(10, running, 1, "w0"), record(30, queued, 1, ""), record(40, running, 2, "w1"), result(60, succeeded, 2, "w1")},
		starts:  []chaosLine{line(12, 1), line(42, 2)}, ends: []chaosLine{line(20, 1)},
		want: "attempt 2's command never ran to its end",
	}, {
		name:    "a failing job succeeds",
		kind:    "failing",
		history: []chaosWrite{record(10, running, 1, "w0"), result(30, succeeded, 1, "w0")},
		starts:  []chaosLine{line(12, 1)}, ends: []chaosLine{line(20, 1)},
		want: "exits 3 succeeded",
	}, {
		name:    "denied",
		history: []chaosWrite{record(10, running, 1, "w0"), result(30, jobs.StateDenied, 1, "w0")},
		want:    "denied",
	}, {
		name: "denied by the policy's time budget",
		history: []chaosWrite{record(10, running, 1, "w0"), func() chaosWrite {
			w := result(30, jobs.StateDenied, 1, "w0")
			w.why = "denied in mode deny: too-complex (judging it takes more than 90ms of CPU time) (rule too-complex)"
			return w
		}()},
		want: "denied",
	}, {
		name:    "retried to its last attempt",
		kind:    "failing",
		max:     2,
		history: []chaosWrite{record(10, running, 1, "w0"), record(20, retryWait, 1, "w0"), record(30, running, 2, "w1"), result(40, failed, 2, "w1")},
		starts:  []chaosLine{line(12, 1), line(32, 2)}, ends: []chaosLine{line(15, 1), line(35, 2)},
	}, {
		name:    "an attempt past max_attempts starts",
		max:     1,
		history: []chaosWrite{record(10, running, 1, "w0"), record(30, queued, 1, ""), record(40, running, 2, "w1"), result(60, failed, 2, "w1")},
		starts:  []chaosLine{line(12, 1), line(42, 2)}, ends: []chaosLine{line(50, 2)},
		want: "attempt 2 started its command; max_attempts is 1",
	}, {
		name: "a hand-back gives its number back",
		max:  1,
		history: []chaosWrite{record(10, running, 1, "w0"), record(30, queued, 0, ""), record(40, running, 1, "w1"),
			result(60, succeeded, 1, "w1")},
		starts: []chaosLine{line(12, 1), line(42, 1)}, ends: []chaosLine{line(50, 1)},
	}, {
		name:    "a claim starts its command twice",
		max:     3,
		history: []chaosWrite{record(10, running, 1, "w0"), result(60, failed, 1, "w0")},
		starts:  []chaosLine{line(12, 1), line(42, 1)}, ends: []chaosLine{line(50, 1)},
		want: "attempt 1 started its command twice",
	}, {
		name:    "two starts of a number with writes unseen between them",
		max:     1,
		history: []chaosWrite{record(10, running, 1, "w0"), result(60, succeeded, 1, "w1")},
		starts:  []chaosLine{line(12, 1), line(42, 1)}, ends: []chaosLine{line(50, 1)},
		gaps: []chaosGap{{from: at(20), to: at(41), n: 3}},
	}, {
		name:     "a claim after the cancel starts its command",
		kind:     "cancel",
		cancelAt: 20,
		history:  []chaosWrite{record(0, queued, 0, ""), record(30, running, 1, "w0"), result(60, canceled, 1, "w0")},
		starts:   []chaosLine{line(32, 1)},
		want:     "attempt 1, claimed 10ms after its cancel was acknowledged",
	}, {
		name:     "a claim before the cancel starts its command after it",
		kind:     "cancel",
		cancelAt: 20,
		history:  []chaosWrite{record(0, queued, 0, ""), record(10, running, 1, "w0"), result(60, canceled, 1, "w0")},
		starts:   []chaosLine{line(32, 1)},
	}, {
		name:     "an unseen claim after the cancel starts its command",
		kind:     "cancel",
		cancelAt: 20,
		max:      2,
		history:  []chaosWrite{record(10, running, 1, "w0"), record(25, retryWait, 1, "w0"), result(60, canceled, 2, "w1")},
		starts:   []chaosLine{line(12, 1), line(32, 2)}, ends: []chaosLine{line(14, 1)},
		want: "attempt 2, claimed no earlier than 5ms after",
	}, {
		name:    "a stale holder starts after a takeover",
		max:     2,
		history: []chaosWrite{record(10, running, 1, "w0"), record(30, queued, 1, ""), record(40, running, 2, "w1"), result(60, succeeded, 2, "w1")},
		starts:  []chaosLine{line(42, 2), line(45, 1)}, ends: []chaosLine{line(50, 2)},
		want: "attempt 1's process was created 5ms after attempt 2 was claimed by w1",
	}, {
		name:    "an attempt starts after the result",
		max:     2,
		history: []chaosWrite{record(10, running, 1, "w0"), record(30, queued, 1, ""), record(40, running, 2, "w1"), result(60, dead, 2, "w1")},
		starts:  []chaosLine{line(70, 2)},
		want:    "attempt 2's process was created 10ms after the job's result dead",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			j := &chaosJob{spec: jobs.Spec{ID: "job", MaxAttempts: max(tc.max, 1)}, kind: tc.kind}
			if tc.cancelAt != 0 {
				j.cancelAt = at(tc.cancelAt)
			}
			var got []string
			c := &chaosCheck{j: j, history: tc.history, starts: tc.starts, ends: tc.ends, gaps: tc.gaps,
				fail: func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) },
				note: t.Logf}
			c.run()
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("failures %q, want none", got)
			case tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want):
				t.Errorf("failures %q, want one with %q", got, tc.want)
			case tc.want != "" && len(got) > 1:
				t.Errorf("failures %q, want one", got)
			}
		})
	}
}
