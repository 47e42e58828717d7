package drills

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// check is the history checker. It holds, for every job:
//
//  1. Exactly one committed result, never replaced. The committed result
//     is the first write that carries one: a result.<id> value, or a
//     run.<id> record whose "result" is set. Every later write that
//     carries a result carries the same (state, attempt, worker, exit
//     code); result.<id> is written once; neither key is deleted; every
//     later record is in the result's state, and once a record carried
//     the result, every later record does. The result's state is
//     terminal.
//  2. Attempts: every attempt that started its command (by the
//     SANDRUN_ATTEMPT it logged) is numbered 1..max_attempts, and the
//     attempts that started number at most max_attempts plus those a
//     draining worker handed back (a hand-back gives its number back: the
//     record's attempt goes down, and the next claim reuses the number).
//     Two starts of one number are one attempt started twice unless a
//     hand-back or a new claim of that number lies between them.
//  3. A succeeded result's attempt ran its command to its end before the
//     result was committed; a failing job (exit 3) never succeeds; no job
//     is denied (the same commands pass the policy without faults: the
//     policy's time budget is the deciding thread's CPU time, so a busy
//     or frozen worker no longer denies one; seed 50 of an earlier
//     schedule caught the wall-clock budget doing it).
//  4. Cancel: no attempt claimed after the cancel was acknowledged starts
//     its command. An attempt's claim is the record write that set it
//     running with its number.
//  5. No stale start: no attempt starts its command after a later attempt
//     of the job was claimed, or after the job's result was committed.
//
// The watches can miss a write (the bucket keeps one value per key, and a
// watch lags while it reconnects), and the revisions none delivered are
// known. Rules 1, 3 and 5 only need writes that were seen. Rule 4 takes
// an attempt's claim as no earlier than the last write seen before its
// start that shows the attempt claimed, or its previous number current;
// that bound is exact when the claim was seen. Rule 2 counts two starts
// of one number as two attempts when the watches missed writes between
// them (a hand-back may hide there); such a case is logged.
func (h *chaosRun) check(t *testing.T) {
	starts, ends := h.commandLog()
	h.mu.Lock()
	defer h.mu.Unlock()
	gaps := h.gaps()
	bad := false
	for _, j := range h.jobs {
		id := j.spec.ID
		c := &chaosCheck{j: j, history: h.history[id], starts: starts[id], ends: ends[id], gaps: gaps,
			fail: func(format string, args ...any) {
				bad = true
				t.Errorf("seed %d: %s: "+format, append([]any{h.seed, id}, args...)...)
			},
			note: func(format string, args ...any) {
				t.Logf("seed %d: %s: "+format, append([]any{h.seed, id}, args...)...)
			}}
		c.run()
	}
	// The batch's counts are what its items' histories committed,
	// exactly.
	committedStates := map[jobs.State]int{}
	for _, j := range h.jobs {
		if b, _, ok := jobs.BatchItemOf(jobs.Spec{ID: j.spec.ID, Labels: map[string]string{jobs.LabelBatch: h.batch}}); ok && b == h.batch {
			if i := committed(h.history[j.spec.ID]); i >= 0 {
				committedStates[h.history[j.spec.ID][i].state]++
			}
		}
	}
	if fmt.Sprint(h.counted) != fmt.Sprint(committedStates) {
		bad = true
		t.Errorf("seed %d: batch %s: the server counted %v, the history committed %v", h.seed, h.batch, h.counted, committedStates)
	}
	if bad || os.Getenv("SANDRUN_CHAOS_REPORT") != "" {
		h.report(starts, ends)
	}
	h.summary(t, starts, gaps)
}

// summary logs one line of figures per seed: the world, the faults by
// kind, the jobs' results, and how much of the history the checker saw.
// Caller holds mu.
func (h *chaosRun) summary(t *testing.T, starts map[string][]chaosLine, gaps []chaosGap) {
	results := map[jobs.State]int{}
	nstarts, handBacks, claims, last := 0, 0, 0, h.healed
	for _, j := range h.jobs {
		history := h.history[j.spec.ID]
		if i := committed(history); i >= 0 {
			results[history[i].outcome.State]++
			if history[i].at.After(last) {
				last = history[i].at
			}
		}
		nstarts += len(starts[j.spec.ID])
		handBacks += (&chaosCheck{history: history}).handBacks()
		for _, w := range history {
			if w.running() {
				claims++
			}
		}
	}
	missed := uint64(0)
	for _, g := range gaps {
		missed += g.n
	}
	t.Logf("CHAOS seed %d: %d node(s); faults %v; results %v, the last %s after the heal; %d claims seen, %d command starts, %d handed back; the watches missed %d of %d revisions",
		h.seed, h.servers.size(), h.tally, results, last.Sub(h.healed).Round(time.Millisecond), claims, nstarts, handBacks, missed, uint64(len(h.revs))+missed)
}

