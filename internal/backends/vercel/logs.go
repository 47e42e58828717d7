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
	"time"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

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

// catchUpTimeout bounds the read of an ended command's log after its
// stream stalled (httpsandbox.LogStream.Drain).
const catchUpTimeout = 30 * time.Second

// follow copies command cid's output to out (stdout, stderr) until its
// log stream ends with the command. A stream that breaks is opened again:
// it starts over, and what was already copied of each stream is skipped.
// copied counts the bytes copied of each stream, over every connection.
func follow(ctx context.Context, a *api, sid, cid string, out [2]*httpsandbox.Sink, copied *[2]int64) error {
	once := func() (bool, error) { return followOnce(ctx, a, sid, cid, out, copied) }
	return httpsandbox.Follow(ctx, once, func(err error) bool {
		var se *streamError
		return errors.As(err, &se) ||
			httpsandbox.HasStatus(err, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone)
	})
}

// followOnce reads the stream once, skipping what copied says was
// already copied, and reports whether it copied anything new.
func followOnce(ctx context.Context, a *api, sid, cid string, out [2]*httpsandbox.Sink, copied *[2]int64) (bool, error) {
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
