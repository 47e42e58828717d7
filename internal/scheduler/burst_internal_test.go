package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/metrics"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// fakeClock is a scheduler clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// burstSchedules are n schedules due on the same two seconds, 12:00:00
// and 12:00:02 (UTC): a tenth suspended, a tenth overlap: forbid, a tenth
// overlap: replace, the rest overlap: allow.
func burstSchedules(n int) []Schedule {
	out := make([]Schedule, n)
	for i := range out {
		s := Schedule{Name: fmt.Sprintf("b-%03d", i), Cron: "0,2 0 12 * * *", Job: jobs.Spec{Command: "true", Queue: "burst"}}
		switch i % 10 {
		case 0:
			s.Suspended = true
		case 1:
			s.Overlap = OverlapForbid
		case 2:
			s.Overlap = OverlapReplace
		}
		out[i] = s
	}
	return out
}

// states reads every schedule's stored state.
func states(ctx context.Context, t *testing.T, kv jetstream.KeyValue) map[string]State {
	t.Helper()
	w, err := kv.Watch(ctx, stateKey("*"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	out := map[string]State{}
	for e := range w.Updates() {
		if e == nil {
			break
		}
		var st State
		if err := json.Unmarshal(e.Value(), &st); err != nil {
			t.Fatal(err)
		}
		out[e.Key()[len(stateKey("")):]] = st
	}
	return out
}

// Every schedule of a burst — 500 due on the same second, twice — is
// handled exactly once per slot: one job per fired slot (no duplicate
// message), suspended and overlap: forbid slots skipped, overlap: replace
// cancelling its previous run; and the stored states catch up with what
// fired (each schedule's last slot and last job). With two schedulers,
// the first leader is stopped in the middle of the first burst (after
// 100 fires, with at most 16 publishes in flight): the second takes over
// and fires the rest as catch-up, under the same message IDs.
func TestBurstFiresEachDueScheduleOnce(t *testing.T) {
	t.Parallel()
	t.Run("one leader", func(t *testing.T) {
		t.Parallel()
		testBurst(t, false)
	})
	t.Run("leader stopped mid-burst", func(t *testing.T) {
		t.Parallel()
		testBurst(t, true)
	})
}

func testBurst(t *testing.T, handover bool) {
	const n = 500
	st := sandruntest.Store(t, sandruntest.Server(t, "").ClientURL())
	ctx := sandruntest.Ctx(t)
	cat := NewCatalog(st)
	list := burstSchedules(n)
	for _, s := range list {
		if err := cat.Put(ctx, s, false); err != nil {
			t.Fatal(err)
		}
	}
	noon := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	second := noon.Add(2 * time.Second)
	clock := &fakeClock{t: noon.Add(-time.Second)}

	var fires atomic.Int64
	var ms []*metrics.Metrics
	ids := []string{"a"}
	if handover {
		ids = append(ids, "b")
	}
	for _, id := range ids {
		m := metrics.New()
		ms = append(ms, m)
		var cancel context.CancelFunc
		s, err := New(Config{ID: id, ElectionTTL: 2 * time.Second, Now: clock.Now, OnFire: func(time.Time, time.Time) {
			if fires.Add(1) == 100 && handover {
				cancel() // the leader dies in the middle of the burst
			}
		}}, st, m, sandruntest.Logger(t).With("scheduler", id))
		if err != nil {
			t.Fatal(err)
		}
		s.inFlight = 16
		var rctx context.Context
		rctx, cancel = context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(rctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}

	// Every schedule loaded (its state created at 11:59:59), then noon.
	sandruntest.Eventually(t, 60*time.Second, func() (bool, string) {
		got := len(states(ctx, t, cat.kv))
		return got == n, fmt.Sprintf("%d of %d schedules loaded", got, n)
	})
	messages := func() int {
		s, err := st.JS.Stream(ctx, jobs.StreamJobs)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(jobs.QueueFilter("burst")))
		if err != nil {
			t.Fatal(err)
		}
		return int(info.State.Msgs)
	}
	clock.Set(noon.Add(500 * time.Millisecond))
	const firstJobs = n * 9 / 10 // all but the suspended
	sandruntest.Eventually(t, 60*time.Second, func() (bool, string) {
		got := messages()
		return got == firstJobs, fmt.Sprintf("%d jobs of the noon slot, want %d", got, firstJobs)
	})
	clock.Set(second.Add(500 * time.Millisecond))
	const secondJobs = n * 8 / 10 // allow and replace
	sandruntest.Eventually(t, 60*time.Second, func() (bool, string) {
		got := messages()
		return got == firstJobs+secondJobs, fmt.Sprintf("%d jobs, want %d", got, firstJobs+secondJobs)
	})

	// One message per slot fired, with the slot's job ID.
	want := map[string]bool{}
	for i, s := range list {
		switch i % 10 {
		case 0:
		case 1:
			want[SlotID(s.Name, noon)] = true
		default:
			want[SlotID(s.Name, noon)] = true
			want[SlotID(s.Name, second)] = true
		}
	}
	seen := map[string]bool{}
	for _, spec := range sandruntest.Queued(t, st) {
		if seen[spec.ID] || !want[spec.ID] {
			t.Errorf("job %s: duplicate or not a slot that fires", spec.ID)
		}
		seen[spec.ID] = true
	}
	if len(seen) != len(want) {
		t.Errorf("%d jobs, want %d", len(seen), len(want))
	}
	if got := messages(); got != len(want) {
		t.Errorf("%d dispatch messages, want %d", got, len(want))
	}

	// The stored states catch up with what fired.
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		all := states(ctx, t, cat.kv)
		for i, s := range list {
			stt := all[s.Name]
			wantJob := SlotID(s.Name, second)
			switch i % 10 {
			case 0:
				wantJob = ""
			case 1:
				wantJob = SlotID(s.Name, noon)
			}
			if !stt.LastSlot.Equal(second) || stt.LastJob != wantJob {
				return false, fmt.Sprintf("%s: last slot %s, last job %q; want %s, %q", s.Name, stt.LastSlot, stt.LastJob, second, wantJob)
			}
			if why := checkHistory(i, stt.History, noon, second); why != "" {
				return false, s.Name + ": " + why
			}
		}
		return true, ""
	})

	// replace cancelled each previous run (queued) before the next slot.
	for i, s := range list {
		if i%10 != 2 {
			continue
		}
		if ok, err := st.CancelRequested(ctx, DefaultOwner, SlotID(s.Name, noon)); err != nil || !ok {
			t.Errorf("%s: cancel of the noon run requested %v %v, want true", s.Name, ok, err)
		}
	}

	if !handover {
		m := ms[0]
		for kind, want := range map[string]float64{"slot": firstJobs + secondJobs, "catchup": 0} {
			if got := testutil.ToFloat64(m.ScheduleFires.WithLabelValues(kind)); got != want {
				t.Errorf("%s fires %v, want %v", kind, got, want)
			}
		}
		for reason, want := range map[string]float64{"suspended": 2 * n / 10, "overlap": n / 10} {
			if got := testutil.ToFloat64(m.ScheduleSkipped.WithLabelValues(reason)); got != want {
				t.Errorf("%s skips %v, want %v", reason, got, want)
			}
		}
		if got := testutil.ToFloat64(m.ScheduleErrors); got != 0 {
			t.Errorf("%v fire errors", got)
		}
		return
	}
	// The burst was cut short: the second leader fired the rest of the
	// noon slot as catch-up.
	var catchup float64
	for _, m := range ms {
		catchup += testutil.ToFloat64(m.ScheduleFires.WithLabelValues("catchup"))
	}
	if catchup < firstJobs-100-16 {
		t.Errorf("%v catch-up fires after the handover, want at least %d", catchup, firstJobs-100-16)
	}
}