// chaosCheck checks one job's history.
type chaosCheck struct {
	j            *chaosJob
	history      []chaosWrite // record and result writes, in revision order
	starts, ends []chaosLine  // its command's log, in time order
	gaps         []chaosGap   // what the watches missed, of any key
	fail, note   func(format string, args ...any)
}

func (c *chaosCheck) run() {
	for _, w := range c.history {
		if w.bad != nil {
			c.fail("rev %d does not decode: %v", w.rev, w.bad)
		}
	}
	res, ok := c.result()
	if !ok {
		return
	}
	c.attempts()
	o := res.outcome
	if o.State == jobs.StateSucceeded && !slices.ContainsFunc(c.ends, func(l chaosLine) bool {
		return l.attempt == o.Attempt && !l.at.After(res.at)
	}) {
		c.fail("succeeded in attempt %d, but attempt %d's command never ran to its end before the commit", o.Attempt, o.Attempt)
	}
	if c.j.kind == "failing" && o.State == jobs.StateSucceeded {
		c.fail("a command that exits 3 succeeded")
	}
	if o.State == jobs.StateDenied {
		c.fail("denied (%s), though its command passes the policy in a run without faults", res.why)
	}
	if !c.j.cancelAt.IsZero() {
		c.cancel()
	}
	c.stale(res)
}

// result checks rule 1 and returns the write that committed the result.
func (c *chaosCheck) result() (chaosWrite, bool) {
	i := committed(c.history)
	if i < 0 {
		c.fail("no committed result")
		return chaosWrite{}, false
	}
	first := c.history[i]
	if !first.outcome.State.Terminal() {
		c.fail("committed result in state %s", first.outcome.State)
	}
	commits, carried := 0, false
	for k, w := range c.history {
		if w.result && w.op == jetstream.KeyValuePut {
			commits++
		}
		if k <= i {
			carried = carried || (!w.result && w.outcome != nil)
			continue
		}
		switch {
		case w.op != jetstream.KeyValuePut:
			c.fail("%s after its result was committed (rev %d, result key %t)", w.op, w.rev, w.result)
		case w.outcome != nil && *w.outcome != *first.outcome:
			c.fail("its committed result %s was replaced by %s (rev %d, result key %t)", first.outcome, w.outcome, w.rev, w.result)
		case w.result:
		case w.state != first.outcome.State:
			c.fail("its record says %s (attempt %d, worker %q, rev %d) after its result %s was committed", w.state, w.try, w.worker, w.rev, first.outcome)
		case w.outcome == nil && carried:
			c.fail("its record dropped the committed result (rev %d)", w.rev)
		}
		carried = carried || (!w.result && w.outcome != nil)
	}
	if commits > 1 {
		c.fail("%s written %d times: a result is committed once", resultKey(c.j.spec.ID), commits)
	}
	return first, true
}

// attempts checks rule 2.
func (c *chaosCheck) attempts() {
	limit := c.j.spec.MaxAttempts
	byTry := map[int][]time.Time{}
	for _, s := range c.starts {
		byTry[s.attempt] = append(byTry[s.attempt], s.at)
	}
	started, unseen, over := 0, 0, false
	for _, n := range slices.Sorted(maps.Keys(byTry)) {
		if n > limit {
			c.fail("attempt %d started its command; max_attempts is %d", n, limit)
			over = true
		}
		ss := byTry[n]
		started++
		for k := 1; k < len(ss); k++ {
			switch c.between(n, ss[k-1], ss[k]) {
			case chaosReclaimed:
				started++
			case chaosUnseen:
				started++
				unseen++
				c.note("attempt %d started its command at %s and at %s, and the watches missed writes between: counted as two attempts, one handed back",
					n, ss[k-1].Format("15:04:05.000"), ss[k].Format("15:04:05.000"))
			default:
				c.fail("attempt %d started its command twice (%s and %s), with no hand-back between",
					n, ss[k-1].Format("15:04:05.000"), ss[k].Format("15:04:05.000"))
			}
		}
	}
	if hb := c.handBacks() + unseen; started > limit+hb && !over {
		c.fail("%d attempts started their command, max_attempts %d (+%d handed back)", started, limit, hb)
	}
}

