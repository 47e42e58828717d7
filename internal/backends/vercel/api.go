package vercel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// api is the Sandbox API (v2: named sandboxes and their sessions).
type api struct {
	c     *httpsandbox.Client
	base  *url.URL    // the api_url
	creds credentials // the project is a parameter of some calls
}

// createSandboxRequest is the body of POST /v2/sandboxes.
type createSandboxRequest struct {
	ProjectID     string            `json:"projectId"`
	Name          string            `json:"name"`
	Runtime       string            `json:"runtime"`
	Resources     resources         `json:"resources"`
	Timeout       int64             `json:"timeout"` // ms
	Persistent    bool              `json:"persistent"`
	Tags          map[string]string `json:"tags"`
	NetworkPolicy networkPolicy     `json:"networkPolicy"`
}

type resources struct {
	VCPUs int `json:"vcpus"`
}

type networkPolicy struct {
	Mode string `json:"mode"`
}

// namedSandbox is the API's Sandbox (a named sandbox), the fields this
// package reads.
type namedSandbox struct {
	Name             string            `json:"name"`
	Status           string            `json:"status"`
	CurrentSessionID string            `json:"currentSessionId"`
	Tags             map[string]string `json:"tags"`
}

// session is the API's Session (the microVM a sandbox runs in).
type session struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// Session states this package acts on.
const (
	statusRunning = "running"
	statusStopped = "stopped"
	statusFailed  = "failed"
	statusAborted = "aborted"
)

// command is the API's Command: ExitCode is nil while it runs.
type command struct {
	ID       string `json:"id"`
	ExitCode *int   `json:"exitCode"`
}

// runCommandRequest is the body of POST …/sessions/{id}/cmd.
type runCommandRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
}

// create creates a named sandbox and its first session. It is not
// retried on a 5xx: the sandbox may exist (its tags find it again).
func (a *api) create(ctx context.Context, req createSandboxRequest) (namedSandbox, session, error) {
	var resp struct {
		Sandbox namedSandbox `json:"sandbox"`
		Session session      `json:"session"`
	}
	err := a.c.Do(ctx, httpsandbox.Call{Op: "create sandbox", Method: http.MethodPost, URL: a.base.JoinPath("v2", "sandboxes"), Body: req, Out: &resp})
	return resp.Sandbox, resp.Session, err
}

// session reads a session (GET /v2/sandboxes/sessions/{sessionId}).
func (a *api) session(ctx context.Context, id string) (session, error) {
	var resp struct {
		Session session `json:"session"`
	}
	err := a.c.Do(ctx, httpsandbox.Call{Op: "get session", Method: http.MethodGet, URL: a.sessionURL(id), Out: &resp, Idempotent: true})
	return resp.Session, err
}

func (a *api) sessionURL(id string, elem ...string) *url.URL {
	return a.base.JoinPath(append([]string{"v2", "sandboxes", "sessions", id}, elem...)...)
}

// run starts a command without waiting for it. It is never retried but
// on 429: the command may have started.
func (a *api) run(ctx context.Context, sid string, req runCommandRequest) (command, error) {
	var resp struct {
		Command command `json:"command"`
	}
	err := a.c.Do(ctx, httpsandbox.Call{Op: "run command", Method: http.MethodPost, URL: a.sessionURL(sid, "cmd"), Body: req, Out: &resp, Quiet: true})
	if err == nil && resp.Command.ID == "" {
		err = fmt.Errorf("run command: the answer has no command id")
	}
	return resp.Command, err
}

// command reads a command's status (GET …/cmd/{cmdId}).
func (a *api) command(ctx context.Context, sid, cid string) (command, error) {
	var resp struct {
		Command command `json:"command"`
	}
	err := a.c.Do(ctx, httpsandbox.Call{Op: "get command", Method: http.MethodGet, URL: a.sessionURL(sid, "cmd", cid), Out: &resp, Idempotent: true})
	return resp.Command, err
}

// wait waits for a command to end (GET …/cmd/{cmdId}?wait=true), as
// long as ctx allows.
func (a *api) wait(ctx context.Context, sid, cid string) (command, error) {
	var resp struct {
		Command command `json:"command"`
	}
	u := a.sessionURL(sid, "cmd", cid)
	u.RawQuery = "wait=true"
	err := a.c.Do(ctx, httpsandbox.Call{Op: "wait for command", Method: http.MethodGet, URL: u, Out: &resp, Idempotent: true, Timeout: -1})
	return resp.Command, err
}

// logs opens a command's log stream (GET …/cmd/{cmdId}/logs, ND-JSON
// until the command ends); the caller closes it.
func (a *api) logs(ctx context.Context, sid, cid string) (io.ReadCloser, error) {
	var body io.ReadCloser
	err := a.c.Do(ctx, httpsandbox.Call{Op: "stream logs", Method: http.MethodGet, URL: a.sessionURL(sid, "cmd", cid, "logs"),
		Raw: &body, Idempotent: true, Timeout: -1})
	return body, err
}

// kill sends a POSIX signal to a running command.
func (a *api) kill(ctx context.Context, sid, cid string, signal int) error {
	return a.c.Do(ctx, httpsandbox.Call{Op: "kill command", Method: http.MethodPost, URL: a.sessionURL(sid, "cmd", cid, "kill"),
		Body: map[string]int{"signal": signal}, Idempotent: true})
}

// stopSession stops a session; one gone already is not an error.
func (a *api) stopSession(ctx context.Context, sid string) error {
	err := a.c.Do(ctx, httpsandbox.Call{Op: "stop session " + sid, Method: http.MethodPost, URL: a.sessionURL(sid, "stop"), Idempotent: true})
	if httpsandbox.HasStatus(err, http.StatusNotFound, http.StatusGone) {
		return nil
	}
	return err
}

// remove deletes a named sandbox; one gone already is not an error.
func (a *api) remove(ctx context.Context, name string) error {
	u := a.base.JoinPath("v2", "sandboxes", name)
	u.RawQuery = url.Values{"projectId": {a.creds.project}}.Encode()
	err := a.c.Do(ctx, httpsandbox.Call{Op: "delete sandbox " + name, Method: http.MethodDelete, URL: u, Idempotent: true})
	if httpsandbox.HasStatus(err, http.StatusNotFound, http.StatusGone) {
		return nil
	}
	return err
}

// sandboxesPage is one page of GET /v2/sandboxes.
type sandboxesPage struct {
	Sandboxes  []namedSandbox `json:"sandboxes"`
	Pagination struct {
		Next *string `json:"next"`
	} `json:"pagination"`
}

// list reads one page of the project's sandboxes carrying tag key:value
// (the API filters on one tag at a time).
func (a *api) list(ctx context.Context, key, value, cursor string, limit int) (sandboxesPage, error) {
	var page sandboxesPage
	q := url.Values{"project": {a.creds.project}, "limit": {strconv.Itoa(limit)}}
	if key != "" {
		q.Set("tags", key+":"+value)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	u := a.base.JoinPath("v2", "sandboxes")
	u.RawQuery = q.Encode()
	err := a.c.Do(ctx, httpsandbox.Call{Op: "list sandboxes", Method: http.MethodGet, URL: u, Out: &page, Idempotent: true})
	return page, err
}
