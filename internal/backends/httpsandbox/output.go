package httpsandbox

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// LogDrain bounds how long the output is still waited for once the exit
// code is known and nothing comes: only processes the job left behind
// can hold the stream open. At 2 s a loaded machine (CI, the race
// detector) stalled a healthy stream that long and lost the end of a
// 20 MiB output; a job with leftovers pays the wait.
const LogDrain = 10 * time.Second

// LogStream is the output being copied: err is set when done is closed,
// and last is when output last came (Unix nanoseconds).
type LogStream struct {
	done chan struct{}
	err  error
	last atomic.Int64
}

// NewLogStream returns a stream not yet started.
func NewLogStream() *LogStream { return &LogStream{done: make(chan struct{})} }

// Sinks returns the sinks of out that note the stream's progress.
func (l *LogStream) Sinks(out backends.Output) [2]*Sink {
	return [2]*Sink{NewSink(out.Stdout, &l.last), NewSink(out.Stderr, &l.last)}
}

// Start runs follow, which copies the output, in a goroutine of its own;
// Done is closed when it returns.
func (l *LogStream) Start(follow func() error) {
	go func() {
		defer close(l.done)
		l.err = follow()
	}()
}

// Done is closed once the copy has ended.
func (l *LogStream) Done() <-chan struct{} { return l.done }

// Drain waits for the stream to end and returns its error. Once the job
// has ended, it gives up when no output has come for LogDrain, since
// leftovers could hold the stream open; a backlog still flowing is read.
// When it gives up, catchUp (when not nil) is called once the copy has
// stopped, to read what the stalled stream still held back by other
// means, and its error is returned: a stream whose connection died
// without a reset looks just like one held open by leftovers.
func (l *LogStream) Drain(stop context.CancelFunc, ended bool, catchUp func() error) error {
	if ended {
		if now := time.Now().UnixNano(); l.last.Load() < now {
			l.last.Store(now)
		}
		t := time.NewTicker(LogDrain / 20)
		defer t.Stop()
	wait:
		for {
			select {
			case <-l.done:
				return l.err
			case <-t.C:
				if time.Since(time.Unix(0, l.last.Load())) > LogDrain {
					break wait
				}
			}
		}
	}
	stop()
	<-l.done
	if ended && catchUp != nil {
		return catchUp()
	}
	return nil
}

// Sink forwards to w until a write fails, then discards, so that a
// failing writer does not stop the job; Err keeps the failure. A nil w
// discards everything. Each write is noted in last (Unix nanoseconds),
// which other goroutines may read.
type Sink struct {
	w    io.Writer
	err  error
	last *atomic.Int64
}

// NewSink returns a sink to w that notes its writes in last (nil: not
// noted).
func NewSink(w io.Writer, last *atomic.Int64) *Sink { return &Sink{w: w, last: last} }

// Err is the failure of the writer, if it failed.
func (s *Sink) Err() error { return s.err }

func (s *Sink) Write(p []byte) (int, error) {
	if s.last != nil {
		s.last.Store(time.Now().UnixNano())
	}
	if s.w != nil && s.err == nil {
		n, err := s.w.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		s.err = err
	}
	return len(p), nil
}
