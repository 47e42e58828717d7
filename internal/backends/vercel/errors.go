package vercel

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
)

// apiError is an answer of the API other than 2xx.
type apiError struct {
	Op      string
	Status  int
	Message string // the API's words, when they may be shown
	Hint    string
}

func (e *apiError) Error() string {
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
func (e *apiError) Is(target error) bool {
	switch target {
	case backends.ErrPermanent:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case backends.ErrUnavailable:
		return e.Status == http.StatusTooManyRequests || e.Status >= 500
	}
	return false
}

// hasStatus reports whether err is an API answer with one of statuses.
func hasStatus(err error, statuses ...int) bool {
	var e *apiError
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

// answerMessage digs the message out of an error answer,
// {"error": {"code": ..., "message": ...}}; else the text itself, cut
// short.
func answerMessage(data []byte) string {
	var m struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &m) == nil && (m.Error.Code != "" || m.Error.Message != "") {
		msg = strings.TrimPrefix(m.Error.Code+": "+m.Error.Message, ": ")
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
