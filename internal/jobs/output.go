package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// outputChunk is the size of one message of stored output.
const outputChunk = 128 << 10

// PutOutput stores an attempt's output stream from r under subject (see
// OutputSubject), as chunks that the server removes after ttl: the
// retention of the state the job ends in. The chunks are published
// without waiting for each other, and each carries an ID so that a retry
// is not a second copy; PutOutput returns once all are stored.
func (s *Store) PutOutput(ctx context.Context, subject string, r io.Reader, ttl time.Duration) (int64, error) {
	var futures []jetstream.PubAckFuture
	var n int64
	buf := make([]byte, outputChunk)
	for i := 0; ; i++ {
		k, err := io.ReadFull(r, buf)
		if k > 0 {
			m := nats.NewMsg(subject)
			m.Data = append([]byte(nil), buf[:k]...)
			opts := []jetstream.PublishOpt{jetstream.WithMsgID(subject + "#" + strconv.Itoa(i))}
			if ttl > 0 {
				opts = append(opts, jetstream.WithMsgTTL(ttl))
			}
			f, perr := s.JS.PublishMsgAsync(m, opts...)
			if perr != nil {
				return n, fmt.Errorf("output %s: %w", subject, perr)
			}
			futures = append(futures, f)
			n += int64(k)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("output %s: read: %w", subject, err)
		}
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return n, fmt.Errorf("output %s: %w", subject, err)
		case <-ctx.Done():
			return n, ctx.Err()
		}
	}
	return n, nil
}

// ErrOutputGone is returned by ReadOutput for output the server no
// longer holds all of: its retention has passed, or the outputs stream's
// byte limit pushed it out.
var ErrOutputGone = errors.New("output no longer stored (its retention passed, or newer output pushed it out of the outputs stream)")

// ReadOutput copies the size bytes stored under subject to w, chunk by
// chunk (direct gets of the subject's next message). A committed result
// names the output, so a first chunk "not found" is a replica behind
// the leader, and is tried again for a few seconds.
func (s *Store) ReadOutput(ctx context.Context, subject string, size int64, w io.Writer) error {
	st, err := s.Stream(ctx, StreamOutputs)
	if err != nil {
		return fmt.Errorf("output %s: %w", subject, err)
	}
	var seq uint64 = 1
	var got int64
	for got < size {
		get := func() (*jetstream.RawStreamMsg, error) {
			m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
			}
			return m, err
		}
		var m *jetstream.RawStreamMsg
		if got == 0 {
			m, err = untilFound(ctx, get)
		} else {
			m, err = get()
		}
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("output %s: %d of %d bytes: %w", subject, got, size, ErrOutputGone)
		}
		if err != nil {
			return fmt.Errorf("output %s: %w", subject, err)
		}
		if _, err := w.Write(m.Data); err != nil {
			return err
		}
		got += int64(len(m.Data))
		seq = m.Sequence + 1
	}
	return nil
}
