package httpsandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"
)

// NewHTTPClient returns a client for an API. Its timeouts bound
// connecting; each call's context bounds the rest. With http1Only it
// never speaks HTTP/2 (a WebSocket upgrade needs HTTP/1.1); else it tries
// HTTP/2 even through a custom dialer.
func NewHTTPClient(http1Only bool) *http.Client {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	if http1Only {
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	} else {
		t.ForceAttemptHTTP2 = true
	}
	return &http.Client{Transport: t}
}

// request builds k's HTTP request with the credentials.
func (c *Client) request(ctx context.Context, k Call) (*http.Request, error) {
	var body io.Reader
	if k.Body != nil {
		data, err := json.Marshal(k.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Op, err)
		}
		body = bytes.NewReader(data)
	}
	target := k.URL.String()
	if len(c.Query) > 0 {
		u := *k.URL
		q := u.Query()
		for name, v := range c.Query {
			q[name] = v
		}
		u.RawQuery = q.Encode()
		target = u.String()
	}
	req, err := http.NewRequestWithContext(ctx, k.Method, target, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Op, err)
	}
	c.Authorize(req.Header)
	req.Header.Set("Accept", c.Accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Authorize sets the credentials' headers (and the client's others) on h.
func (c *Client) Authorize(h http.Header) {
	h.Set("Authorization", "Bearer "+c.Token)
	for name, v := range c.Headers {
		h.Set(name, v)
	}
	h.Set("User-Agent", "sandrun")
}

// AnswerError turns a non-2xx answer to the call op into an *APIError;
// quiet keeps the answer's message out of it.
func (c *Client) AnswerError(op string, quiet bool, resp *http.Response) *APIError {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Op: op, Status: resp.StatusCode}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		e.Hint = c.AuthHint
	}
	if !quiet {
		e.Message = redact(c.answerMessage(data), c.Token)
	}
	return e
}

// Backoff returns the wait before retry n+1 (n from 0): 250ms doubling,
// up to 2s, jittered by ±20%.
func Backoff(n int) time.Duration {
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
