// Package httpsandbox is the runtime the HTTP sandbox backends (daytona,
// vercel) share: a JSON API client with retries and a jittered backoff
// whose errors wrap backends.ErrPermanent and backends.ErrUnavailable,
// output sinks and the wait for a log stream to drain, the retry loop of
// a log stream, the TERM-then-KILL stop of a job, and the checks of a
// spec that every such backend makes. What is specific to one API stays
// in its backend.
package httpsandbox
