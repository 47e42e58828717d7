package scheduler

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// dispatcher fires a leader's schedules from one goroutine, its loop:
//
//  1. Each definition the watch delivers is applied on the loop: a new
//     schedule's state is loaded off the loop (and, at takeover, the slots
//     missed while no scheduler led are counted and stored), then the
//     schedule is armed: its next slot goes into a heap ordered by time.
//  2. When the earliest slot is due, the loop takes every slot due by
//     then — a cron burst — and fires it as one pipeline (burst.go): the
//     jobs are published asynchronously, a bounded number in flight,
//     each slot's job ID as its Nats-Msg-Id, and each slot is recorded
//     as its ack arrives.
//  3. The records go to the state writer (statewriter.go), which stores
//     them after the burst, batched: state writes never delay a fire.
//  4. Work that waits on the server for one schedule — an overlap check,
//     a publish being retried, a state load — runs off the loop and
//     hands its result back to it (post); the schedule is busy (not
//     armed) meanwhile, so its slots are handled one at a time, in order.
//
// All fields but the channels are the loop's alone. A dispatcher lives
// for one leadership term: run returns once ctx is done, after the
// publishes in flight are settled.
type dispatcher struct {
	s   *Scheduler
	log *slog.Logger
	w   *stateWriter

	events  chan func() // definitions and results of off-loop work, run on the loop
	entries map[string]*entry
	loaded  int // entries loaded (and armed, unless busy)
	due     dueHeap
	ready   []fire // slots cleared by an overlap check, to publish
	// bursting: a burst is being published; the schedules it handled are
	// settled, to be armed once it is.
	bursting bool
	settled  []*entry

	offRunning int      // off-loop jobs running
	offQueued  []func() // and waiting for a turn
	work       sync.WaitGroup
}

// offLoopLimit bounds the loads and overlap checks running at once (a
// takeover loads every schedule's state).
const offLoopLimit = 64

// entry is one schedule while its scheduler leads.
type entry struct {
	name    string
	c       compiled
	gen     int // counts definitions applied, to spot a change during a load
	loading bool
	loaded  bool
	// cursor is the last slot handled (the stored LastSlot, as the leader
	// knows it before its writes land); lastJob the job of the last fired
	// slot (for the overlap policy).
	cursor  time.Time
	lastJob string
	// catchup holds the slots to fire as catch-up (missed while no
	// scheduler led, or while the definition was being changed), oldest
	// first, before its next slot.
	catchup []time.Time
	// busy: one of its slots is being handled off the loop; recheck: its
	// definition changed meanwhile, so it is caught up when done.
	busy    bool
	recheck bool
	// at and kind are its armed slot, in the heap at index (-1 if not).
	at    time.Time
	kind  string
	index int
}

// fire is one slot of one schedule to handle.
type fire struct {
	e    *entry
	slot time.Time
	kind string // slot or catchup
}

func newDispatcher(s *Scheduler) *dispatcher {
	return &dispatcher{
		s:       s,
		log:     s.log,
		w:       newStateWriter(s.store.JS, s.cat, s.log),
		events:  make(chan func()),
		entries: map[string]*entry{},
	}
}

func (d *dispatcher) now() time.Time { return d.s.cfg.Now() }

// post hands fn to the loop; it is dropped once ctx is done.
func (d *dispatcher) post(ctx context.Context, fn func()) {
	select {
	case d.events <- fn:
	case <-ctx.Done():
	}
}

// run is the loop, until ctx is done; it returns once the work it started
// off the loop has ended.
func (d *dispatcher) run(ctx context.Context) {
	defer d.work.Wait()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d.fireDue(ctx)
		// The burst's publishes are settled: its records may go out.
		d.w.kick()
		if len(d.due) > 0 {
			timer.Reset(max(d.due[0].at.Sub(d.now()), 0))
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case fn := <-d.events:
			fn()
		case <-timer.C:
		}
	}
}

// goOff runs work on a goroutine, at most offLoopLimit at a time (the
// rest wait their turn, in order); work posts its result to the loop.
func (d *dispatcher) goOff(ctx context.Context, work func()) {
	if d.offRunning >= offLoopLimit {
		d.offQueued = append(d.offQueued, work)
		return
	}
	d.offRunning++
	d.work.Go(func() {
		work()
		d.post(ctx, func() {
			d.offRunning--
			if len(d.offQueued) > 0 {
				next := d.offQueued[0]
				d.offQueued = d.offQueued[1:]
				d.goOff(ctx, next)
			}
		})
	})
}

