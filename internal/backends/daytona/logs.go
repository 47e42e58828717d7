package daytona

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// The daemon marks each chunk of a session command's log with the stream
// it came from; the follow stream carries the marked bytes.
var (
	stdoutMarker = []byte{0x01, 0x01, 0x01}
	stderrMarker = []byte{0x02, 0x02, 0x02}
)

// logReader copies a command's marked log to d; copied is how far into
// the log it has got, over every connection it opened.
type logReader struct {
	c      *httpsandbox.Client
	u      *url.URL // the log, without follow
	d      *demux
	copied int64
}

// catchUpTimeout bounds catchUp.
const catchUpTimeout = 30 * time.Second

// follow copies the log stream until the server ends it (the command has
// ended). A stream that breaks is opened again: the daemon replays it
// from the start, and what was already copied is skipped. What the demux
// holds back is left to flush.
func (r *logReader) follow(ctx context.Context) error {
	u := *r.u
	u.RawQuery = "follow=true"
	once := func() (bool, error) {
		n, err := followOnce(ctx, r.c, &u, r.d, r.copied)
		if n > r.copied {
			r.copied = n
			return true, err
		}
		return false, err
	}
	return httpsandbox.Follow(ctx, once, func(err error) bool {
		return httpsandbox.HasStatus(err, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound)
	})
}

// catchUp reads the ended command's log once more without following it
// and copies what follow had not: a follow stream that stalled (its
// connection gone dead without a reset) would otherwise end the output
// short with no error. It must not run while follow does.
func (r *logReader) catchUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	n, err := followOnce(ctx, r.c, r.u, r.d, r.copied)
	r.copied = max(r.copied, n)
	return err
}

// flush delivers what the demux held back; it must not run while follow
// or catchUp does.
func (r *logReader) flush() { r.d.flush() }

// followOnce reads the stream once, skipping its first skip bytes, and
// returns how far into it it got.
func followOnce(ctx context.Context, c *httpsandbox.Client, u *url.URL, d *demux, skip int64) (int64, error) {
	ws, err := dialWS(ctx, c, "follow logs", u)
	if err != nil {
		return 0, err
	}
	defer ws.close()
	var at int64
	for {
		msg, err := ws.next()
		if errors.Is(err, errClosed) {
			return at, nil
		}
		if err != nil {
			return at, err
		}
		if drop := min(max(skip-at, 0), int64(len(msg))); drop > 0 {
			at += drop
			msg = msg[drop:]
		}
		at += int64(len(msg))
		d.write(msg)
	}
}

// demux splits the marked log into stdout and stderr. Bytes before any
// marker (a daemon that marks nothing) go to stdout. A marker split
// between two messages is still found: trailing bytes that could start
// one are held back until the next write or the flush. Output that itself
// holds three 01 or 02 bytes in a row is misread: the format cannot tell.
type demux struct {
	out  [2]*httpsandbox.Sink // stdout, stderr
	cur  int
	held []byte
}

func newDemux(out [2]*httpsandbox.Sink) *demux { return &demux{out: out} }

func (d *demux) write(p []byte) {
	buf := p
	if len(d.held) > 0 {
		buf = append(d.held, p...)
		d.held = nil
	}
	for len(buf) > 0 {
		i, stream := nextMarker(buf)
		if i < 0 {
			keep := partialMarker(buf)
			d.emit(buf[:len(buf)-keep])
			d.held = bytes.Clone(buf[len(buf)-keep:])
			return
		}
		d.emit(buf[:i])
		d.cur = stream
		buf = buf[i+len(stdoutMarker):]
	}
}

// flush delivers what was held back.
func (d *demux) flush() {
	d.emit(d.held)
	d.held = nil
}

func (d *demux) emit(p []byte) {
	if len(p) > 0 {
		_, _ = d.out[d.cur].Write(p)
	}
}

// nextMarker finds the first marker in p: its index and stream (0
// stdout, 1 stderr), or -1.
func nextMarker(p []byte) (int, int) {
	o, e := bytes.Index(p, stdoutMarker), bytes.Index(p, stderrMarker)
	switch {
	case o >= 0 && (e < 0 || o < e):
		return o, 0
	case e >= 0:
		return e, 1
	}
	return -1, 0
}

// partialMarker returns how many trailing bytes of p could start a marker.
func partialMarker(p []byte) int {
	for k := min(len(stdoutMarker)-1, len(p)); k > 0; k-- {
		tail := p[len(p)-k:]
		if bytes.HasPrefix(stdoutMarker, tail) || bytes.HasPrefix(stderrMarker, tail) {
			return k
		}
	}
	return 0
}
