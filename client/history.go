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
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + jobs.BucketState + "." + jobs.RunKey(">")},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := c.store.JS.OrderedConsumer(ctx, "KV_"+jobs.BucketState, cfg)
	if err != nil {
		return err
	}
	for {
		wait := jetstream.FetchMaxWait(time.Second)
		batch, err := cons.Fetch(512, wait)
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
			if m.Headers().Get("KV-Operation") != "" || m.Headers().Get(jetstream.MarkerReasonHeader) != "" {
				continue
			}
			var run jobs.Run
			if json.Unmarshal(m.Data(), &run) != nil || !run.State.Terminal() {
				continue
			}
			run.Spec = run.Spec.Redacted()
			if err := fn(HistoryEntry{Seq: md.Sequence.Stream, Time: md.Timestamp.UTC(), Run: run}); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			if ctx.Err() != nil && follow {
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
