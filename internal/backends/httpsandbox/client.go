package httpsandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// MaxAttempts bounds the tries of one retried call; maxErrorBody bounds
// what is read of an error answer, and maxBody of a JSON answer.
const (
	MaxAttempts  = 4
	maxErrorBody = 4 << 10
	maxBody      = 32 << 20
)

// Client calls one sandbox API with a profile's credentials. Its fields
// are set once, before its first call.
type Client struct {
	// HTTP is the client every call goes through (see NewHTTPClient).
	HTTP *http.Client
	// Token is the bearer token; it is redacted from error messages.
	Token string
	// Headers are set on every request besides the credentials.
	Headers map[string]string
	// Query is added to every request's URL.
	Query url.Values
	// Accept is every request's Accept header.
	Accept string
	// AuthHint ends the error of a 401 or 403 answer.
	AuthHint string
	// Message digs the message out of an error answer's body; "" (or a
	// nil Message) means the body's text itself.
	Message func(data []byte) string
	// Timeout bounds a call whose own Timeout is 0.
	Timeout time.Duration
}

// Call is one API request.
type Call struct {
	Op     string // what it does, for errors ("create sandbox")
	Method string
	URL    *url.URL
	Body   any // JSON-encoded when not nil
	Out    any // JSON-decoded from a 2xx answer when not nil
	// Idempotent calls are retried on 5xx answers and connection errors;
	// every call is retried on 429, which the API answers before acting.
	Idempotent bool
	// Timeout bounds the call: 0 means the client's, < 0 none but ctx's.
	Timeout time.Duration
	// Quiet keeps the answer's message out of errors: the request carried
	// the job's environment, which an error message could echo.
	Quiet bool
	// Raw, when set, gets a 2xx answer's open body (its caller closes it)
	// instead of Out; only ctx bounds such a call.
	Raw *io.ReadCloser
}

// Do makes the call, retrying as it allows with a jittered backoff.
func (c *Client) Do(ctx context.Context, k Call) error {
	for attempt := 1; ; attempt++ {
		again, wait, err := c.once(ctx, k)
		if err == nil || !again || attempt == MaxAttempts || ctx.Err() != nil {
			return err
		}
		if wait == 0 {
			wait = Backoff(attempt - 1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// once makes one try. On failure it says whether the call may be tried
// again, and after how long when the API said so.
func (c *Client) once(ctx context.Context, k Call) (again bool, wait time.Duration, err error) {
	timeout := k.Timeout
	if timeout == 0 {
		timeout = c.Timeout
	}
	if timeout > 0 && k.Raw == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := c.request(ctx, k)
	if err != nil {
		return false, 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, fmt.Errorf("%s: %w", k.Op, err)
		}
		return k.Idempotent, 0, fmt.Errorf("%s: %w: %w", k.Op, backends.ErrUnavailable, err)
	}
	if resp.StatusCode/100 == 2 && k.Raw != nil {
		*k.Raw = resp.Body
		return false, 0, nil
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		e := c.AnswerError(k.Op, k.Quiet, resp)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			return true, retryAfter(resp), e
		case resp.StatusCode >= 500:
			return k.Idempotent, 0, e
		}
		return false, 0, e
	}
	if k.Out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return false, 0, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(k.Out); err != nil {
		return false, 0, fmt.Errorf("%s: decoding the answer: %w", k.Op, err)
	}
	return false, 0, nil
}
