package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// A batch's progress is counted by the server, not read item by item:
// when a batch item's end is committed, its worker writes one marker,
// bdone.<batch>.<state>.<index>, in the state bucket. A marker's key is
// all there is to count; the server counts the keys that match
// bdone.<batch>.* (every ended item) or bdone.<batch>.<state>.* (one
// state) in one request (a consumer's pending count), whatever the
// batch's size.
//
// Exactly once, from the commits: a marker is written only after the
// commit that ends its item succeeded, and only by its writer (a stale
// holder's commit is fenced, so it writes none); writing it again (a
// retried write, a repair) rewrites the same key, which the bucket holds
// once. A worker that dies between its commit and the marker leaves its
// lease to expire, and the reaper that sees the expiry writes the marker
// (Store.MarkBatchEnd is idempotent). A rerun removes the item's marker
// when it opens the item again, and the rerun's end removes markers of
// other states before it writes its own.

// BatchEnd is what a batch item's end marker holds: enough to report the
// item's end without reading its record.
type BatchEnd struct {
	Attempt    int       `json:"attempt"`
	ExitCode   int       `json:"exit_code"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at"`
}

// TerminalStates lists the states a job ends in.
var TerminalStates = []State{StateSucceeded, StateFailed, StateTimedOut, StateDenied, StateCanceled, StateDead}

// BatchEndKey is the end marker of the item of batch whose job ID ends in
// suffix (its index, as BatchItemID writes it).
func BatchEndKey(batch string, state State, suffix string) string {
	return "bdone." + batch + "." + string(state) + "." + suffix
}

// BatchEndsFilter matches the end markers of batch's items that ended in
// state, or of every item that ended when state is "".
func BatchEndsFilter(batch string, state State) string {
	if state == "" {
		return "bdone." + batch + ".*.*"
	}
	return "bdone." + batch + "." + string(state) + ".*"
}