// How two starts of one attempt number relate.
const (
	chaosSameClaim = iota // nothing between them: one claim started twice
	chaosReclaimed        // the number was handed back or claimed again between them
	chaosUnseen           // the watches missed writes between them
)

// between says how the starts a and b (a before b) of attempt n relate.
func (c *chaosCheck) between(n int, a, b time.Time) int {
	for _, w := range c.history {
		if w.result || w.op != jetstream.KeyValuePut || !w.at.After(a) || !w.at.Before(b) {
			continue
		}
		if (w.running() && w.try == n) || w.try < n {
			return chaosReclaimed
		}
	}
	for _, g := range c.gaps {
		if g.from.Before(b) && g.to.After(a) {
			return chaosUnseen
		}
	}
	return chaosSameClaim
}

// handBacks counts the attempts given back in the record's history: a
// record write whose attempt is lower than the one before it, or a claim
// of the number the previous claim had (its hand-back unseen).
func (c *chaosCheck) handBacks() int {
	n, prev := 0, chaosWrite{}
	for _, w := range c.history {
		if w.result || w.op != jetstream.KeyValuePut {
			continue
		}
		if w.try < prev.try || (w.running() && prev.running() && w.try == prev.try) {
			n++
		}
		prev = w
	}
	return n
}

// claimOf bounds when the attempt that logged start s was claimed: no
// earlier than the last write before s that shows that attempt number
// claimed, or the number before it current. exact: the bound is the claim.
func (c *chaosCheck) claimOf(s chaosLine) (at time.Time, exact bool) {
	var claim, before time.Time
	for _, w := range c.history {
		if w.result || w.op != jetstream.KeyValuePut || !w.at.Before(s.at) {
			continue
		}
		switch {
		case w.running() && w.try == s.attempt:
			claim = w.at
		case w.try == s.attempt-1:
			before = w.at
		}
	}
	if claim.After(before) {
		return claim, true
	}
	return before, false
}

// cancel checks rule 4.
func (c *chaosCheck) cancel() {
	for _, s := range c.starts {
		claim, exact := c.claimOf(s)
		if !claim.After(c.j.cancelAt) {
			continue
		}
		how := "claimed"
		if !exact {
			how = "claimed no earlier than"
		}
		c.fail("attempt %d, %s %v after its cancel was acknowledged, started its command (%v after the cancel)",
			s.attempt, how, claim.Sub(c.j.cancelAt).Round(time.Millisecond), s.at.Sub(c.j.cancelAt).Round(time.Millisecond))
	}
}

// stale checks rule 5.
// It judges by when the command's process was created (forked), not by
// when its start line was written: on a loaded machine the line comes
// seconds after the process, long after its worker's checks.
func (c *chaosCheck) stale(res chaosWrite) {
	for _, s := range c.starts {
		at := s.forked
		if at.IsZero() { // a made-up history without the process's time
			at = s.at
		}
		for _, w := range c.history {
			if w.running() && w.try > s.attempt && w.at.Before(at) {
				c.fail("attempt %d's process was created %v after attempt %d was claimed by %s: a stale holder started its process after a takeover (%s)",
					s.attempt, at.Sub(w.at).Round(time.Millisecond), w.try, w.worker, c.ended(s.attempt))
				break
			}
		}
		if res.at.Before(at) {
			c.fail("attempt %d's process was created %v after the job's result %s was committed (%s)",
				s.attempt, at.Sub(res.at).Round(time.Millisecond), res.outcome, c.ended(s.attempt))
		}
	}
}

// ended says whether attempt n's command logged its end, for messages.
func (c *chaosCheck) ended(n int) string {
	for _, l := range c.ends {
		if l.attempt == n {
			return fmt.Sprintf("its command ended at %s", l.at.Format("15:04:05.000"))
		}
	}
	return "its command never logged its end"
}
