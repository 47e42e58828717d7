package daytona

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// Kind is the backend's kind in profiles.
const Kind = "daytona"

// executeMargin is added to a job's remaining deadline to make its
// execute's API timeout, so that ctx, not the daemon, ends the job.
const executeMargin = 5 * time.Second

// Backend runs jobs in Daytona sandboxes. It is safe for concurrent use;
// Close releases its idle connections.
type Backend struct {
	cfg settings
	api *api
	// executeMargin is executeMargin; tests shorten it.
	executeMargin time.Duration
}

// New fills cfg's defaults into a copy, checks every field and reads the
// API key from the worker's environment. It does not call the API:
// Validate does.
func New(cfg Config) (*Backend, error) {
	s, err := settle(cfg)
	if err != nil {
		return nil, fmt.Errorf("daytona.%w", err) // daytona.FIELD: ... (the app adds backends.NAME.)
	}
	return &Backend{cfg: s, api: &api{c: newClient(s), base: s.base}, executeMargin: executeMargin}, nil
}

// newClient returns the client of the Daytona APIs (the control plane and
// sandboxes' toolboxes) with s's credentials. It speaks HTTP/1.1 only,
// since the log stream is a WebSocket upgrade.
func newClient(s settings) *httpsandbox.Client {
	var headers map[string]string
	if s.OrganizationID != "" {
		headers = map[string]string{"X-Daytona-Organization-ID": s.OrganizationID}
	}
	return &httpsandbox.Client{
		HTTP:     httpsandbox.NewHTTPClient(true),
		Token:    s.key,
		Headers:  headers,
		Accept:   "application/json",
		AuthHint: "check the API key in " + s.APIKeyEnv + " (api_key_env)",
		Message:  answerMessage,
		Timeout:  s.RequestTimeout,
	}
}

// Kind implements backends.Backend.
func (b *Backend) Kind() string { return Kind }

// Capabilities implements backends.Backend: sandboxes are isolated and
// sized; each job has its own, so nothing persists between jobs but a
// workspace, a Daytona volume mounted at WorkspaceDir. In session mode
// Run follows the command's log again after a broken connection and skips
// what it had copied (ResumableOutput); execute mode loses the output
// with the connection.
func (b *Backend) Capabilities() backends.Capabilities {
	return backends.Capabilities{Isolated: true, ResourceLimits: true, Workspaces: true, Container: []string{"image"},
		ResumableOutput: b.cfg.Mode == ModeSession}
}

// Validate implements backends.Backend: one authenticated, cheap call
// (GET /sandbox?limit=1) shows that the API answers and takes the key.
func (b *Backend) Validate(ctx context.Context) error {
	u := b.api.base.JoinPath("sandbox")
	u.RawQuery = url.Values{"limit": {"1"}}.Encode()
	err := b.api.c.Do(ctx, httpsandbox.Call{Op: "list sandboxes", Method: http.MethodGet, URL: u, Idempotent: true})
	if err != nil {
		return fmt.Errorf("daytona: api_url %s: %w", b.cfg.APIURL, err)
	}
	return nil
}

// Close releases the backend's idle connections.
func (b *Backend) Close() error {
	b.api.c.HTTP.CloseIdleConnections()
	return nil
}

var (
	_ backends.Backend          = (*Backend)(nil)
	_ backends.OrphanReaper     = (*Backend)(nil)
	_ backends.WorkspaceRemover = (*Backend)(nil)
	_ io.Closer                 = (*Backend)(nil)
)