// checkHistory says what is wrong with schedule i's history of the two
// slots ("" if nothing).
func checkHistory(i int, hist []Fire, noon, second time.Time) string {
	kinds := map[time.Time]string{}
	for _, f := range hist {
		if f.Slot.Equal(noon) || f.Slot.Equal(second) {
			k := f.Kind
			if k == "catchup" {
				k = "slot"
			}
			kinds[f.Slot] = k + "/" + f.Reason
		}
	}
	want := map[time.Time]string{noon: "slot/", second: "slot/"}
	switch i % 10 {
	case 0:
		want = map[time.Time]string{noon: "skipped/suspended", second: "skipped/suspended"}
	case 1:
		want[second] = fmt.Sprintf("skipped/previous run %s is queued (overlap: forbid)", SlotID(fmt.Sprintf("b-%03d", i), noon))
	}
	for slot, w := range want {
		if kinds[slot] != w {
			return fmt.Sprintf("slot %s recorded %q, want %q (history %+v)", slot.Format(time.TimeOnly), kinds[slot], w, hist)
		}
	}
	return ""
}

// The state writer stores its changes by compare-and-set: a write that
// finds the key moved (here a CLI trigger's record) reads it again and
// re-applies its changes in the next round, keeping both.
func TestStateWriterReappliesAfterAConflict(t *testing.T) {
	t.Parallel()
	st := sandruntest.Store(t, sandruntest.Server(t, "").ClientURL())
	ctx := sandruntest.Ctx(t)
	cat := NewCatalog(st)
	slot := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if err := SetLastSlot(ctx, cat, "tick", slot); err != nil {
		t.Fatal(err)
	}
	stored, rev, err := cat.state(ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	w := newStateWriter(st.JS, cat, sandruntest.Logger(t))
	w.track("tick", stored, rev)
	// Another writer moves the key after the leader read it.
	if err := cat.updateState(ctx, "tick", func(s *State) {
		s.record(Fire{Slot: slot, At: slot, JobID: "manual", Kind: "trigger"})
	}); err != nil {
		t.Fatal(err)
	}
	next := slot.Add(time.Second)
	w.add("tick", func(s *State) {
		s.LastSlot, s.LastJob = next, SlotID("tick", next)
		s.record(Fire{Slot: next, At: next, JobID: SlotID("tick", next), Kind: "slot"})
	})
	if retry := w.round(ctx); !retry {
		t.Fatal("a write over a moved key reported stored")
	}
	if retry := w.round(ctx); retry {
		t.Fatal("the re-applied write failed")
	}
	got, err := cat.State(ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastSlot.Equal(next) || got.LastJob != SlotID("tick", next) || len(got.History) != 2 ||
		got.History[0].Kind != "trigger" || got.History[1].Kind != "slot" {
		t.Fatalf("state %+v: want the trigger's record, then the slot's", got)
	}
	if w.unsaved() != 0 {
		t.Fatalf("%d schedules left unsaved", w.unsaved())
	}
}
