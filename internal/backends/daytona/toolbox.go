package daytona

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// toolbox is one sandbox's toolbox API, {toolboxProxyUrl}/{sandboxId}.
type toolbox struct {
	c    *httpsandbox.Client
	base *url.URL
}

// executeRequest is the toolbox's ExecuteRequest.
type executeRequest struct {
	Command string            `json:"command"`
	Cwd     string            `json:"cwd,omitempty"`
	Envs    map[string]string `json:"envs,omitempty"`
	// Timeout is in seconds. It is always sent: the daemon applies none
	// without it, though the spec says 10s.
	Timeout int `json:"timeout"`
}

// executeResponse is the toolbox's ExecuteResponse: stdout and stderr
// combined in Result; ExitCode -1 when the shell could not start.
type executeResponse struct {
	ExitCode *int   `json:"exitCode"`
	Result   string `json:"result"`
}

// execute runs a command synchronously (POST /process/execute). The
// answer comes when the command ends; on the daemon's timeout, which
// kills it, it is a 408 (see isExecuteTimeout). The call is bounded by
// ctx only.
func (t *toolbox) execute(ctx context.Context, req executeRequest) (executeResponse, error) {
	var resp executeResponse
	err := t.c.Do(ctx, httpsandbox.Call{Op: "execute", Method: http.MethodPost, URL: t.base.JoinPath("process", "execute"),
		Body: req, Out: &resp, Timeout: -1, Quiet: true})
	return resp, err
}

// isExecuteTimeout reports whether err is the 408 of an execute whose
// timeout passed.
func isExecuteTimeout(err error) bool { return httpsandbox.HasStatus(err, http.StatusRequestTimeout) }

// createSession creates a session (POST /process/session, 201). One that
// exists already (409: a retry whose first try got through) will do.
func (t *toolbox) createSession(ctx context.Context, id string) error {
	err := t.c.Do(ctx, httpsandbox.Call{Op: "create session", Method: http.MethodPost, URL: t.base.JoinPath("process", "session"),
		Body: struct {
			SessionID string `json:"sessionId"`
		}{id}})
	if httpsandbox.HasStatus(err, http.StatusConflict) {
		return nil
	}
	return err
}

// sessionExecRequest is the toolbox's SessionExecuteRequest.
type sessionExecRequest struct {
	Command  string `json:"command"`
	RunAsync bool   `json:"runAsync"`
}

// exec starts command in session sid without waiting for it (POST
// /process/session/{sessionId}/exec, 202) and returns the command's ID.
// It is never retried: the command may have started.
func (t *toolbox) exec(ctx context.Context, sid, command string) (string, error) {
	var resp struct {
		CmdID string `json:"cmdId"`
	}
	err := t.c.Do(ctx, httpsandbox.Call{Op: "execute session command", Method: http.MethodPost,
		URL:  t.base.JoinPath("process", "session", sid, "exec"),
		Body: sessionExecRequest{Command: command, RunAsync: true}, Out: &resp, Quiet: true})
	if err == nil && resp.CmdID == "" {
		err = fmt.Errorf("execute session command: the answer has no cmdId")
	}
	return resp.CmdID, err
}

// commandStatus is the toolbox's Command, without its text (which holds
// the job's environment): ExitCode is nil while it runs.
type commandStatus struct {
	ID       string `json:"id"`
	ExitCode *int   `json:"exitCode"`
}

// command reads a session command's status (GET
// /process/session/{sessionId}/command/{commandId}).
func (t *toolbox) command(ctx context.Context, sid, cid string) (commandStatus, error) {
	var st commandStatus
	err := t.c.Do(ctx, httpsandbox.Call{Op: "get session command", Method: http.MethodGet,
		URL: t.base.JoinPath("process", "session", sid, "command", cid), Out: &st, Idempotent: true})
	return st, err
}

// logsURL is the URL of a session command's log
// (…/command/{commandId}/logs, read over a WebSocket; follow=true
// streams it).
func (t *toolbox) logsURL(sid, cid string) *url.URL {
	return t.base.JoinPath("process", "session", sid, "command", cid, "logs")
}

// runScript runs a short command of sandrun's own (signalling the job)
// through execute, with a timeout of its own.
func (t *toolbox) runScript(ctx context.Context, script string, timeout time.Duration) (int, error) {
	secs := max(1, int(timeout/time.Second))
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	resp, err := t.execute(ctx, executeRequest{Command: script, Timeout: secs})
	if err != nil {
		return -1, err
	}
	if resp.ExitCode == nil {
		return -1, fmt.Errorf("execute: the answer has no exitCode")
	}
	return *resp.ExitCode, nil
}
