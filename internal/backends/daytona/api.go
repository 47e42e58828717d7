package daytona

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// api is the control plane: sandboxes, their labels and their toolboxes.
type api struct {
	c    *httpsandbox.Client
	base *url.URL // the api_url
}

// sandbox is the API's Sandbox, the fields this package reads.
type sandbox struct {
	ID              string            `json:"id"`
	State           string            `json:"state"`
	ErrorReason     string            `json:"errorReason"`
	Recoverable     bool              `json:"recoverable"`
	Labels          map[string]string `json:"labels"`
	ToolboxProxyURL string            `json:"toolboxProxyUrl"`
}

// Sandbox states this package acts on (the spec's SandboxState).
const (
	stateStarted     = "started"
	stateError       = "error"
	stateBuildFailed = "build_failed"
	stateDestroyed   = "destroyed"
	stateDestroying  = "destroying"
)

// createSandbox is the API's CreateSandbox, the fields this package sets.
type createSandbox struct {
	Snapshot        string            `json:"snapshot,omitempty"`
	Labels          map[string]string `json:"labels"`
	Target          string            `json:"target,omitempty"`
	CPU             int               `json:"cpu,omitempty"`
	Memory          int               `json:"memory,omitempty"` // GB
	Disk            int               `json:"disk,omitempty"`   // GB
	NetworkBlockAll bool              `json:"networkBlockAll,omitempty"`
	// AutoStopInterval is in minutes, never 0 (which turns it off).
	AutoStopInterval int `json:"autoStopInterval"`
	// AutoDeleteInterval 0 deletes the sandbox as soon as it stops.
	AutoDeleteInterval int              `json:"autoDeleteInterval"`
	BuildInfo          *createBuildInfo `json:"buildInfo,omitempty"`
	Volumes            []sandboxVolume  `json:"volumes,omitempty"`
}

// sandboxVolume is the API's SandboxVolume: a volume (by ID) the sandbox
// mounts at MountPath.
type sandboxVolume struct {
	VolumeID  string `json:"volumeId"`
	MountPath string `json:"mountPath"`
}

// volume is the API's VolumeDto, the fields this package reads.
type volume struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	State       string  `json:"state"`
	ErrorReason *string `json:"errorReason"`
}

// reason is v's errorReason, or "no reason given".
func (v volume) reason() string {
	if v.ErrorReason == nil || *v.ErrorReason == "" {
		return "no reason given"
	}
	return *v.ErrorReason
}

// Volume states this package acts on (the spec's VolumeState).
const (
	volumeReady   = "ready"
	volumeError   = "error"
	volumeDeleted = "deleted"
)

// createBuildInfo builds the sandbox's image from a Dockerfile.
type createBuildInfo struct {
	DockerfileContent string `json:"dockerfileContent"`
}

// listSandboxesResponse is the API's ListSandboxesResponse.
type listSandboxesResponse struct {
	Items      []sandbox `json:"items"`
	NextCursor *string   `json:"nextCursor"`
}

// create creates a sandbox (POST /sandbox). It is not retried on a 5xx:
// the sandbox may exist, and only its labels would find it again.
func (a *api) create(ctx context.Context, body createSandbox) (sandbox, error) {
	var sb sandbox
	err := a.c.Do(ctx, httpsandbox.Call{Op: "create sandbox", Method: http.MethodPost, URL: a.base.JoinPath("sandbox"), Body: body, Out: &sb})
	return sb, err
}

// get reads a sandbox (GET /sandbox/{sandboxIdOrName}).
func (a *api) get(ctx context.Context, id string) (sandbox, error) {
	var sb sandbox
	err := a.c.Do(ctx, httpsandbox.Call{Op: "get sandbox", Method: http.MethodGet, URL: a.base.JoinPath("sandbox", id), Out: &sb, Idempotent: true})
	return sb, err
}

// remove deletes a sandbox (DELETE /sandbox/{sandboxIdOrName}); one
// already gone is not an error.
func (a *api) remove(ctx context.Context, id string) error {
	err := a.c.Do(ctx, httpsandbox.Call{Op: "delete sandbox " + id, Method: http.MethodDelete, URL: a.base.JoinPath("sandbox", id), Idempotent: true})
	if httpsandbox.HasStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// list reads one page of the sandboxes carrying labels (GET
// /sandbox?labels=...); cursor is the previous page's nextCursor.
func (a *api) list(ctx context.Context, labels map[string]string, cursor string, limit int) (listSandboxesResponse, error) {
	var page listSandboxesResponse
	u := a.base.JoinPath("sandbox")
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if len(labels) > 0 {
		data, err := json.Marshal(labels)
		if err != nil {
			return page, fmt.Errorf("list sandboxes: %w", err)
		}
		q.Set("labels", string(data))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	u.RawQuery = q.Encode()
	err := a.c.Do(ctx, httpsandbox.Call{Op: "list sandboxes", Method: http.MethodGet, URL: u, Out: &page, Idempotent: true})
	return page, err
}

// volumeByName reads the volume called name (GET /volumes/by-name/{name});
// the API finds none once it is deleted.
func (a *api) volumeByName(ctx context.Context, name string) (volume, error) {
	var v volume
	err := a.c.Do(ctx, httpsandbox.Call{Op: "get volume " + name, Method: http.MethodGet, URL: a.base.JoinPath("volumes", "by-name", name), Out: &v, Idempotent: true})
	return v, err
}

// createVolume creates the volume called name (POST /volumes); it starts
// in state pending_create. It is not retried on a 5xx: the volume may
// exist, and the next read by name finds it.
func (a *api) createVolume(ctx context.Context, name string) (volume, error) {
	var v volume
	err := a.c.Do(ctx, httpsandbox.Call{Op: "create volume " + name, Method: http.MethodPost, URL: a.base.JoinPath("volumes"),
		Body: map[string]string{"name": name}, Out: &v})
	return v, err
}

// deleteVolume marks volume id for deletion (DELETE /volumes/{volumeId}).
func (a *api) deleteVolume(ctx context.Context, id string) error {
	return a.c.Do(ctx, httpsandbox.Call{Op: "delete volume " + id, Method: http.MethodDelete, URL: a.base.JoinPath("volumes", id), Idempotent: true})
}

// toolbox returns the toolbox of sb: {toolboxProxyUrl}/{sandboxId}.
func (a *api) toolbox(sb sandbox) (*toolbox, error) {
	u, err := url.Parse(sb.ToolboxProxyURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("sandbox %s: toolboxProxyUrl %q is not an http(s) URL", sb.ID, sb.ToolboxProxyURL)
	}
	return &toolbox{c: a.c, base: u.JoinPath(sb.ID)}, nil
}
