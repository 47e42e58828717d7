package secrets

import (
	"bytes"
	"io"
	"slices"
	"sync"
)

// Mask is the text that replaces a secret value in output.
const Mask = "[REDACTED]"

// Masker writes to its destination what it is given with every
// occurrence of the secret values replaced by Mask, also when a value is
// split across writes: it holds back the bytes that may begin a value
// until the next write or Flush. Safe for concurrent use.
type Masker struct {
	mu      sync.Mutex
	dst     io.Writer
	values  [][]byte // longest first
	longest int
	pending []byte
}

// NewMasker masks values (empty ones are ignored) in what reaches dst. With
// no values it returns dst's writes unchanged.
func NewMasker(dst io.Writer, values []string) *Masker {
	m := &Masker{dst: dst}
	for _, v := range values {
		if v != "" {
			m.values = append(m.values, []byte(v))
			m.longest = max(m.longest, len(v))
		}
	}
	slices.SortFunc(m.values, func(a, b []byte) int { return len(b) - len(a) })
	return m
}

// Write implements io.Writer.
func (m *Masker) Write(p []byte) (int, error) {
	if len(m.values) == 0 {
		return m.dst.Write(p)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = append(m.pending, p...)
	out, keep := m.scan(false)
	m.pending = append(m.pending[:0], keep...)
	if len(out) > 0 {
		if _, err := m.dst.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held back. Call it when the output has ended.
func (m *Masker) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return nil
	}
	out, _ := m.scan(true)
	m.pending = m.pending[:0]
	_, err := m.dst.Write(out)
	return err
}

// scan returns the masked bytes that can be released and the tail to
// hold back (a suffix that is a prefix of some value), or none at the
// end.
func (m *Masker) scan(final bool) (out, keep []byte) {
	buf := m.pending
	var b bytes.Buffer
	i := 0
	for i < len(buf) {
		// A value that more bytes may complete (a longer one than any
		// that matches now) decides on the next write.
		if !final && m.couldStart(buf[i:]) {
			break
		}
		matched := false
		for _, v := range m.values {
			if bytes.HasPrefix(buf[i:], v) {
				b.WriteString(Mask)
				i += len(v)
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		b.WriteByte(buf[i])
		i++
	}
	return b.Bytes(), buf[i:]
}

// couldStart reports whether rest, shorter than some value, is a prefix
// of it: more bytes may complete the value.
func (m *Masker) couldStart(rest []byte) bool {
	if len(rest) >= m.longest {
		return false
	}
	for _, v := range m.values {
		if len(rest) < len(v) && bytes.HasPrefix(v, rest) {
			return true
		}
	}
	return false
}

// MaskString masks values in s at once.
func MaskString(s string, values []string) string {
	var b bytes.Buffer
	m := NewMasker(&b, values)
	_, _ = m.Write([]byte(s))
	_ = m.Flush()
	return b.String()
}
