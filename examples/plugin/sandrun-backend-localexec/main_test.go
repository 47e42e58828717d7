package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
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

// testKey is the session key the tests hand the plugin.
const testKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// conn serves one request in process: the test writes request lines to
// stdin and reads signed events from events.
type conn struct {
	stdin  *io.PipeWriter
	events *bufio.Scanner
	code   chan int // serve's exit status.
}

// start serves one request with shell, and writes the session line.
func start(t *testing.T, shell string) *conn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &conn{stdin: inW, events: bufio.NewScanner(outR), code: make(chan int, 1)}
	c.events.Buffer(nil, 1<<20)
	go func() {
		c.code <- serve(shell, inR, outW, log.New(io.Discard, "", 0))
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close() // The host goes away: the plugin's reader returns.
		_ = outR.Close()
	})
	c.send(t, `{"type":"session","protocol":2,"key":"`+testKey+`"}`)
	return c
}

// send writes one request line.
func (c *conn) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		t.Fatalf("writing %s: %v", line, err)
	}
}

// next reads the next event, checks its signature, and returns it as a
// map.
func (c *conn) next(t *testing.T) map[string]any {
	t.Helper()
	if !c.events.Scan() {
		t.Fatalf("reading an event: %v", c.events.Err())
	}
	mac, msg, ok := strings.Cut(c.events.Text(), " ")
	m := hmac.New(sha256.New, []byte(testKey))
	m.Write([]byte(msg))
	if want := hex.EncodeToString(m.Sum(nil)); !ok || mac != want {
		t.Fatalf("event %q: MAC %q, want %q", c.events.Text(), mac, want)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(msg), &ev); err != nil {
		t.Fatalf("event %q: %v", msg, err)
	}
	return ev
}

func TestRun(t *testing.T) {
	s := start(t, "/bin/sh")
	if ev := s.next(t); ev["type"] != "hello" || ev["protocol"] != 2.0 {
		t.Fatalf("first event %v, want a protocol 2 hello", ev)
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

// TestNoSession checks that the plugin says nothing without the host's
// session line: it cannot sign its hello.
func TestNoSession(t *testing.T) {
	inR, inW := io.Pipe()
	out := &strings.Builder{}
	code := make(chan int, 1)
	go func() { code <- serve("/bin/sh", inR, out, log.New(io.Discard, "", 0)) }()
	_, _ = io.WriteString(inW, `{"type":"hello","protocol":1}`+"\n")
	_ = inW.Close()
	if c := <-code; c != 2 || out.Len() != 0 {
		t.Errorf("exit status %d, stdout %q; want 2 and nothing", c, out)
	}
}