// current reports whether e is still the schedule's entry (not removed,
// nor removed and added again, since the work on it began).
func (d *dispatcher) current(e *entry) bool { return d.entries[e.name] == e }

// apply follows one change of a definition.
func (d *dispatcher) apply(ctx context.Context, kv jetstream.KeyValueEntry) {
	name := strings.TrimPrefix(kv.Key(), defKey(""))
	if kv.Operation() != jetstream.KeyValuePut {
		d.remove(name) // deleted: stays stopped
		return
	}
	sc, err := decodeSchedule(name, kv.Value())
	var c compiled
	if err == nil {
		c, err = compile(sc)
	}
	if err != nil {
		d.log.Error("schedule invalid, not firing", "schedule", name, "revision", kv.Revision(), "err", err)
		d.remove(name)
		return
	}
	d.log.Debug("schedule loaded", "schedule", name, "revision", kv.Revision(), "suspended", sc.Suspended)
	e := d.entries[name]
	if e == nil {
		e = &entry{name: name, index: -1}
		d.entries[name] = e
	}
	e.c = c
	e.gen++
	switch {
	case !e.loaded:
		if !e.loading {
			d.load(ctx, e) // armed with the definition current when it is loaded
		}
	case e.busy:
		e.recheck = true
	default:
		d.unarm(e)
		d.recatch(e)
	}
}

// remove stops a schedule; its work under way is dropped when it ends.
func (d *dispatcher) remove(name string) {
	e := d.entries[name]
	if e == nil {
		return
	}
	d.unarm(e)
	delete(d.entries, name)
	d.w.forget(name)
	if e.loaded {
		d.loaded--
		d.s.m.Schedules.Set(float64(d.loaded))
	}
}

// load reads the schedule's state off the loop — a new schedule starts
// from now; at takeover, the slots missed while no scheduler led are
// counted and stored first — then arms it.
func (d *dispatcher) load(ctx context.Context, e *entry) {
	e.loading = true
	c, gen := e.c, e.gen
	d.goOff(ctx, func() {
		st, rev, plan, err := d.loadState(ctx, c)
		d.post(ctx, func() {
			e.loading = false
			if !d.current(e) {
				return
			}
			if err != nil {
				// Not fired until its definition changes or another
				// leadership term loads it again.
				if ctx.Err() == nil {
					d.log.Error("load state", "schedule", e.name, "err", err)
				}
				return
			}
			e.loaded, e.cursor, e.lastJob = true, st.LastSlot, st.LastJob
			d.loaded++
			d.s.m.Schedules.Set(float64(d.loaded))
			d.w.track(e.name, st, rev)
			if e.gen != gen { // changed while loading
				plan = planCatchUp(e.c, e.cursor, d.now())
			}
			d.catchUp(e, plan)
		})
	})
}

// loadState reads c's state, creating it for a new schedule, and stores
// the slots missed since its last slot (those older than its catch-up
// window) before anything of it fires. It returns the state as stored
// and the plan whose missed slots are recorded in it.
func (d *dispatcher) loadState(ctx context.Context, c compiled) (State, uint64, catchUpPlan, error) {
	kv := d.s.cat.kv
	for {
		st, rev, err := d.s.cat.state(ctx, c.Name)
		if err != nil {
			return State{}, 0, catchUpPlan{}, err
		}
		now := d.now()
		plan := catchUpPlan{now: now}
		if st.LastSlot.IsZero() {
			// A new schedule starts from now: nothing before it was missed.
			st.LastSlot = now
		} else if plan = planCatchUp(c, st.LastSlot, now); plan.missed > 0 {
			plan.recordMissed(c, &st)
		} else {
			return st, rev, plan, nil
		}
		data, err := json.Marshal(st)
		if err != nil {
			return State{}, 0, catchUpPlan{}, err
		}
		if rev == 0 {
			rev, err = kv.Create(ctx, stateKey(c.Name), data)
		} else {
			rev, err = kv.Update(ctx, stateKey(c.Name), data, rev)
		}
		if err == nil {
			if plan.missed > 0 {
				d.s.m.ScheduleMissed.Add(float64(plan.missed))
				d.log.Warn("slots missed while no scheduler led", "schedule", c.Name, "missed", plan.missed, "catchup_window", c.Window())
			}
			plan.missed = 0 // recorded
			return st, rev, plan, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			return State{}, 0, catchUpPlan{}, err
		}
		// Written meanwhile (a CLI trigger, the previous leader's last
		// records): read again.
	}
}

