package modal

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	modal "github.com/modal-labs/modal-client/go"

	"github.com/sandrun/sandrun/internal/backends"
)

// outputIdle is how long drain waits for more output once the job and
// what it left have ended: then only data in flight can still arrive.
const outputIdle = 2 * time.Second

// output copies an exec's stdout and stderr to the job's writers as the
// output arrives, each on its own goroutine.
type output struct {
	names   [2]string
	readers [2]io.ReadCloser
	writers [2]*guard
	errs    [2]error // read errors, set before done
	done    sync.WaitGroup
	closed  atomic.Bool
}

// copyOutput starts copying proc's output to out.
func copyOutput(proc *modal.ContainerProcess, out backends.Output) *output {
	o := &output{
		names:   [2]string{"stdout", "stderr"},
		readers: [2]io.ReadCloser{proc.Stdout, proc.Stderr},
		writers: [2]*guard{{w: out.Stdout}, {w: out.Stderr}},
	}
	for i := range o.readers {
		o.done.Go(func() {
			_, err := io.Copy(o.writers[i], o.readers[i])
			o.errs[i] = err
		})
	}
	return o
}

// drain waits for both streams to end. A stream that has had nothing for
// outputIdle is closed: the job is over, so nothing more is coming (a
// process that escaped it may hold the stream open). It returns the
// first write error, else the first read error not caused by closing.
func (o *output) drain() error {
	ended := make(chan struct{})
	go func() {
		o.done.Wait()
		close(ended)
	}()
	tick := time.NewTicker(outputIdle / 8)
	defer tick.Stop()
	last, since := o.bytes(), time.Now()
	for waiting := true; waiting; {
		select {
		case <-ended:
			waiting = false
		case <-tick.C:
			if n := o.bytes(); n != last {
				last, since = n, time.Now()
			} else if time.Since(since) >= outputIdle {
				o.closed.Store(true)
				for _, r := range o.readers {
					_ = r.Close()
				}
				<-ended
				waiting = false
			}
		}
	}
	for i, w := range o.writers {
		if w.err != nil {
			return fmt.Errorf("modal: writing %s: %w", o.names[i], w.err)
		}
	}
	for i, err := range o.errs {
		if err != nil && !o.closed.Load() {
			return fmt.Errorf("modal: reading %s: %w", o.names[i], err)
		}
	}
	return nil
}

// bytes is how much output has arrived so far.
func (o *output) bytes() int64 { return o.writers[0].n.Load() + o.writers[1].n.Load() }

// guard passes writes on to w (if any) until one fails, then discards
// them and keeps the error; it counts every byte. One goroutine writes.
type guard struct {
	w   io.Writer
	err error
	n   atomic.Int64
}

func (g *guard) Write(p []byte) (int, error) {
	g.n.Add(int64(len(p)))
	if g.w != nil && g.err == nil {
		_, g.err = g.w.Write(p)
	}
	return len(p), nil
}
