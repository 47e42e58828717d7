package httpsandbox

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
)

// APIError is an answer of the API other than 2xx.
type APIError struct {
	Op      string
	Status  int
	Message string // the API's words, when they may be shown
	Hint    string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %s", e.Op, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// Is makes 401 and 403 permanent, 429 and 5xx unavailable.
func (e *APIError) Is(target error) bool {
	switch target {
	case backends.ErrPermanent:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case backends.ErrUnavailable:
		return e.Status == http.StatusTooManyRequests || e.Status >= 500
	}
	return false
}

// HasStatus reports whether err is an API answer with one of statuses.
func HasStatus(err error, statuses ...int) bool {
	var e *APIError
	if !errors.As(err, &e) {
		return false
	}
	for _, s := range statuses {
		if e.Status == s {
			return true
		}
	}
	return false
}

// answerMessage digs the message out of an error answer with c.Message;
// else it is the text itself. Either is cut short.
func (c *Client) answerMessage(data []byte) string {
	msg := strings.TrimSpace(string(data))
	if c.Message != nil {
		if m := c.Message(data); m != "" {
			msg = m
		}
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return strings.ToValidUTF8(msg, "?")
}

// redact removes secret from s.
func redact(s, secret string) string {
	if len(secret) < 4 {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}