// catchUpPlan is what a schedule does with the slots between its last
// one handled and now.
type catchUpPlan struct {
	now time.Time
	// missed slots are older than the catch-up window (or not the latest
	// inside it, under catchup: latest); skippedTo is the last slot
	// handled once they are.
	missed    int64
	skippedTo time.Time
	// inWindow are the slots to fire, oldest first.
	inWindow []time.Time
}

// planCatchUp plans the slots after last, up to now: those inside the
// catch-up window fire (all, or the latest), older ones are missed.
func planCatchUp(c compiled, last, now time.Time) catchUpPlan {
	p := catchUpPlan{now: now}
	var inWindow []time.Time
	for range maxCatchup {
		slot := c.slots.Next(last)
		if slot.IsZero() || slot.After(now) {
			break
		}
		last = slot
		if now.Sub(slot) <= c.Window() {
			inWindow = append(inWindow, slot)
		} else {
			p.missed++
		}
	}
	if c.Catchup == CatchupLatest && len(inWindow) > 1 {
		p.missed += int64(len(inWindow) - 1)
		inWindow = inWindow[len(inWindow)-1:]
	}
	p.skippedTo = last
	if len(inWindow) > 0 {
		p.skippedTo = inWindow[0].Add(-time.Nanosecond)
	}
	p.inWindow = inWindow
	return p
}

// recordMissed applies the plan's missed slots to st.
func (p catchUpPlan) recordMissed(c compiled, st *State) {
	st.Missed += p.missed
	st.LastSlot = p.skippedTo
	st.record(Fire{Slot: p.skippedTo, At: p.now, Kind: "missed",
		Reason: fmt.Sprintf("%d slots older than the %s catch-up window", p.missed, c.Window())})
}

// catchUp applies plan to e (its missed slots, if not recorded yet, go to
// the state writer) and arms it: the slots inside the window fire as
// catch-up, one at a time, oldest first.
func (d *dispatcher) catchUp(e *entry, plan catchUpPlan) {
	if plan.missed > 0 {
		d.s.m.ScheduleMissed.Add(float64(plan.missed))
		d.log.Warn("slots missed", "schedule", e.name, "missed", plan.missed, "catchup_window", e.c.Window())
		e.cursor = plan.skippedTo
		c := e.c
		d.w.add(e.name, func(st *State) { plan.recordMissed(c, st) })
	}
	e.catchup = plan.inWindow
	d.arm(e)
}

// recatch arms e after a change of its definition: the catch-up under way
// goes on; otherwise the slots passed since its last one are caught up.
func (d *dispatcher) recatch(e *entry) {
	if len(e.catchup) > 0 {
		d.arm(e)
		return
	}
	d.catchUp(e, planCatchUp(e.c, e.cursor, d.now()))
}

// arm puts e's next slot into the heap: its next catch-up slot, or the
// slot after the last one handled.
func (d *dispatcher) arm(e *entry) {
	if len(e.catchup) > 0 {
		e.at, e.kind = e.catchup[0], "catchup"
		heap.Push(&d.due, e)
		return
	}
	next := e.c.slots.Next(e.cursor)
	if next.IsZero() {
		d.log.Warn("schedule has no future slots", "schedule", e.name)
		return
	}
	e.at, e.kind = next, "slot"
	heap.Push(&d.due, e)
}

func (d *dispatcher) unarm(e *entry) {
	if e.index >= 0 {
		heap.Remove(&d.due, e.index)
	}
}

// release ends the handling of e's slot: e is armed for its next one (or
// caught up, if its definition changed meanwhile).
func (d *dispatcher) release(e *entry) {
	e.busy = false
	if e.recheck {
		e.recheck = false
		d.recatch(e)
		return
	}
	d.arm(e)
}

// dueHeap orders the armed schedules by their next slot.
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *dueHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
