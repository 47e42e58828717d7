// Package modal runs jobs in Modal sandboxes through Modal's official Go
// SDK (github.com/modal-labs/modal-client/go).
//
// Credentials are resolved in one place, Resolve: direct (a Modal token
// from the environment or ~/.modal.toml), managed (a Modal-compatible
// gateway with its own token, used only once its readiness check passes)
// or auto (managed when ready, else direct).
//
// One job attempt is one sandbox: created with the profile's image,
// resources (request = hard limit), network (blocked by default), a
// timeout derived from the job's deadline, and tags naming deployment,
// job, attempt and worker. The command runs as an exec of `sh -c` with
// exactly the job's environment (plus the image's own) and working
// directory, its output streamed as it comes; the sandbox is terminated
// when it ends, leftovers with it. When ctx is done the command's process
// group gets SIGTERM, then SIGKILL after the kill grace, then the sandbox
// is terminated. Jobs with a session key share a sandbox per key instead,
// terminated after SessionIdle without a job. A job with a workspace gets
// the workspace's Modal Volume (sandrun-ws-<deployment>-<name>, made on
// first use) mounted at WorkspaceDir, its working directory unless Dir is
// absolute; Run returns once its sandbox has ended, which is when Modal
// writes the changes back. RemoveWorkspace deletes the volume.
// ReapOrphans terminates the sandboxes of dead attempts, found by their
// tags.
package modal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	modal "github.com/modal-labs/modal-client/go"

	"github.com/sandrun/sandrun/internal/backends"
)

// Backend is the modal backend. It is safe for concurrent use.
type Backend struct {
	cfg   Config
	home  string
	ready ReadyFunc

	connMu sync.Mutex
	conn   *conn
	res    Resolution

	sessMu   sync.Mutex // serializes joining sessions (see joinSession)
	mu       sync.Mutex // guards what follows
	closed   bool
	sessions map[string]*session // by key
	running  map[string]int      // sandbox ID -> jobs running in it

	background sync.WaitGroup // work that outlives a Run: abandoned creations
}

// New checks cfg, fills in its defaults and returns the backend. It does
// not connect: Validate (at start-up) and the first Run resolve the
// credentials and dial.
func New(cfg Config) (*Backend, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("modal.%w", err) // modal.image: ... (the app adds backends.NAME.)
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	home, _ := os.UserHomeDir() // No home: no ~/.modal.toml, which Resolve reports.
	return &Backend{
		cfg: cfg, home: home, ready: gatewayReady(cfg),
		sessions: map[string]*session{}, running: map[string]int{},
	}, nil
}

// Kind implements backends.Backend.
func (b *Backend) Kind() string { return "modal" }

// Capabilities implements backends.Backend.
func (b *Backend) Capabilities() backends.Capabilities {
	return backends.Capabilities{Isolated: true, ResourceLimits: true, PersistentSessions: true, Workspaces: true,
		Container: []string{"network"}} // network: none only, with a blocked profile
}

// Validate resolves the credentials (once: the path chosen holds for the
// backend's life), dials Modal and checks that the token opens the app.
// A ResolveError says what was found and what to set.
func (b *Backend) Validate(ctx context.Context) error {
	c, err := b.connect(ctx)
	if err != nil {
		return err
	}
	return c.ping(ctx, b.cfg)
}

// Resolution reports the credential path Validate or the first Run
// resolved; before that, one whose Using is empty.
func (b *Backend) Resolution() Resolution {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	return b.res
}

// Describe says how the credentials were resolved (after Validate).
func (b *Backend) Describe(context.Context) (string, error) { return b.Resolution().String(), nil }

// Close terminates this backend's session sandboxes, waits for work it
// left in the background and closes the SDK client.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.closeSessions(context.Background())
	b.background.Wait()
	b.connMu.Lock()
	defer b.connMu.Unlock()
	if b.conn != nil {
		b.conn.sdk.Close()
		b.conn = nil
	}
	return nil
}

// errClosed is returned by a Run after Close.
var errClosed = fmt.Errorf("modal: backend closed: %w", backends.ErrUnavailable)

// connect resolves the credentials and dials, once; a failure is not
// kept, so the next call tries again.
func (b *Backend) connect(ctx context.Context) (*conn, error) {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	if b.conn != nil {
		return b.conn, nil
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	res, err := Resolve(ctx, ResolveInput{Config: b.cfg, LookupEnv: b.cfg.LookupEnv, HomeDir: b.home, Ready: b.ready})
	if err != nil {
		return nil, err
	}
	c, err := dial(ctx, res.endpoint(), b.cfg, res.Environment)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", res, err)
	}
	b.conn, b.res = c, res
	b.cfg.Logger.Info("modal: connected", "resolution", res)
	return c, nil
}

// ping checks that the token still opens the app.
func (c *conn) ping(ctx context.Context, cfg Config) error {
	if _, err := c.sdk.Apps.FromName(ctx, cfg.App, &modal.AppFromNameParams{CreateIfMissing: true}); err != nil {
		return classify("app "+cfg.App, err)
	}
	return nil
}

var (
	_ backends.Backend           = (*Backend)(nil)
	_ backends.OrphanReaper      = (*Backend)(nil)
	_ backends.Describer         = (*Backend)(nil)
	_ backends.WorkspaceRemover  = (*Backend)(nil)
	_ interface{ Close() error } = (*Backend)(nil)
)

// notStarted is Run's error when ctx was done before the job started.
func notStarted(ctx context.Context) error {
	return fmt.Errorf("modal: not started: %w", context.Cause(ctx))
}

// failed is Run's error for err, which ended the run before the command
// started: the cause when ctx is done, err itself otherwise.
func failed(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)) {
		return fmt.Errorf("%w (%w)", notStarted(ctx), err)
	}
	return err
}
