package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/internal/jobs"
)

// FollowOptions direct Follow's output.
type FollowOptions struct {
	Stdout, Stderr io.Writer
	// Events, if set, receives every lifecycle event.
	Events func(jobs.Event)
}

// Follow replays and then follows a job's events, copying its live output
// to the writers, until the job reaches a terminal state. It returns the
// committed result. A job without a record yet (queued, not claimed) is
// waited for: bound ctx for an ID that may not exist.
func (c *Client) Follow(ctx context.Context, id string, o FollowOptions) (jobs.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, _, err := c.store.GetRun(ctx, id); err != nil && !errors.Is(err, jobs.ErrNotFound) {
		return jobs.Result{}, err
	}
	cons, err := c.store.JS.OrderedConsumer(ctx, jobs.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{jobs.EventFilter(id)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return jobs.Result{}, err
	}
	it, err := cons.Messages()
	if err != nil {
		return jobs.Result{}, err
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()

	// Events are telemetry; the KV result is the truth. Poll it too, so a
	// lost finished event cannot make Follow wait forever.
	done := make(chan jobs.Result, 1)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if r, err := c.store.GetResult(ctx, id); err == nil {
				// Give in-flight output a moment to arrive first.
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
				done <- r
				it.Stop()
				return
			}
		}
	}()

	attempt := 0
	for {
		m, err := it.Next()
		if err != nil {
			select {
			case r := <-done:
				return r, nil
			default:
			}
			if ctx.Err() != nil {
				return jobs.Result{}, ctx.Err()
			}
			return jobs.Result{}, err
		}
		sub := m.Subject()
		switch {
		case sub == jobs.EventSubject(id, jobs.EventOutput):
			a, _ := strconv.Atoi(m.Headers().Get(jobs.HeaderAttempt))
			if a != attempt && attempt != 0 && o.Stderr != nil {
				fmt.Fprintf(o.Stderr, "[sandrun: attempt %d]\n", a)
			}
			attempt = a
			w := o.Stdout
			if m.Headers().Get(jobs.HeaderStream) == "stderr" {
				w = o.Stderr
			}
			if w != nil {
				_, _ = w.Write(m.Data())
			}
		default:
			var e jobs.Event
			if json.Unmarshal(m.Data(), &e) != nil {
				continue
			}
			if o.Events != nil {
				o.Events(e)
			}
			if e.Kind == jobs.EventFinished {
				r, err := c.waitResult(ctx, id)
				return r, err
			}
		}
	}
}

// waitResult reads the result, waiting briefly for it to become visible.
func (c *Client) waitResult(ctx context.Context, id string) (jobs.Result, error) {
	for {
		r, err := c.store.GetResult(ctx, id)
		if err == nil || !errors.Is(err, jobs.ErrNotFound) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return jobs.Result{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Wait blocks until job id has a committed result and returns it.
func (c *Client) Wait(ctx context.Context, id string) (jobs.Result, error) {
	w, err := c.store.State.Watch(ctx, jobs.RunKey(id))
	if err != nil {
		return jobs.Result{}, err
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return jobs.Result{}, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return jobs.Result{}, errors.New("watch closed")
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var run jobs.Run
			if err := json.Unmarshal(e.Value(), &run); err != nil {
				return jobs.Result{}, err
			}
			if run.Result != nil {
				return *run.Result, nil
			}
		}
	}
}

// Output copies the full stored output of a finished job's last attempt.
func (c *Client) Output(ctx context.Context, r jobs.Result, stdout, stderr io.Writer) error {
	for _, s := range []struct {
		o jobs.Output
		w io.Writer
	}{{r.Stdout, stdout}, {r.Stderr, stderr}} {
		if s.o.Size == 0 || s.w == nil {
			continue
		}
		if s.o.Subject != "" {
			want := s.o.Size
			if s.o.Capped {
				want = s.o.Stored
			}
			if err := c.store.ReadOutput(ctx, s.o.Subject, want, s.w); err != nil {
				return err
			}
			if s.o.Capped {
				_, _ = fmt.Fprintf(s.w, "\n[sandrun: output capped at %d of %d bytes (worker.output_max); the rest was not kept]\n", s.o.Stored, s.o.Size)
			}
			continue
		}
		if s.o.Object == "" {
			_, _ = io.WriteString(s.w, s.o.Head)
			if s.o.Truncated {
				_, _ = io.WriteString(s.w, "\n[sandrun: output truncated; full output was not stored]\n")
			}
			_, _ = io.WriteString(s.w, s.o.Tail)
			continue
		}
		obj, err := c.store.OutputObject(ctx, s.o.Object)
		if err != nil {
			return fmt.Errorf("output %s: %w", s.o.Object, err)
		}
		_, err = io.Copy(s.w, obj)
		_ = obj.Close()
		if err != nil {
			return err
		}
		if s.o.Capped {
			_, _ = fmt.Fprintf(s.w, "\n[sandrun: output capped at %d of %d bytes (worker.output_max); the rest was not kept]\n", s.o.Stored, s.o.Size)
		}
	}
	return nil
}
