// Package plugin runs jobs on external backend plugins: executables that
// speak sandrun's plugin protocol, so that a backend can be added without
// rebuilding sandrun. docs/plugins.md specifies the protocol (version
// 2); examples/plugin/sandrun-backend-localexec is a reference plugin.
//
// The host starts one plugin process per request, one for each Validate
// and one for each Run, in a process group of its own, and talks to it in
// JSON lines: requests on the plugin's stdin, events on its stdout. The
// plugin's stderr is its log: it goes, bounded, to Config.Logger, never
// into job output. One process per request, rather than one long-lived
// process for all runs, keeps every failure to its own run: a plugin that
// crashes fails one run, one that hangs is killed, process group and all,
// without touching the others, and a plugin can be a plain sequential
// program. It costs one exec per run. Messages carry request ids all the
// same, so that a later protocol version can multiplex one process.
//
// The host hands each plugin process a random session key on its stdin,
// and accepts only the lines on its stdout that the key signs (auth.go):
// a workload whose output reaches the plugin's stdout cannot forge an
// event, not even knowing its request's id, which is random as well.
//
// What Run guarantees, whatever the plugin does:
//
//   - When ctx is done it sends a graceful cancel, a forced one once
//     Spec.Grace() has passed, and kills the plugin's process group if
//     the run has not ended ForceMargin after that; it returns with an
//     error wrapping context.Cause(ctx).
//   - When it returns, nothing is left in the plugin's process group.
//     Processes the plugin started in groups of their own are the
//     plugin's to end (the reference plugin does).
//   - A plugin that exits early, breaks the protocol or does not answer
//     fails the run with an error wrapping ErrExited, ErrProtocol or
//     ErrTimeout, and backends.ErrUnavailable (retryable); the error names
//     the plugin. An error event fails it with the plugin's message,
//     wrapping backends.ErrPermanent when the plugin says so.
//   - Lines on the plugin's stdout that its session key does not sign
//     are rejected: they never end a run, nor add to its output. The run
//     goes on to its last event, and then fails with an error wrapping
//     ErrProtocol and backends.ErrUnavailable; its Result holds what
//     the plugin reported all the same.
//   - The job's environment goes to the plugin in the run request only:
//     the host never logs it nor puts it in an error.
package plugin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// ForceMargin is how long a plugin has to end a run after the forced
// cancel before the host kills its process group.
const ForceMargin = 3 * time.Second

// exitWait is how long a plugin has to exit once its request has ended
// and its stdin is closed, before the host kills its process group.
const exitWait = 2 * time.Second

// Backend runs jobs on one plugin. It is safe for concurrent use.
type Backend struct {
	settings
	forceMargin time.Duration // ForceMargin; tests shorten it.
	rand        io.Reader     // Of request ids and session keys: crypto/rand; tests record it.

	hello atomic.Pointer[helloInfo] // The latest hello.
}

// New checks cfg, finds the plugin executable and fills in the defaults.
// Errors name the field at fault. It does not start the plugin: Validate
// does.
func New(cfg Config) (*Backend, error) {
	s, err := settle(cfg)
	if err != nil {
		return nil, err
	}
	return &Backend{settings: s, forceMargin: ForceMargin, rand: rand.Reader}, nil
}

// Kind returns "plugin".
func (b *Backend) Kind() string { return "plugin" }

// Path returns the plugin executable in use.
func (b *Backend) Path() string { return b.path }

// Capabilities returns what the plugin announced in its latest hello:
// none before the first Validate or Run.
func (b *Backend) Capabilities() backends.Capabilities {
	if h := b.hello.Load(); h != nil {
		return h.caps
	}
	return backends.Capabilities{}
}

// Validate starts the plugin and asks it to check that it can work. The
// whole exchange is bounded by Config.Timeout.
func (b *Backend) Validate(ctx context.Context) error {
	if err := b.validate(ctx); err != nil {
		return fmt.Errorf("plugin %s: validate: %w", b.path, err)
	}
	return nil
}

func (b *Backend) validate(ctx context.Context) error {
	c, err := b.newConversation(typeValidate, "v")
	if err != nil {
		return fmt.Errorf("%w: %w", err, backends.ErrUnavailable)
	}
	c.log = c.log.With("request", c.id)
	ctx, cancel := context.WithTimeoutCause(ctx, b.timeout, b.timeoutError())
	defer cancel()
	p, err := b.open(ctx, c)
	if err != nil {
		return err
	}
	if err := p.send(validateRequest{Type: typeValidate, ID: c.id}, b.timeout); err != nil {
		return fmt.Errorf("sending the request: %w", b.fail(p, err))
	}
	select {
	case m := <-p.events:
		switch {
		case m.err != nil:
			err = b.fail(p, m.err)
		case m.ev.Type == typeError:
			b.finish(p)
			err = eventError(m.ev)
		default:
			b.finish(p)
		}
	case <-ctx.Done():
		p.stop(0)
		err = context.Cause(ctx)
	}
	return c.withRejects(err) // The plugin is gone: c is ours.
}

// open starts the plugin for conversation c and waits for its hello,
// until ctx is done.
func (b *Backend) open(ctx context.Context, c *conversation) (*process, error) {
	p, err := b.start(c)
	if err != nil {
		return nil, err
	}
	select {
	case m := <-p.events:
		if m.err != nil {
			return nil, fmt.Errorf("start: %w", b.fail(p, m.err))
		}
		h := &helloInfo{name: m.ev.Name, version: m.ev.Version, protocol: m.ev.Protocol, caps: m.ev.Capabilities.backends()}
		b.hello.Store(h)
		c.log.Debug("plugin started", "name", h.name, "version", h.version, "capabilities", h.caps)
		return p, nil
	case <-ctx.Done():
		p.stop(0)
		return nil, fmt.Errorf("start: no hello: %w", context.Cause(ctx))
	}
}

// finish stops p once its request has ended, giving it exitWait to exit.
func (b *Backend) finish(p *process) {
	if _, killed := p.stop(exitWait); killed {
		b.log.Warn("plugin did not exit once its request had ended; killed", "wait", exitWait)
	}
}

// fail stops p, whose conversation err ended early, and returns the error
// to report.
func (b *Backend) fail(p *process, err error) error {
	if errors.Is(err, ErrProtocol) || errors.Is(err, ErrTimeout) {
		p.stop(0)
		return fmt.Errorf("%w: %w", err, backends.ErrUnavailable)
	}
	// The plugin closed its stdout or its stdin: it exited, or is about to.
	state, killed := p.stop(exitWait)
	how := state.String()
	if killed {
		how = "it closed its stdout or stdin but did not exit, and was killed"
	}
	if !errors.Is(err, io.EOF) {
		how += "; " + err.Error()
	}
	return fmt.Errorf("%w (%s): %w", ErrExited, how, backends.ErrUnavailable)
}

// timeoutError is the cause of a context that Config.Timeout ended.
func (b *Backend) timeoutError() error {
	return fmt.Errorf("%w (timeout %s): %w", ErrTimeout, b.timeout, backends.ErrUnavailable)
}

var _ backends.Backend = (*Backend)(nil)
