package httpsandbox

import (
	"errors"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
)

// TestValidEnvName: the names sh accepts, as ^[A-Za-z_][A-Za-z0-9_]*$.
func TestValidEnvName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"PATH": true, "_x1": true, "a": true, "": false, "1A": false, "A-B": false, "É": false, "A\n": false,
	} {
		if got := ValidEnvName(name); got != want {
			t.Errorf("ValidEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestStoppedFill: 128+N after signal N is that signal; an end never seen
// after a signal is a kill.
func TestStoppedFill(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		st     Stopped
		code   int
		ended  bool
		exit   int
		signal string
	}{
		{Stopped{}, 3, true, 3, ""},
		{Stopped{Term: true}, 143, true, -1, "SIGTERM"},
		{Stopped{Term: true}, 137, true, 137, ""},
		{Stopped{Term: true, Kill: true}, 137, true, -1, "SIGKILL"},
		{Stopped{Term: true}, -1, false, -1, "SIGKILL"},
		{Stopped{}, -1, false, -1, ""},
	} {
		res := backends.Result{ExitCode: -1}
		tt.st.Fill(&res, tt.code, tt.ended)
		if res.ExitCode != tt.exit || res.Signal != tt.signal {
			t.Errorf("%+v.Fill(%d, %v) = %d %q, want %d %q", tt.st, tt.code, tt.ended, res.ExitCode, res.Signal, tt.exit, tt.signal)
		}
	}
}

// TestAPIError: 401 and 403 are permanent, 429 and 5xx unavailable.
func TestAPIError(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]error{401: backends.ErrPermanent, 403: backends.ErrPermanent, 429: backends.ErrUnavailable, 503: backends.ErrUnavailable, 404: nil} {
		err := error(&APIError{Op: "get", Status: status})
		if want != nil && !errors.Is(err, want) {
			t.Errorf("%d: %v is not %v", status, err, want)
		}
		if want == nil && (errors.Is(err, backends.ErrPermanent) || errors.Is(err, backends.ErrUnavailable)) || !HasStatus(err, status) {
			t.Errorf("%d: %v misclassified", status, err)
		}
	}
}

// TestAnswerMessage: the API's words, else the text, cut short and redacted.
func TestAnswerMessage(t *testing.T) {
	t.Parallel()
	c := &Client{Token: "secret-1", Message: func(data []byte) string {
		if string(data) == "structured" {
			return "the words"
		}
		return ""
	}}
	if got := c.answerMessage([]byte("structured")); got != "the words" {
		t.Errorf("got %q", got)
	}
	if got := redact(c.answerMessage([]byte("  bad secret-1  ")), c.Token); got != "bad [redacted]" {
		t.Errorf("got %q", got)
	}
	long := make([]byte, 400)
	for i := range long {
		long[i] = 'x'
	}
	if got := c.answerMessage(long); len(got) != 300+len("…") {
		t.Errorf("long message: %d bytes", len(got))
	}
}
