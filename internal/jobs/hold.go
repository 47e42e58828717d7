package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// A throttled batch's items that find every run slot taken wait on the
// server, not in a lane's window of delivered-but-unacknowledged messages
// (which, once full, would stop the lane's other jobs from being
// delivered): the worker moves the message to its batch's hold subject,
// sandrun.jobs.hold.<batch>, which no lane consumes, and acknowledges it.
// Whoever frees one of the batch's slots moves one held message back to
// the lane it came from; the reaper leader moves some back at each pass,
// in case a wake-up was missed. Only workers publish there: a submitter's
// permissions reach its own lane subjects alone.

// HeaderLane names the lane subject a held message came from.
const HeaderLane = "Sandrun-Lane"

// HoldSubject is where a throttled batch's waiting items are held.
func HoldSubject(batch string) string { return subjectJobs + "hold." + batch }

// HoldFilter matches every batch's hold subject.
const HoldFilter = subjectJobs + "hold.*"

// HeldBatch names the batch of a hold subject.
func HeldBatch(subject string) (string, bool) {
	b, ok := strings.CutPrefix(subject, subjectJobs+"hold.")
	return b, ok && b != "" && !strings.Contains(b, ".")
}

// Hold moves a job message that came on lane to batch's hold subject. The
// caller then acknowledges the original.
func (s *Store) Hold(ctx context.Context, batch, lane string, data []byte) error {
	if err := CheckBatchID(batch); err != nil {
		return err
	}
	m := nats.NewMsg(HoldSubject(batch))
	m.Header.Set(HeaderLane, lane)
	m.Data = data
	msgID := "hold." + nuid.Next()
	return s.write(ctx, "dispatch hold "+batch, func(ctx context.Context, _ int) error {
		_, err := s.JS.PublishMsg(ctx, m, jetstream.WithMsgID(msgID))
		return err
	})
}

// holdConsumer is the durable consumer of batch's held messages, shared
// by every worker; it goes by itself an hour after its last use.
func (s *Store) holdConsumer(ctx context.Context, batch string) (jetstream.Consumer, error) {
	return s.JS.CreateOrUpdateConsumer(ctx, StreamJobs, jetstream.ConsumerConfig{
		Durable:           "hold-" + batch,
		Description:       "sandrun: held items of throttled batch " + batch,
		FilterSubject:     HoldSubject(batch),
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           30 * time.Second,
		MaxDeliver:        -1,
		InactiveThreshold: time.Hour,
	})
}

// Unhold moves up to n of batch's held messages back to their lanes and
// returns how many it moved. A message whose lane header is missing or
// not a lane is dropped (only workers hold messages; it cannot be one of
// theirs).
func (s *Store) Unhold(ctx context.Context, batch string, n int) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	c, err := s.holdConsumer(ctx, batch)
	if err != nil {
		return 0, fmt.Errorf("hold consumer %s: %w", batch, err)
	}
	msgs, err := c.FetchNoWait(n)
	if err != nil {
		return 0, err
	}
	moved := 0
	var errs []error
	for m := range msgs.Messages() {
		lane := m.Headers().Get(HeaderLane)
		if _, _, _, ok := ParseJobSubject(lane); !ok {
			_ = m.Term()
			continue
		}
		back := nats.NewMsg(lane)
		back.Data = m.Data()
		msgID := "unhold." + nuid.Next()
		err := s.write(ctx, "dispatch unhold "+batch, func(ctx context.Context, _ int) error {
			_, err := s.JS.PublishMsg(ctx, back, jetstream.WithMsgID(msgID))
			return err
		})
		if err != nil {
			_ = m.Nak()
			errs = append(errs, err)
			continue
		}
		_ = m.DoubleAck(ctx)
		moved++
	}
	if err := msgs.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
		errs = append(errs, err)
	}
	return moved, errors.Join(errs...)
}

// HeldBatches returns the batches that have held messages, with how many.
func (s *Store) HeldBatches(ctx context.Context) (map[string]uint64, error) {
	st, err := s.Stream(ctx, StreamJobs)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(HoldFilter))
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		if b, ok := HeldBatch(subj); ok && n > 0 {
			out[b] = n
		}
	}
	return out, nil
}
