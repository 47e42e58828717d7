package plugin

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
)

// A plugin's stdout may carry bytes that are not the plugin's: a plugin
// that passes its workload's output through, or a workload that opens
// the plugin's stdout through /proc. So that such bytes can never pass
// for the plugin's messages, each plugin process gets a session key of
// its own, in the session line the host writes on its stdin before it
// starts, and signs every line it writes with it:
//
//	MAC SP JSON LF
//
// where MAC is the hex HMAC-SHA256 of the JSON bytes (lowercase by
// convention; either case is accepted), keyed by the key as written (its
// 64 ASCII hex digits). The key crosses the
// plugin's stdin once, before any workload exists, never its stdout, and
// is never in its environment or arguments: a workload cannot learn it,
// nor forge a line with it. Request ids are random too, so that nothing
// about a request can be guessed; they are not secrets.
const (
	keyBytes = 32 // A session key: 256 bits, 64 hex digits.
	idBytes  = 16 // A request id: 128 bits, 32 hex digits after its prefix.

	macHexLen = 2 * sha256.Size // The MAC that starts every line.
)

// sessionKey is the key a plugin process signs its lines with: 64 hex
// digits. It redacts itself in logs and formatted errors.
type sessionKey string

// String redacts the key.
func (sessionKey) String() string { return "[REDACTED]" }

// LogValue redacts the key.
func (sessionKey) LogValue() slog.Value { return slog.StringValue("[REDACTED]") }

// sign returns line as the plugin writes it: its MAC, a space and line.
// The host does not sign its requests; the reference plugin and the
// tests do.
func (k sessionKey) sign(line []byte) []byte {
	m := hmac.New(sha256.New, []byte(k))
	m.Write(line)
	return append(append(hex.AppendEncode(nil, m.Sum(nil)), ' '), line...)
}

// open checks the MAC of a line the plugin wrote. It returns the JSON
// after the MAC, or why the line is not the plugin's. Reasons never quote
// the line: it may hold anything, a job's secrets included.
func (k sessionKey) open(line []byte) (msg []byte, reason string) {
	if len(line) < macHexLen+2 || line[macHexLen] != ' ' {
		return nil, "it is not a MAC, a space and a message"
	}
	want := make([]byte, sha256.Size)
	if _, err := hex.Decode(want, line[:macHexLen]); err != nil {
		return nil, "its MAC is not 64 hex digits"
	}
	msg = line[macHexLen+1:]
	m := hmac.New(sha256.New, []byte(k))
	m.Write(msg)
	if !hmac.Equal(m.Sum(nil), want) {
		return nil, "its MAC does not match this plugin process's session key"
	}
	return msg, ""
}

// sessionMessage is the host's first line on a plugin's stdin: the
// protocol it speaks and the plugin process's session key.
type sessionMessage struct {
	Type     string     `json:"type"` // typeSession
	Protocol int        `json:"protocol"`
	Key      sessionKey `json:"key"`
}

// random returns n random bytes of b.random as hex digits.
func (b *Backend) random(n int) (string, error) {
	buf := make([]byte, n)
	if _, err := io.ReadFull(b.rand, buf); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return hex.EncodeToString(buf), nil
}

// newConversation returns the conversation of a new request of kind
// (typeValidate or typeRun): a random request id, with prefix, and a
// session key for the plugin process that serves it.
func (b *Backend) newConversation(kind, prefix string) (*conversation, error) {
	id, err := b.random(idBytes)
	if err != nil {
		return nil, err
	}
	key, err := b.random(keyBytes)
	if err != nil {
		return nil, err
	}
	return &conversation{id: prefix + id, kind: kind, key: sessionKey(key), log: b.log}, nil
}
