package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/lease"
)

// A batch's max_parallel is a set of slot leases, bslot.<batch>.0 ..
// bslot.<batch>.<N-1>, in the jobstate bucket. A worker takes one before
// it claims an item and holds it, renewed like the job's lease, until the
// item's command has ended; a worker that dies loses it with the TTL. An
// item that finds every slot taken goes back to the queue with a delay
// and no attempt counted, so the bound holds across all workers however
// many pull the batch's items.

const (
	// batchLimitTTL is how long a batch's max_parallel is cached.
	batchLimitTTL = 10 * time.Second
	// throttleRecheckMax bounds the delay before a throttled item is
	// offered again.
	throttleRecheckMax = 5 * time.Second
	// maxSlotProbes bounds the slot keys tried per claim (large limits).
	maxSlotProbes = 32
)

// batchLimits caches each batch's max_parallel.
type batchLimits struct {
	mu sync.Mutex
	m  map[string]batchLimit
}

type batchLimit struct {
	max, total int
	at         time.Time
}

// batchLimit returns batch's max_parallel (0: none), from the cache when
// fresh. A bound of at least the batch's size can never bind: it is none.
func (w *Worker) batchLimit(ctx context.Context, spec jobs.Spec, batch string) (int, error) {
	c := &w.limits
	now := w.now()
	c.mu.Lock()
	l, ok := c.m[batch]
	c.mu.Unlock()
	if ok && now.Sub(l.at) < batchLimitTTL {
		return l.bound(), nil
	}
	b, err := w.store.GetBatch(ctx, batch)
	if errors.Is(err, jobs.ErrNotFound) {
		// No item claimed yet: the bound its labels carry.
		b, _ = jobs.BatchOf(spec, "", now)
	} else if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]batchLimit{}
	}
	if len(c.m) > 10_000 { // old batches: start over rather than grow
		clear(c.m)
	}
	l = batchLimit{max: b.MaxParallel, total: b.Total, at: now}
	c.m[batch] = l
	c.mu.Unlock()
	return l.bound(), nil
}

// bound is the limit that can bind: 0 when there is none, or when it is
// at least the batch's size (all its items may run at once anyway, and
// taking slots would cost writes for nothing).
func (l batchLimit) bound() int {
	if l.total > 0 && l.max >= l.total {
		return 0
	}
	return l.max
}

// batchSlot is a held run slot of a throttled batch (or a workspace's
// lock, which has no w and no batch).
type batchSlot struct {
	w      *Worker
	batch  string
	lease  *lease.Lease
	keeper *lease.Keeper
	once   sync.Once
}

// takeBatchSlot returns a run slot for spec when its batch is throttled:
// (nil, false) when it is not, (nil, true) when every slot is taken.
func (w *Worker) takeBatchSlot(ctx context.Context, spec jobs.Spec) (*batchSlot, bool, error) {
	batch := spec.Labels[jobs.LabelBatch]
	if batch == "" {
		return nil, false, nil
	}
	n, err := w.batchLimit(ctx, spec, batch)
	if err != nil || n <= 0 {
		return nil, false, err
	}
	idx, _ := jobs.BatchItemIndex(batch, spec.ID)
	holder, _ := json.Marshal(map[string]string{"worker": w.cfg.Name, "job": spec.ID})
	for i := range min(n, maxSlotProbes) {
		k := (idx + i) % n
		if i > 0 && n > maxSlotProbes {
			k = rand.IntN(n)
		}
		l, err := lease.Acquire(ctx, w.store.JS, w.store.State, jobs.BatchSlotKey(batch, k), w.cfg.LeaseTTL, holder)
		if errors.Is(err, lease.ErrHeld) {
			continue
		}
		if err != nil {
			return nil, true, err
		}
		return &batchSlot{w: w, batch: batch, lease: l, keeper: lease.Keep(l, lease.KeeperConfig{})}, true, nil
	}
	return nil, true, nil
}

