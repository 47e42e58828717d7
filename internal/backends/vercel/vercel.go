package vercel

import (
	"context"
	"fmt"
	"io"

	"github.com/sandrun/sandrun/internal/backends"
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
	c := &client{hc: newHTTPClient(), creds: s.creds, timeout: s.RequestTimeout}
	return &Backend{cfg: s, api: &api{c: c, base: s.base}}, nil
}

// Kind implements backends.Backend.
func (b *Backend) Kind() string { return Kind }

// Capabilities implements backends.Backend: sandboxes are isolated
// microVMs with a fixed size; each job has its own, so nothing persists
// between jobs.
func (b *Backend) Capabilities() backends.Capabilities {
	return backends.Capabilities{Isolated: true, ResourceLimits: true}
}

// Validate implements backends.Backend: one authenticated, cheap call
// (listing one sandbox of the project) shows that the API answers and
// takes the credentials for this team and project.
func (b *Backend) Validate(ctx context.Context) error {
	if _, err := b.api.list(ctx, "", "", "", 1); err != nil {
		return fmt.Errorf("vercel: api_url %s, team %s, project %s: %w", b.cfg.APIURL, b.api.c.creds.team, b.api.c.creds.project, err)
	}
	return nil
}

// Close releases the backend's idle connections.
func (b *Backend) Close() error {
	b.api.c.hc.CloseIdleConnections()
	return nil
}

var (
	_ backends.Backend      = (*Backend)(nil)
	_ backends.OrphanReaper = (*Backend)(nil)
	_ io.Closer             = (*Backend)(nil)
)
