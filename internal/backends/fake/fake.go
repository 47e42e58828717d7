// Package fake is a scriptable backend for lifecycle tests: it runs no
// process, it acts out the job's command, a script of steps separated by
// semicolons or newlines:
//
//	out TEXT             write TEXT and a newline to stdout
//	err TEXT             write TEXT and a newline to stderr
//	sleep DURATION       wait (a Go duration: 200ms, 2s), or until ctx is done
//	hang                 wait until ctx is done
//	exit N               end with exit code N (the default is 0)
//	start-error KIND     fail before anything starts: permanent,
//	                     unavailable or any other word (a plain error)
//
// Steps run in order; the run ends at exit, at the end of the script, or
// when ctx is done (exit code -1, signal SIGKILL, and an error wrapping
// context.Cause(ctx), as the Backend contract asks). A command the fake
// cannot read is a permanent error naming the step. The script is also a
// valid POSIX sh command line, so the approval policy reads it as the
// harmless words it is.
//
// Lifecycle tests use it where the outcome, not the process, is the
// subject: exit codes, output, timeouts, start errors, hangs.
package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// Backend is the scriptable fake. The zero value is not usable: call New.
type Backend struct {
	caps backends.Capabilities

	mu   sync.Mutex
	runs []backends.Spec
	live int
}

// New returns a fake backend that declares caps.
func New(caps backends.Capabilities) *Backend { return &Backend{caps: caps} }

// Kind implements backends.Backend.
func (b *Backend) Kind() string { return "fake" }

// Validate implements backends.Backend: the fake is always ready.
func (b *Backend) Validate(context.Context) error { return nil }

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() backends.Capabilities { return b.caps }

// Runs returns the specs Run was called with, in order.
func (b *Backend) Runs() []backends.Spec {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]backends.Spec(nil), b.runs...)
}

// Live returns how many runs are under way.
func (b *Backend) Live() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.live
}

// step is one parsed step of a script.
type step struct {
	verb string
	arg  string
	d    time.Duration
	n    int
}

// parse reads a script.
func parse(script string) ([]step, error) {
	var steps []step
	for raw := range strings.FieldsFuncSeq(script, func(r rune) bool { return r == ';' || r == '\n' }) {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		verb, arg, _ := strings.Cut(line, " ")
		arg = strings.TrimSpace(arg)
		s := step{verb: verb, arg: arg}
		switch verb {
		case "out", "err", "hang", "start-error":
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("fake: step %q: sleep wants a duration", line)
			}
			s.d = d
		case "exit":
			n, err := strconv.Atoi(arg)
			if err != nil {
				return nil, fmt.Errorf("fake: step %q: exit wants a number", line)
			}
			s.n = n
		default:
			return nil, fmt.Errorf("fake: step %q: unknown verb %q", line, verb)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// Run implements backends.Backend by acting out spec.Command.
func (b *Backend) Run(ctx context.Context, spec backends.Spec, out backends.Output) (backends.Result, error) {
	b.mu.Lock()
	b.runs = append(b.runs, spec)
	b.mu.Unlock()
	steps, err := parse(spec.Command)
	if err != nil {
		return backends.Result{ExitCode: -1}, fmt.Errorf("%w: %w", err, backends.ErrPermanent)
	}
	for _, s := range steps {
		if s.verb != "start-error" {
			continue
		}
		switch s.arg {
		case "permanent":
			return backends.Result{ExitCode: -1}, fmt.Errorf("fake: start failed: %w", backends.ErrPermanent)
		case "unavailable":
			return backends.Result{ExitCode: -1}, fmt.Errorf("fake: start failed: %w", backends.ErrUnavailable)
		default:
			return backends.Result{ExitCode: -1}, errors.New("fake: start failed: " + s.arg)
		}
	}
	if err := ctx.Err(); err != nil {
		return backends.Result{ExitCode: -1}, fmt.Errorf("fake: not started: %w", context.Cause(ctx))
	}
	if spec.StartGate != nil {
		if _, err := spec.StartGate(); err != nil {
			return backends.Result{ExitCode: -1}, err
		}
	}
	b.mu.Lock()
	b.live++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.live--
		b.mu.Unlock()
	}()
	res := backends.Result{StartedAt: time.Now()}
	stopped := func() (backends.Result, error) {
		res.ExitCode, res.Signal, res.FinishedAt = -1, "SIGKILL", time.Now()
		return res, fmt.Errorf("fake: stopped: %w", context.Cause(ctx))
	}
	for _, s := range steps {
		switch s.verb {
		case "out", "err":
			w := out.Stdout
			if s.verb == "err" {
				w = out.Stderr
			}
			if w != nil {
				_, _ = io.WriteString(w, s.arg+"\n")
			}
		case "sleep":
			t := time.NewTimer(s.d)
			select {
			case <-ctx.Done():
				t.Stop()
				return stopped()
			case <-t.C:
			}
		case "hang":
			<-ctx.Done()
			return stopped()
		case "exit":
			res.ExitCode, res.FinishedAt = s.n, time.Now()
			return res, nil
		}
	}
	res.FinishedAt = time.Now()
	return res, nil
}