// release gives the slot back (idempotent; nil-safe).
func (s *batchSlot) release(ctx context.Context) {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.keeper.Stop()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = s.lease.Release(rctx)
		// A batch's freed slot wakes one of its held items. (A
		// workspace's lock is a slot of this kind too, with no batch.)
		if s.w == nil || s.batch == "" {
			return
		}
		if _, err := s.w.store.Unhold(rctx, s.batch, 1); err != nil {
			s.w.log.Warn("throttle: move a held item back", "batch", s.batch, "err", err)
		}
	})
}

// hold moves a throttled item's message to its batch's hold subject and
// acknowledges it, so that it waits on the server instead of in the
// lane's window of delivered messages. A slot freed meanwhile would have
// found nothing held to wake: if one is free now, one held item is moved
// back at once. A message that cannot be held goes back to the lane after
// a delay, as before.
func (w *Worker) hold(ctx context.Context, msg jetstream.Msg, spec jobs.Spec) {
	batch := spec.Labels[jobs.LabelBatch]
	if err := w.store.Hold(ctx, batch, msg.Subject(), msg.Data()); err != nil {
		w.log.Warn("throttle: hold an item", "job", spec.ID, "err", err)
		_ = msg.NakWithDelay(throttleDelay(msg))
		return
	}
	_ = msg.DoubleAck(ctx)
	slot, _, err := w.takeBatchSlot(ctx, spec)
	if err != nil || slot == nil {
		return
	}
	slot.release(ctx) // frees the slot, and wakes a held item
}

// wakeHeld moves back, for each batch with held items, as many as its
// bound: the reaper's pass, for wake-ups that were missed (a worker that
// died holding slots, a slot freed while an item was being held). Items
// that still find no slot are held again.
func (w *Worker) wakeHeld(ctx context.Context) {
	held, err := w.store.HeldBatches(ctx)
	if err != nil {
		w.log.Warn("throttle: list held items", "err", err)
		return
	}
	for batch, n := range held {
		if ctx.Err() != nil {
			return
		}
		b, err := w.store.GetBatch(ctx, batch)
		if err != nil {
			continue
		}
		if _, err := w.store.Unhold(ctx, batch, min(int(n), max(b.MaxParallel, 1))); err != nil {
			w.log.Warn("throttle: move held items back", "batch", batch, "err", err)
		}
	}
}

// lost is closed if the slot's lease is lost (nil-safe: never).
func (s *batchSlot) lost() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.keeper.Lost()
}

// throttleDelay is how long a throttled item waits before it is offered
// again: 250ms doubling with each delivery up to throttleRecheckMax,
// jittered so that waiting items do not come back together.
func throttleDelay(msg jetstream.Msg) time.Duration {
	n := uint64(1)
	if md, err := msg.Metadata(); err == nil {
		n = max(md.NumDelivered, 1)
	}
	d := min(250*time.Millisecond<<min(n-1, 5), throttleRecheckMax)
	return d/2 + rand.N(d/2+1)
}

// errForeignBatch refuses an item whose batch ID is another owner's.
var errForeignBatch = errors.New("the batch is another submitter's")

// ensureBatch writes the record of the batch spec is an item of, at the
// item's first claim (once per batch and worker: known batches are
// remembered), and refuses an item of another owner's batch.
func (w *Worker) ensureBatch(ctx context.Context, spec jobs.Spec, owner string) error {
	b, ok := jobs.BatchOf(spec, owner, w.now().UTC())
	if !ok {
		return nil
	}
	c := &w.batchOwners
	c.mu.Lock()
	known, seen := c.m[b.ID]
	c.mu.Unlock()
	if !seen {
		err := w.store.PutBatch(ctx, b)
		if err != nil && !errors.Is(err, jobs.ErrExists) {
			return err
		}
		rec, gerr := w.store.GetBatch(ctx, b.ID)
		if gerr != nil {
			return gerr
		}
		known = rec.Owner
		c.mu.Lock()
		if c.m == nil || len(c.m) > 10_000 {
			c.m = map[string]string{}
		}
		c.m[b.ID] = known
		c.mu.Unlock()
	}
	if known != "" && known != owner {
		return fmt.Errorf("%w: %q belongs to %s, this item came from %s", errForeignBatch, b.ID, known, owner)
	}
	return nil
}