// ParseBatchEndKey splits an end marker's key.
func ParseBatchEndKey(key string) (batch string, state State, suffix string, ok bool) {
	rest, ok := strings.CutPrefix(key, "bdone.")
	if !ok {
		return "", "", "", false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 || !State(parts[1]).Terminal() {
		return "", "", "", false
	}
	return parts[0], State(parts[1]), parts[2], true
}

// BatchItemOf names the batch of a job that is a batch item (its labels
// name the batch and its ID is the batch's) and the suffix of its ID.
func BatchItemOf(spec Spec) (batch, suffix string, ok bool) {
	batch = spec.Labels[LabelBatch]
	if batch == "" {
		return "", "", false
	}
	suffix, ok = strings.CutPrefix(spec.ID, batch+".")
	if !ok || suffix == "" || strings.Contains(suffix, ".") {
		return "", "", false
	}
	if _, ok := BatchItemIndex(batch, spec.ID); !ok {
		return "", "", false
	}
	return batch, suffix, true
}

// MarkBatchEnd writes the end marker of run, a batch item whose end is
// committed (its Result set), and reports whether run is a batch item.
// Writing it again is harmless. A rerun item (Reruns > 0) first loses the
// markers of its earlier ends, so that it is counted once, as it ended
// last.
func (s *Store) MarkBatchEnd(ctx context.Context, run Run) (bool, error) {
	batch, suffix, ok := BatchItemOf(run.Spec)
	if !ok || run.Result == nil || !run.Result.State.Terminal() {
		return false, nil
	}
	r := run.Result
	if run.Reruns > 0 {
		if err := s.unmarkOthers(ctx, batch, suffix, r.State); err != nil {
			return true, err
		}
	}
	data, err := json.Marshal(BatchEnd{Attempt: r.Attempt, ExitCode: r.ExitCode, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt})
	if err != nil {
		return true, err
	}
	key := BatchEndKey(batch, r.State, suffix)
	ttl := s.Retention.For(run.Spec.Queue, r.State)
	return true, s.write(ctx, "write "+key, func(ctx context.Context, _ int) error {
		if ttl <= 0 {
			_, err := s.State.Put(ctx, key, data)
			return err
		}
		m := newKVMsg(s.State.Bucket(), key, data)
		_, err := s.JS.PublishMsg(ctx, m, jetstream.WithMsgTTL(ttl))
		return err
	})
}

// UnmarkBatchEnd removes every end marker of batch item spec (a rerun
// opens it again).
func (s *Store) UnmarkBatchEnd(ctx context.Context, spec Spec) error {
	batch, suffix, ok := BatchItemOf(spec)
	if !ok {
		return nil
	}
	return s.unmarkOthers(ctx, batch, suffix, "")
}

// unmarkOthers removes the end markers of an item in every state but
// keep. It purges the stream's messages rather than deleting the keys: a
// delete leaves a marker message that the counts would count.
func (s *Store) unmarkOthers(ctx context.Context, batch, suffix string, keep State) error {
	st, err := s.Stream(ctx, "KV_"+s.State.Bucket())
	if err != nil {
		return err
	}
	for _, state := range TerminalStates {
		if state == keep {
			continue
		}
		subj := "$KV." + s.State.Bucket() + "." + BatchEndKey(batch, state, suffix)
		err := s.write(ctx, "write "+subj, func(ctx context.Context, _ int) error {
			return st.Purge(ctx, jetstream.WithPurgeSubject(subj))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// BatchCounts is what the server counts of a batch: its items that ended,
// by state, and the items that have a record (claimed at least once).
type BatchCounts struct {
	Ended    map[State]int
	Recorded int
}

// Done is the number of items that ended.
func (c BatchCounts) Done() int {
	n := 0
	for _, v := range c.Ended {
		n += v
	}
	return n
}

// CountBatch counts batch's items that ended, by state, and those that
// have a record: a fixed number of requests (one per state and one for
// the records), answered by the server from its subject index, whatever
// the batch's size.
func (s *Store) CountBatch(ctx context.Context, batch string) (BatchCounts, error) {
	c := BatchCounts{Ended: map[State]int{}}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for _, state := range TerminalStates {
		g.Go(func() error {
			n, err := s.CountKeys(gctx, BatchEndsFilter(batch, state))
			if n > 0 {
				mu.Lock()
				c.Ended[state] = n
				mu.Unlock()
			}
			return err
		})
	}
	g.Go(func() error {
		n, err := s.CountKeys(gctx, RunKey(batch+".*"))
		c.Recorded = n
		return err
	})
	return c, g.Wait()
}

// CountKeys returns how many keys of the state bucket match filter, as the
// server counts them: the pending count of a consumer that is created for
// the question and deleted after it. A key that was deleted through the
// KV API still counts (its delete marker is a message) until the marker
// goes; the keys counted here are removed by purges, which leave none.
func (s *Store) CountKeys(ctx context.Context, filter string) (int, error) {
	stream := "KV_" + s.State.Bucket()
	var c jetstream.Consumer
	// Each try has its own deadline (retry's): a request a cluster drops
	// while a node restarts is asked again, not waited on until ctx ends.
	err := retry(ctx, DefaultWriteWithin, Transient, nil, "count "+filter, func(ctx context.Context, _ int) error {
		var err error
		c, err = s.JS.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
			FilterSubject: "$KV." + s.State.Bucket() + "." + filter,
			AckPolicy:     jetstream.AckNonePolicy,
			// The bucket keeps one message per key (History 1), so
			// every message counts a key; DeliverAll is the server's
			// cheap count (the subject index's totals), where
			// last-per-subject would look up every key's last message.
			DeliverPolicy:     jetstream.DeliverAllPolicy,
			InactiveThreshold: 10 * time.Second,
			MemoryStorage:     true,
			Replicas:          1,
		})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", filter, err)
	}
	n := int(c.CachedInfo().NumPending)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Left behind if this fails: its inactivity threshold removes it.
	_ = s.JS.DeleteConsumer(dctx, stream, c.CachedInfo().Name)
	return n, nil
}

// newKVMsg is a message that puts data at key of bucket.
func newKVMsg(bucket, key string, data []byte) *nats.Msg {
	m := nats.NewMsg("$KV." + bucket + "." + key)
	m.Data = data
	return m
}

// ReopenBatch clears the completion of the batch that spec is an item of,
// when an item is run again.
func (s *Store) ReopenBatch(ctx context.Context, spec Spec) error {
	batch, _, ok := BatchItemOf(spec)
	if !ok {
		return nil
	}
	for {
		e, err := s.State.Get(ctx, BatchKey(batch))
		if err != nil {
			return fmt.Errorf("reopen batch %s: %w", batch, err)
		}
		var b Batch
		if err := json.Unmarshal(e.Value(), &b); err != nil {
			return fmt.Errorf("batch record %s: %w", batch, err)
		}
		if b.Completed == nil {
			return nil
		}
		b.Completed = nil
		data, err := json.Marshal(b)
		if err != nil {
			return err
		}
		_, err = s.State.Update(ctx, BatchKey(batch), data, e.Revision())
		if conflict := errors.Is(err, jetstream.ErrKeyRevisionMismatch) || IsExists(err); !conflict {
			return err
		}
	}
}
