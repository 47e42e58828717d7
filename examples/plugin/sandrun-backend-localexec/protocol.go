package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// The messages of protocol v2 (docs/plugins.md), as this plugin reads and
// writes them. They are written out here, rather than imported from
// sandrun, so that this plugin shows everything a plugin must do.

// session is the host's first line: the protocol it speaks, and the key
// that signs every line this plugin writes. The key is a secret: it
// stays in this process's memory, and never reaches a job, a log or an
// error message. A job that knew it could forge this plugin's events.
type session struct {
	Type     string `json:"type"` // "session"
	Protocol int    `json:"protocol"`
	Key      string `json:"key"`
}

// request is any message from the host: validate, run or cancel.
type request struct {
	Type  string  `json:"type"`
	ID    string  `json:"id"`
	Spec  runSpec `json:"spec"`  // run
	Force bool    `json:"force"` // cancel
}

// runSpec is the job attempt a run request carries.
type runSpec struct {
	JobID       string            `json:"job_id"`
	Attempt     int               `json:"attempt"`
	Worker      string            `json:"worker"`
	Deployment  string            `json:"deployment"`
	Command     string            `json:"command"`
	Dir         string            `json:"dir"`
	Env         map[string]string `json:"env"` // Secrets: never log them.
	KillGraceMS int64             `json:"kill_grace_ms"`
	Session     string            `json:"session"`
}

// hello is this plugin's first line.
type hello struct {
	Type         string          `json:"type"` // "hello"
	Protocol     int             `json:"protocol"`
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Capabilities map[string]bool `json:"capabilities"`
}

// reply is an event that carries nothing but its type and the request's
// id: "valid".
type reply struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// started says the job runs.
type started struct {
	Type      string    `json:"type"` // "started"
	ID        string    `json:"id"`
	StartedAt time.Time `json:"started_at"`
}

// chunk is output: Data is base64 in JSON.
type chunk struct {
	Type string `json:"type"` // "stdout" or "stderr"
	ID   string `json:"id"`
	Data []byte `json:"data"`
}

// exit is the end of a run.
type exit struct {
	Type        string    `json:"type"` // "exit"
	ID          string    `json:"id"`
	ExitCode    int       `json:"exit_code"`
	Signal      string    `json:"signal,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at"`
	UserCPUNS   int64     `json:"user_cpu_ns"`
	SysCPUNS    int64     `json:"sys_cpu_ns"`
	MaxRSSBytes int64     `json:"max_rss_bytes"`
}

// failure is the error event: the request failed.
type failure struct {
	Type      string `json:"type"` // "error"
	ID        string `json:"id"`
	Message   string `json:"message"`
	Permanent bool   `json:"permanent"`
}

// events writes events to the host, one signed JSON line each, flushed at
// once. It is safe for concurrent use: the job's stdout and stderr are
// copied by goroutines of their own.
type events struct {
	mu  sync.Mutex
	w   *bufio.Writer
	key []byte // The session key, as the host wrote it.
}

func newEvents(w io.Writer, key string) *events {
	return &events{w: bufio.NewWriter(w), key: []byte(key)}
}

// send writes one event.
func (e *events) send(v any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sendLocked(v)
}

// sendLocked writes one event, as `MAC JSON`: MAC is the hex
// HMAC-SHA256 of the JSON bytes, with the session key; e.mu is held.
func (e *events) sendLocked(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, e.key)
	mac.Write(line)
	_, _ = e.w.WriteString(hex.EncodeToString(mac.Sum(nil)))
	_ = e.w.WriteByte(' ')
	_, _ = e.w.Write(line)
	_ = e.w.WriteByte('\n')
	return e.w.Flush()
}

// output is an io.Writer that sends what it gets as chunks of one stream.
type output struct {
	events *events
	id     string
	stream string // "stdout" or "stderr"
}

// Write sends p as one chunk: exec.Cmd copies the job's output in writes
// of at most 32 KiB, under the protocol's 64 KiB bound. A failure means
// the host is gone, and the job is killed; the output is dropped without
// failing the copy, so that the job does not get SIGPIPE first.
func (o output) Write(p []byte) (int, error) {
	_ = o.events.send(chunk{Type: o.stream, ID: o.id, Data: p})
	return len(p), nil
}
