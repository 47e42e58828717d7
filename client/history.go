package client

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// HistoryEntry is one ending of a job, as the history export writes it:
// the record its terminal write stored (secrets redacted), and where in
// the jobstate stream that write is (Seq: an export resumes after the
// last one it wrote).
type HistoryEntry struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Run  jobs.Run  `json:"run"`
}

// History calls fn with every job ending stored after sequence after
// (0: from the oldest retained), in the order they were written. It
// returns at the end of what is stored, or, with follow, goes on with new
// endings until ctx ends. A job run again (a rerun, a batch retry) ends
// again: each ending is an entry.
//
// The history outlives retention only if it is read faster than records
// expire: an export that falls behind by more than the shortest
// retention misses what expired meanwhile.
func (c *Client) History(ctx context.Context, after uint64, follow bool, fn func(HistoryEntry) error) error {
	return c.walkRecords(ctx, after+1, 0, follow, func(seq uint64, at time.Time, run jobs.Run) (bool, error) {
		if !run.State.Terminal() {
			return true, nil
		}
		return true, fn(HistoryEntry{Seq: seq, Time: at.UTC(), Run: run})
	})
}

// walkRecords calls fn with each job record stored in the jobstate stream
// at sequences from (at least 1) up to until (0: no bound), oldest first,
// its spec redacted;
// removals, expiry markers and what does not decode are skipped (one
// ordered consumer: the server skips what was replaced or removed). It
// returns when fn says no more, at until, at the end of what is stored, or, with
// follow, when ctx ends.
func (c *Client) walkRecords(ctx context.Context, from, until uint64, follow bool, fn func(seq uint64, at time.Time, run jobs.Run) (more bool, err error)) error {
	cons, err := c.store.JS.OrderedConsumer(ctx, "KV_"+jobs.BucketState, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + jobs.BucketState + "." + jobs.RunKey(">")},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    max(from, 1),
	})
	if err != nil {
		return err
	}
	for {
		var batch jetstream.MessageBatch
		if follow {
			batch, err = cons.Fetch(512, jetstream.FetchMaxWait(time.Second))
		} else {
			batch, err = cons.FetchNoWait(512)
		}
		if err != nil {
			return err
		}
		n, last := 0, false
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			last = md.NumPending == 0
			if until > 0 && md.Sequence.Stream >= until {
				return nil
			}
			if c.onRecord != nil {
				c.onRecord(md.Sequence.Stream)
			}
			if len(m.Data()) == 0 || m.Headers().Get("KV-Operation") != "" || m.Headers().Get(jetstream.MarkerReasonHeader) != "" {
				continue // a removal or an expiry's marker
			}
			var run jobs.Run
			if json.Unmarshal(m.Data(), &run) != nil {
				continue
			}
			run.Spec = run.Spec.Redacted()
			if more, err := fn(md.Sequence.Stream, md.Timestamp, run); err != nil || !more {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			if follow && ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !follow && (n == 0 || last) {
			return nil
		}
		if follow && ctx.Err() != nil {
			return nil
		}
	}
}
