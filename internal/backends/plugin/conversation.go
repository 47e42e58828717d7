package plugin

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/sandrun/sandrun/internal/backends"
)

// Errors a plugin causes. What Run and Validate return wraps one of them
// and backends.ErrUnavailable: the job is not at fault, and a later
// attempt may find the plugin fixed.
var (
	// ErrProtocol means the plugin broke the protocol: a line that is
	// not a message of its version, a message out of order or for another
	// request, a hello with another protocol version, or lines on its
	// stdout that are not signed with its session key.
	ErrProtocol = errors.New("plugin protocol error")
	// ErrExited means the plugin exited, or closed its stdout, before the
	// last event of its request.
	ErrExited = errors.New("plugin exited early")
	// ErrTimeout means the plugin did not answer in time: no hello or
	// validate answer within Config.Timeout, a request it did not read,
	// or no end of the run after a forced cancel.
	ErrTimeout = errors.New("plugin did not answer in time")
)

// maxLine bounds one line of the plugin's stdout. Plugins keep output
// chunks to 64 KiB, which base64 makes about 87 KiB.
const maxLine = 1 << 20

// maxRejectLogs bounds the rejected lines logged for one request; the
// request's error counts them all.
const maxRejectLogs = 5

// conversation checks the plugin's stdout against the protocol for one
// request: the hello, then the request's events. It writes output chunks
// itself and hands the other events on. It is used by one goroutine, the
// stdout reader; the request's goroutine reads its results once the
// reader has returned.
type conversation struct {
	id   string     // The request's id, which every event but hello carries.
	kind string     // typeValidate or typeRun.
	key  sessionKey // The plugin process's: every line it writes is signed with it.
	log  *slog.Logger

	stdout, stderr *guardedWriter // Output of a run; nil discards.

	hello, started, output bool // What has been seen so far.

	// Lines rejected after the hello, not signed with key: bytes that are
	// not the plugin's reached its stdout. The first one's line number and
	// why it was rejected.
	rejected    int
	firstReject int
	whyReject   string
}

// handle checks one line. It returns the event when the request's
// goroutine must see it (hello, started, and the last event), and whether
// it was the last. A protocol error ends the conversation. A line that is
// not signed with the session key does not: it is not the plugin's, and
// is rejected, counted and logged, and the conversation goes on to the
// request's last event; rejectError then fails the request.
func (c *conversation) handle(line []byte, n int) (ev *event, last bool, err error) {
	msg, why := c.key.open(line)
	if why != "" {
		if !c.hello { // No workload runs yet: the plugin wrote it.
			return nil, false, c.unsignedHello(line, n, why)
		}
		c.reject(n, len(line), why)
		return nil, false, nil
	}
	var e event
	if err := json.Unmarshal(msg, &e); err != nil {
		return nil, false, c.errorf("stdout line %d is not a protocol v%d message: %s "+
			"(a plugin writes only protocol messages on stdout, its logs on stderr)", n, Protocol, describe(err))
	}
	if !c.hello {
		if e.Type != typeHello {
			return nil, false, c.errorf("the first message is %.40q, want %q", e.Type, typeHello)
		}
		if e.Protocol == 0 {
			return nil, false, c.errorf("a hello without a protocol version")
		}
		if e.Protocol != Protocol {
			return nil, false, c.mismatch(e.Protocol)
		}
		c.hello = true
		return &e, false, nil
	}
	if e.ID != c.id {
		return nil, false, c.errorf("%.40q message has id %.40q, want %q", e.Type, e.ID, c.id)
	}
	switch {
	case e.Type == typeError:
		return &e, true, nil
	case c.kind == typeValidate && e.Type == typeValid:
		return &e, true, nil
	case c.kind == typeRun && e.Type == typeStarted:
		if c.started || c.output {
			return nil, false, c.errorf("%q after output or a first %q", typeStarted, typeStarted)
		}
		c.started = true
		return &e, false, nil
	case c.kind == typeRun && e.Type == typeStdout:
		c.output = true
		c.stdout.write(e.Data)
		return nil, false, nil
	case c.kind == typeRun && e.Type == typeStderr:
		c.output = true
		c.stderr.write(e.Data)
		return nil, false, nil
	case c.kind == typeRun && e.Type == typeExit:
		if e.ExitCode == nil {
			return nil, false, c.errorf("an %q message without exit_code (-1 with a signal)", typeExit)
		}
		return &e, true, nil
	}
	return nil, false, c.errorf("unexpected message type %.40q in answer to %q", e.Type, c.kind)
}

