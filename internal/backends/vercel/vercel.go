package vercel

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// Kind is the backend's kind in profiles.
const Kind = "vercel"

// Backend runs jobs in Vercel Sandboxes. It is safe for concurrent use;
// Close releases its idle connections.
type Backend struct {
	cfg settings
	api *api
}

// New fills cfg's defaults into a copy, checks every field, and reads and
// checks the credentials together. It does not call the API: Validate
// does.
func New(cfg Config) (*Backend, error) {
	s, err := settle(cfg)
	if err != nil {
		return nil, fmt.Errorf("vercel.%w", err) // vercel.FIELD: ... (the app adds backends.NAME.)
	}
	return &Backend{cfg: s, api: &api{c: newClient(s), base: s.base, creds: s.creds}}, nil
}

// newClient returns the client of the Sandbox API with s's credentials:
// every call names the team.
func newClient(s settings) *httpsandbox.Client {
	return &httpsandbox.Client{
		HTTP:     httpsandbox.NewHTTPClient(false),
		Token:    s.creds.token,
		Query:    url.Values{"teamId": {s.creds.team}},
		Accept:   "application/json, application/x-ndjson",
		AuthHint: "check the token in " + s.creds.env + ", and team_id and project_id",
		Message:  answerMessage,
		Timeout:  s.RequestTimeout,
	}
}

// Kind implements backends.Backend.
func (b *Backend) Kind() string { return Kind }

// Capabilities implements backends.Backend: sandboxes are isolated
// microVMs with a fixed size; each job has its own, so nothing persists
// between jobs. After a broken connection Run follows the command's logs
// again, skipping what it had copied, and waits for its exit code anew
// (ResumableOutput).
func (b *Backend) Capabilities() backends.Capabilities {
	return backends.Capabilities{Isolated: true, ResourceLimits: true, ResumableOutput: true}
}

// Validate implements backends.Backend: one authenticated, cheap call
// (listing one sandbox of the project) shows that the API answers and
// takes the credentials for this team and project.
func (b *Backend) Validate(ctx context.Context) error {
	if _, err := b.api.list(ctx, "", "", "", 1); err != nil {
		return fmt.Errorf("vercel: api_url %s, team %s, project %s: %w", b.cfg.APIURL, b.api.creds.team, b.api.creds.project, err)
	}
	return nil
}

// Close releases the backend's idle connections.
func (b *Backend) Close() error {
	b.api.c.HTTP.CloseIdleConnections()
	return nil
}

var (
	_ backends.Backend      = (*Backend)(nil)
	_ backends.OrphanReaper = (*Backend)(nil)
	_ io.Closer             = (*Backend)(nil)
)
