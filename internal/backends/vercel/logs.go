package vercel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// maxFollowTries bounds how often a broken log stream is re-opened in a
// row without progress.
const maxFollowTries = 5

// logLine is one line of a command's log stream: {stream, data}, data a
// string for stdout and stderr, {code, message} for error.
type logLine struct {
	Stream string          `json:"stream"`
	Data   json.RawMessage `json:"data"`
}

// streamError is an error line of the log stream: the server's word,
// final.
type streamError struct{ Code, Message string }

func (e *streamError) Error() string { return "log stream: " + e.Code + ": " + e.Message }

// follow copies command cid's output to out (stdout, stderr) until its
// log stream ends with the command. A stream that breaks is opened again:
// it starts over, and what was already copied of each stream is skipped.
func follow(ctx context.Context, a *api, sid, cid string, out [2]*sink) error {
	var copied [2]int64
	for tries := 1; ; tries++ {
		progress, err := followOnce(ctx, a, sid, cid, out, &copied)
		if progress {
			tries = 1
		}
		var se *streamError
		if err == nil || ctx.Err() != nil || tries == maxFollowTries || errors.As(err, &se) ||
			hasStatus(err, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone) {
			return err
		}
		t := time.NewTimer(backoff(tries - 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// followOnce reads the stream once, skipping what copied says was
// already copied, and reports whether it copied anything new.
func followOnce(ctx context.Context, a *api, sid, cid string, out [2]*sink, copied *[2]int64) (bool, error) {
	body, err := a.logs(ctx, sid, cid)
	if err != nil {
		return false, err
	}
	defer func() { _ = body.Close() }()
	var seen [2]int64
	progress := false
	r := bufio.NewReaderSize(body, 256<<10)
	var long []byte // A line longer than r's buffer, gathered.
	for {
		line, rerr := r.ReadSlice('\n')
		if errors.Is(rerr, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			i, data, err := parseLine(line)
			if err != nil {
				return progress, err
			}
			drop := min(max(copied[i]-seen[i], 0), int64(len(data)))
			seen[i] += int64(len(data))
			if data = data[drop:]; len(data) > 0 {
				_, _ = out[i].Write(data)
				copied[i] += int64(len(data))
				progress = true
			}
		}
		if errors.Is(rerr, io.EOF) {
			return progress, nil
		}
		if rerr != nil {
			return progress, fmt.Errorf("log stream: %w", rerr)
		}
	}
}

// parseLine decodes one log line: the stream (0 stdout, 1 stderr) and its
// data. Lines of another stream carry no data; an error line is a
// *streamError. The usual shape, {"stream":"stdout","data":"..."}, is
// read without a pass of the JSON parser: output can be large.
func parseLine(line []byte) (int, []byte, error) {
	for i, prefix := range [2]string{`{"stream":"stdout","data":"`, `{"stream":"stderr","data":"`} {
		if rest, ok := bytes.CutPrefix(line, []byte(prefix)); ok {
			if quoted, ok := bytes.CutSuffix(rest, []byte(`"}`)); ok {
				data, err := unquote(quoted)
				if err != nil {
					return 0, nil, fmt.Errorf("log stream: %w", err)
				}
				return i, data, nil
			}
		}
	}
	var l logLine
	if err := json.Unmarshal(line, &l); err != nil {
		return 0, nil, fmt.Errorf("log stream: %w", err)
	}
	switch l.Stream {
	case "stdout", "stderr":
		var quoted []byte
		if len(l.Data) >= 2 && l.Data[0] == '"' {
			quoted = l.Data[1 : len(l.Data)-1]
		}
		data, err := unquote(quoted)
		if err != nil || quoted == nil {
			return 0, nil, fmt.Errorf("log stream: %w", errBadString)
		}
		return map[string]int{"stdout": 0, "stderr": 1}[l.Stream], data, nil
	case "error":
		var e streamError
		_ = json.Unmarshal(l.Data, &e)
		return 0, nil, &e
	}
	return 0, nil, nil
}

// logDrain bounds how long the output is still waited for once the exit
// code is known and nothing comes: only processes the job left behind
// can hold the stream open.
const logDrain = 2 * time.Second

// logStream is the output being copied; err is set when done is closed,
// and last is when output last came (Unix nanoseconds).
type logStream struct {
	done chan struct{}
	err  error
	last atomic.Int64
}

// sinks returns the sinks of out that note the stream's progress.
func (l *logStream) sinks(out backends.Output) [2]*sink {
	return [2]*sink{{w: out.Stdout, last: &l.last}, {w: out.Stderr, last: &l.last}}
}

// drain waits for the stream to end and returns its error. Once the job
// has ended, it gives up when no output has come for logDrain, since
// leftovers could hold the stream open; a backlog still flowing is read.
func (l *logStream) drain(stop context.CancelFunc, ended bool) error {
	if ended {
		if now := time.Now().UnixNano(); l.last.Load() < now {
			l.last.Store(now)
		}
		t := time.NewTicker(logDrain / 20)
		defer t.Stop()
	wait:
		for {
			select {
			case <-l.done:
				return l.err
			case <-t.C:
				if time.Since(time.Unix(0, l.last.Load())) > logDrain {
					break wait
				}
			}
		}
	}
	stop()
	<-l.done
	return nil
}

// sink forwards to w until a write fails, then discards, so that a
// failing writer does not stop the job; err keeps the failure. A nil w
// discards everything. Each write is noted in last (Unix nanoseconds),
// which other goroutines may read.
type sink struct {
	w    io.Writer
	err  error
	last *atomic.Int64
}

func (s *sink) Write(p []byte) (int, error) {
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