// unsignedHello explains a first line that is not signed: most likely
// the hello of a plugin written for protocol v1, which signs nothing.
func (c *conversation) unsignedHello(line []byte, n int, why string) error {
	var e struct {
		Type     string `json:"type"`
		Protocol int    `json:"protocol"`
	}
	if json.Unmarshal(line, &e) == nil && e.Type == typeHello && e.Protocol != 0 && e.Protocol != Protocol {
		return c.mismatch(e.Protocol)
	}
	return c.errorf("stdout line %d is not signed with the session key: %s "+
		"(a plugin signs every line it writes, its hello included)", n, why)
}

// mismatch is the error for a plugin that speaks protocol version v.
func (c *conversation) mismatch(v int) error {
	fix := "update the plugin (docs/plugins.md)"
	if v > Protocol {
		fix = "this sandrun is older than the plugin"
	}
	return c.errorf("the plugin speaks protocol %d, this sandrun speaks protocol %d: %s", v, Protocol, fix)
}

// reject counts and logs a line that is not the plugin's, without
// quoting it: it may hold anything, a job's secrets included.
func (c *conversation) reject(n, size int, why string) {
	c.rejected++
	if c.rejected == 1 {
		c.firstReject, c.whyReject = n, why
	}
	switch {
	case c.rejected <= maxRejectLogs:
		c.log.Warn("plugin: rejected a stdout line that is not the plugin's",
			"line", n, "bytes", size, "reason", why, "rejected", c.rejected)
	case c.rejected == maxRejectLogs+1:
		c.log.Warn("plugin: rejecting more stdout lines; the request's error counts them", "line", n)
	}
}

// rejectError is the error of a request for which lines were rejected,
// or nil: the request failed, whatever its last event said, since its
// plugin's stdout carried bytes that were not the plugin's.
func (c *conversation) rejectError() error {
	if c.rejected == 0 {
		return nil
	}
	return fmt.Errorf("%w: rejected %d stdout line(s) not signed with the plugin process's session key "+
		"(the first, line %d: %s): bytes that are not the plugin's messages reached its stdout, "+
		"such as a workload's output passed through: %w", ErrProtocol, c.rejected, c.firstReject, c.whyReject,
		backends.ErrUnavailable)
}

// withRejects returns err, the request's outcome, with rejectError
// added. It is called once the stdout reader has returned.
func (c *conversation) withRejects(err error) error {
	rej := c.rejectError()
	switch {
	case rej == nil:
		return err
	case err == nil:
		return rej
	}
	return fmt.Errorf("%w; %w", err, rej)
}

// errorf returns a protocol error.
func (c *conversation) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// describe explains a decoding error without quoting the line: a plugin
// might echo what the host sent it, the job's environment included.
func describe(err error) string {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		corrupt base64.CorruptInputError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q: a JSON %s, want %s", typ.Field, typ.Value, typ.Type)
	case errors.As(err, &corrupt):
		return fmt.Sprintf("data: invalid base64 at byte %d", int64(corrupt))
	}
	return "a field has an invalid value (times are RFC 3339)"
}

// guardedWriter forwards to w until a write fails, then discards, so that
// a failing sink does not stop the job. err is read once the conversation
// has ended.
type guardedWriter struct {
	w   io.Writer
	err error
}

// guard returns a guardedWriter for w; nil discards.
func guard(w io.Writer) *guardedWriter {
	if w == nil {
		w = io.Discard
	}
	return &guardedWriter{w: w}
}

func (g *guardedWriter) write(p []byte) {
	if g == nil || g.err != nil || len(p) == 0 {
		return
	}
	n, err := g.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	g.err = err
}
