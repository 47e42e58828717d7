package vercel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// maxAttempts bounds the tries of one retried call; maxErrorBody bounds
// what is read of an error answer, and maxBody of a JSON answer.
const (
	maxAttempts  = 4
	maxErrorBody = 4 << 10
	maxBody      = 32 << 20
)

// client calls the Sandbox API with the profile's credentials.
type client struct {
	hc      *http.Client
	creds   credentials
	timeout time.Duration
}

// newHTTPClient returns the client every call goes through. Its timeouts
// bound connecting; each call's context bounds the rest, since log
// streams and waits last as long as the job.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// call is one API request.
type call struct {
	op     string // what it does, for errors ("create sandbox")
	method string
	url    *url.URL
	body   any // JSON-encoded when not nil
	out    any // JSON-decoded from a 2xx answer when not nil
	// idempotent calls are retried on 5xx answers and connection errors;
	// every call is retried on 429, which the API answers before acting.
	idempotent bool
	// timeout bounds the call: 0 means the client's, < 0 none but ctx's.
	timeout time.Duration
	// quiet keeps the answer's message out of errors: the request carried
	// the job's environment, which an error message could echo.
	quiet bool
	// raw, when set, gets a 2xx answer's open body (its caller closes it)
	// instead of out; only ctx bounds such a call.
	raw *io.ReadCloser
}

// do makes the call, retrying as it allows with a jittered backoff.
func (c *client) do(ctx context.Context, k call) error {
	for attempt := 1; ; attempt++ {
		again, wait, err := c.once(ctx, k)
		if err == nil || !again || attempt == maxAttempts || ctx.Err() != nil {
			return err
		}
		if wait == 0 {
			wait = backoff(attempt - 1)
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
func (c *client) once(ctx context.Context, k call) (again bool, wait time.Duration, err error) {
	timeout := k.timeout
	if timeout == 0 {
		timeout = c.timeout
	}
	if timeout > 0 && k.raw == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := c.request(ctx, k)
	if err != nil {
		return false, 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, fmt.Errorf("%s: %w", k.op, err)
		}
		return k.idempotent, 0, fmt.Errorf("%s: %w: %w", k.op, backends.ErrUnavailable, err)
	}
	if resp.StatusCode/100 == 2 && k.raw != nil {
		*k.raw = resp.Body
		return false, 0, nil
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		e := c.answerError(k, resp)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			return true, retryAfter(resp), e
		case resp.StatusCode >= 500:
			return k.idempotent, 0, e
		}
		return false, 0, e
	}
	if k.out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return false, 0, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(k.out); err != nil {
		return false, 0, fmt.Errorf("%s: decoding the answer: %w", k.op, err)
	}
	return false, 0, nil
}

// request builds k's HTTP request with the credentials.
func (c *client) request(ctx context.Context, k call) (*http.Request, error) {
	var body io.Reader
	if k.body != nil {
		data, err := json.Marshal(k.body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.op, err)
		}
		body = bytes.NewReader(data)
	}
	u := *k.url
	q := u.Query()
	q.Set("teamId", c.creds.team)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, k.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.op, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.creds.token)
	req.Header.Set("User-Agent", "sandrun")
	req.Header.Set("Accept", "application/json, application/x-ndjson")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// answerError turns a non-2xx answer into an *apiError.
func (c *client) answerError(k call, resp *http.Response) *apiError {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &apiError{Op: k.op, Status: resp.StatusCode}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		e.Hint = "check the token in " + c.creds.env + ", and team_id and project_id"
	}
	if !k.quiet {
		e.Message = redact(answerMessage(data), c.creds.token)
	}
	return e
}

// backoff returns the wait before retry n+1 (n from 0): 250ms doubling,
// up to 2s, jittered by ±20%.
func backoff(n int) time.Duration {
	d := min(250*time.Millisecond<<n, 2*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// retryAfter honours a 429's Retry-After in seconds, up to 10s; 0 means
// none was given.
func retryAfter(resp *http.Response) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return min(time.Duration(s)*time.Second, 10*time.Second)
	}
	return 0
}
