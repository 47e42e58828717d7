package plugin

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Errors a plugin causes. What Run and Validate return wraps one of them
// and backends.ErrUnavailable: the job is not at fault, and a later
// attempt may find the plugin fixed.
var (
	// ErrProtocol means the plugin broke protocol v1: a line that is not
	// a v1 message, a message out of order or for another request, or a
	// hello with another protocol version.
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

// conversation checks the plugin's stdout against protocol v1 for one
// request: the hello, then the request's events. It writes output chunks
// itself and hands the other events on. It is used by one goroutine.
type conversation struct {
	id   string // The request's id, which every event but hello carries.
	kind string // typeValidate or typeRun.

	stdout, stderr *guardedWriter // Output of a run; nil discards.

	hello, started, output bool // What has been seen so far.
}

// handle checks one line. It returns the event when the request's
// goroutine must see it (hello, started, and the last event), and whether
// it was the last. A protocol error ends the conversation.
func (c *conversation) handle(line []byte, n int) (ev *event, last bool, err error) {
	var e event
	if err := json.Unmarshal(line, &e); err != nil {
		return nil, false, c.errorf("stdout line %d is not a protocol v1 message: %s "+
			"(a plugin writes only protocol messages on stdout, its logs on stderr)", n, describe(err))
	}
	if !c.hello {
		if e.Type != typeHello {
			return nil, false, c.errorf("the first message is %.40q, want %q", e.Type, typeHello)
		}
		if e.Protocol == 0 {
			return nil, false, c.errorf("a hello without a protocol version")
		}
		if e.Protocol != Protocol {
			return nil, false, c.errorf("the plugin speaks protocol %d, this sandrun speaks protocol %d", e.Protocol, Protocol)
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
