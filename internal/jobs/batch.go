package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A batch is many jobs submitted as one: items are ordinary jobs whose IDs
// are BATCH.INDEX (so that re-submitting the same batch creates nothing
// twice, and a batch's records are one key token apart: run.BATCH.*) and
// whose labels name the batch and the index.
const (
	LabelBatch      = "sandrun_batch"
	LabelBatchIndex = "sandrun_batch_index"
	// LabelBatchTotal and LabelBatchMaxParallel carry the batch's size
	// and bound on every item: the worker that first claims an item
	// writes the batch record from them (submitters write no record).
	LabelBatchTotal       = "sandrun_batch_total"
	LabelBatchMaxParallel = "sandrun_batch_max_parallel"
	// MaxBatchIDLen leaves room in a job ID for the item index.
	MaxBatchIDLen = 100
)

var batchIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// Batch is a batch's record, stored under BatchKey.
type Batch struct {
	ID string `json:"id"`
	// Owner is the ORIGIN.NAME whose items made the batch: items of
	// another owner are refused.
	Owner     string            `json:"owner,omitempty"`
	Total     int               `json:"total"`
	Queue     string            `json:"queue,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	// MaxParallel bounds how many items run at once across all workers
	// (0: no bound). Workers hold one of MaxParallel slot leases
	// (BatchSlotKey) while an item runs.
	MaxParallel int `json:"max_parallel,omitempty"`
	// Completed is set when every item has ended (see batch_completed
	// events); a rerun of items makes the batch open again.
	Completed *BatchCompletion `json:"completed,omitempty"`
}

// BatchCompletion records that a batch's items had all ended.
type BatchCompletion struct {
	// At is when the completion was announced; LastFinished is the
	// latest item end it saw, which tells a later completion (after a
	// rerun) from this one.
	At           time.Time     `json:"at"`
	LastFinished time.Time     `json:"last_finished"`
	Counts       map[State]int `json:"counts"`
}

// BatchSlotKey is the key of one of a throttled batch's run slots.
func BatchSlotKey(batch string, slot int) string { return fmt.Sprintf("bslot.%s.%d", batch, slot) }

// BatchKey is the key of a batch's record in the jobstate bucket.
func BatchKey(id string) string { return "batch." + id }

// BatchItemID is the job ID of a batch's item.
func BatchItemID(batch string, index int) string { return fmt.Sprintf("%s.%06d", batch, index) }

// BatchItemIndex returns the index of a batch item's job ID.
func BatchItemIndex(batch, id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, batch+".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// CheckBatchID reports an ID a batch cannot have.
func CheckBatchID(id string) error {
	if !batchIDRE.MatchString(id) {
		return fieldErr("batch.id", "must be 1-%d characters of A-Z a-z 0-9 _ -, got %q", MaxBatchIDLen, id)
	}
	return nil
}

// PutBatch creates a batch's record. A record already there for the same
// batch (a re-submit) is kept if it agrees on the item count.
func (s *Store) PutBatch(ctx context.Context, b Batch) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	err = s.write(ctx, "create "+BatchKey(b.ID), func(ctx context.Context, _ int) error {
		_, err := s.State.Create(ctx, BatchKey(b.ID), data)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyExists) {
		old, gerr := s.GetBatch(ctx, b.ID)
		if gerr != nil {
			return gerr
		}
		if old.Total != b.Total {
			return fmt.Errorf("batch %s exists with %d items, not %d: %w", b.ID, old.Total, b.Total, ErrExists)
		}
		return nil
	}
	return err
}

// BatchOf returns the batch record an item's labels describe, owned by
// owner, or false for a job that is not a batch item.
func BatchOf(spec Spec, owner string, now time.Time) (Batch, bool) {
	id := spec.Labels[LabelBatch]
	if id == "" {
		return Batch{}, false
	}
	total, _ := strconv.Atoi(spec.Labels[LabelBatchTotal])
	maxPar, _ := strconv.Atoi(spec.Labels[LabelBatchMaxParallel])
	return Batch{ID: id, Owner: owner, Total: total, Queue: spec.Queue, CreatedAt: now, MaxParallel: max(maxPar, 0)}, true
}

// GetBatch reads a batch's record.
func (s *Store) GetBatch(ctx context.Context, id string) (Batch, error) {
	e, err := s.State.Get(ctx, BatchKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Batch{}, fmt.Errorf("batch %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Batch{}, err
	}
	var b Batch
	if err := json.Unmarshal(e.Value(), &b); err != nil {
		return Batch{}, fmt.Errorf("batch record %s: %w", id, err)
	}
	return b, nil
}

// PublishJobAsync starts the dispatch of a validated spec as owner's
// without waiting (deduplicated by msgID); the future resolves when
// JetStream has stored it. The job record is the claiming worker's to
// write.
func (s *Store) PublishJobAsync(spec Spec, owner, msgID string) (jetstream.PubAckFuture, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return s.JS.PublishAsync(LaneSubject(spec.Queue, spec.Backend, owner), data, jetstream.WithMsgID(msgID))
}

// IsExists reports whether a record write failed because the record
// already existed.
func IsExists(err error) bool { return isWrongLastSequence(err) || errors.Is(err, ErrExists) }
