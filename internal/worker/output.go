package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sandrun/sandrun/internal/jobs"
)

// liveFlushDelay batches live output: a chunk is published at most this
// long after its first byte was written.
const liveFlushDelay = 50 * time.Millisecond

// liveChunk is the largest live output event.
const liveChunk = 64 << 10

// sink receives one output stream of an attempt. It keeps a bounded head
// and tail for the result, spools everything to a file for the object
// store, and publishes live chunks for `logs -f`. Nothing is allocated or
// opened until the first byte arrives, so silent jobs cost nothing.
type sink struct {
	w      *Worker
	j      *job
	stream string

	mu       sync.Mutex
	size     int64
	sum      hash.Hash
	head     []byte
	tail     []byte
	spool    *os.File
	spoolErr error
	spooled  int64 // bytes written to the spool (at most output_max)
	capped   bool  // output past output_max was not kept

	live      []byte
	liveSent  int64
	liveTimer *time.Timer
	liveCut   bool
}

func newSink(w *Worker, j *job, stream string) *sink {
	return &sink{w: w, j: j, stream: stream}
}

// Write implements io.Writer. It never fails: a spool error is recorded
// and reported in the result instead of failing the job.
func (s *sink) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sum == nil {
		s.sum = sha256.New()
	}
	s.size += int64(len(p))
	s.sum.Write(p)
	if room := s.w.cfg.OutputHead - len(s.head); room > 0 {
		s.head = append(s.head, p[:min(room, len(p))]...)
	}
	if tmax := s.w.cfg.OutputTail; tmax > 0 {
		s.tail = append(s.tail, p...)
		if len(s.tail) > 2*tmax {
			s.tail = append(s.tail[:0], s.tail[len(s.tail)-tmax:]...)
		}
	}
	s.writeSpool(p)
	s.writeLive(p)
	return len(p), nil
}

func (s *sink) writeSpool(p []byte) {
	if s.spoolErr != nil || s.capped {
		return
	}
	if s.spool == nil {
		s.spool, s.spoolErr = os.CreateTemp(s.w.cfg.SpoolDir, "sandrun-"+s.j.spec.ID+"-"+s.stream+"-*")
		if s.spoolErr != nil {
			return
		}
	}
	if room := s.w.cfg.OutputMax - s.spooled; int64(len(p)) > room {
		p, s.capped = p[:max(room, 0)], true
	}
	n, err := s.spool.Write(p)
	s.spooled += int64(n)
	s.spoolErr = err
}

func (s *sink) writeLive(p []byte) {
	if s.liveCut {
		return
	}
	if s.liveSent+int64(len(s.live)+len(p)) > s.w.cfg.LiveOutputMax {
		s.live = append(s.live, fmt.Sprintf("\n[sandrun: live %s cut at %d bytes; the full output is kept when the job ends]\n", s.stream, s.w.cfg.LiveOutputMax)...)
		s.liveCut = true
		s.flushLiveLocked()
		return
	}
	s.live = append(s.live, p...)
	if len(s.live) >= liveChunk {
		s.flushLiveLocked()
		return
	}
	if s.liveTimer == nil {
		s.liveTimer = time.AfterFunc(liveFlushDelay, s.flushLive)
	}
}

// flushLive publishes buffered live output now.
func (s *sink) flushLive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLiveLocked()
}

func (s *sink) flushLiveLocked() {
	if s.liveTimer != nil {
		s.liveTimer.Stop()
		s.liveTimer = nil
	}
	for len(s.live) > 0 {
		n := min(len(s.live), liveChunk)
		s.w.store.PublishOutput(s.j.spec.ID, s.j.attempt, s.stream, append([]byte(nil), s.live[:n]...))
		s.liveSent += int64(n)
		s.live = s.live[n:]
	}
	s.live = nil
}

// upload stores the full output, kept for ttl (the retention of the
// state the job ends in), and returns its description for the result.
// Upload errors are reported in the result, not fatal: the head and
// tail are still there.
func (s *sink) upload(ctx context.Context, ttl time.Duration) jobs.Output {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := jobs.Output{Size: s.size}
	if s.size == 0 {
		return out
	}
	out.SHA256 = hex.EncodeToString(s.sum.Sum(nil))
	head, tail := s.head, s.tail
	if int64(len(head)) >= s.size {
		tail = nil
	} else {
		keep := min(int64(len(tail)), s.size-int64(len(head)), int64(s.w.cfg.OutputTail))
		tail = tail[int64(len(tail))-keep:]
	}
	out.Head = strings.ToValidUTF8(string(head), "\uFFFD")
	out.Tail = strings.ToValidUTF8(string(tail), "\uFFFD")
	out.Truncated = int64(len(head)+len(tail)) < s.size
	if s.capped {
		out.Capped, out.Stored = true, s.spooled
	}
	if !out.Truncated && tail == nil && utf8.Valid(head) {
		// Small output travels inside the result: no object to write,
		// and nothing to read back but the record.
		return out
	}
	if s.spoolErr != nil {
		s.w.log.Warn("output spool failed; only head and tail are kept", "job", s.j.spec.ID, "err", s.spoolErr)
		return out
	}
	subject := jobs.OutputSubject(s.j.spec.ID, s.j.attempt, s.stream)
	if _, err := s.spool.Seek(0, io.SeekStart); err != nil {
		return out
	}
	if _, err := s.w.store.PutOutput(ctx, subject, s.spool, ttl); err != nil {
		s.w.log.Warn("output upload failed; only head and tail are kept", "job", s.j.spec.ID, "err", err)
		return out
	}
	out.Subject = subject
	return out
}

// discard removes the spool file.
func (s *sink) discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.liveTimer != nil {
		s.liveTimer.Stop()
		s.liveTimer = nil
	}
	if s.spool != nil {
		_ = s.spool.Close()
		_ = os.Remove(s.spool.Name())
		s.spool = nil
	}
}
