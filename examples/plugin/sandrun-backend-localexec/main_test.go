package main

import (
	"encoding/json"
	"io"
	"log"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The plugin's behaviour as a backend is checked by the conformance suite,
// which internal/backends/plugin runs on it. These tests check its side
// of the protocol's framing, in process.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// session serves one request in process: the test writes request lines
// to stdin and reads events from events.
type session struct {
	stdin  *io.PipeWriter
	events *json.Decoder
	code   chan int // serve's exit status.
}

func start(t *testing.T, shell string) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &session{stdin: inW, events: json.NewDecoder(outR), code: make(chan int, 1)}
	go func() {
		s.code <- serve(shell, inR, outW, log.New(io.Discard, "", 0))
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close() // The host goes away: the plugin's reader returns.
		_ = outR.Close()
	})
	return s
}

// send writes one request line.
func (s *session) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		t.Fatalf("writing %s: %v", line, err)
	}
}

// next reads the next event as a map.
func (s *session) next(t *testing.T) map[string]any {
	t.Helper()
	var ev map[string]any
	if err := s.events.Decode(&ev); err != nil {
		t.Fatalf("reading an event: %v", err)
	}
	return ev
}

func TestRun(t *testing.T) {
	s := start(t, "/bin/sh")
	if ev := s.next(t); ev["type"] != "hello" || ev["protocol"] != 1.0 {
		t.Fatalf("first event %v, want a protocol 1 hello", ev)
	}
	s.send(t, `{"type":"run","id":"r1","spec":{"command":"echo hi; exit 3","env":{},"kill_grace_ms":1000}}`)
	var types, stdout []string
	for {
		ev := s.next(t)
		if ev["id"] != "r1" {
			t.Fatalf("event %v, want id r1", ev)
		}
		types = append(types, ev["type"].(string))
		if ev["type"] == "stdout" {
			stdout = append(stdout, ev["data"].(string))
		}
		if ev["type"] == "exit" {
			if ev["exit_code"] != 3.0 || ev["started_at"] == nil || ev["finished_at"] == nil {
				t.Errorf("exit event %v, want exit_code 3 and both times", ev)
			}
			break
		}
	}
	if got := strings.Join(types, " "); got != "started stdout exit" {
		t.Errorf("events %q, want started, stdout, exit", got)
	}
	if got := strings.Join(stdout, ""); got != "aGkK" { // base64 of "hi\n"
		t.Errorf("stdout data %q, want aGkK", got)
	}
	if code := <-s.code; code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
}

func TestValidate(t *testing.T) {
	for shell, want := range map[string]string{"/bin/sh": "valid", "/nonexistent/sh": "error"} {
		s := start(t, shell)
		s.next(t) // hello
		s.send(t, `{"type":"validate","id":"v1"}`)
		if ev := s.next(t); ev["type"] != want || ev["id"] != "v1" {
			t.Errorf("shell %s: answer %v, want %s for v1", shell, ev, want)
		}
		if code := <-s.code; code != 0 {
			t.Errorf("shell %s: exit status %d, want 0", shell, code)
		}
	}
}
