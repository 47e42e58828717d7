package daytonatest

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CreateRequest is the API's CreateSandbox, as the fake received it.
type CreateRequest struct {
	Name               string            `json:"name"`
	Snapshot           string            `json:"snapshot"`
	User               string            `json:"user"`
	Env                map[string]string `json:"env"`
	Labels             map[string]string `json:"labels"`
	Target             string            `json:"target"`
	CPU                int               `json:"cpu"`
	Memory             int               `json:"memory"`
	Disk               int               `json:"disk"`
	NetworkBlockAll    bool              `json:"networkBlockAll"`
	AutoStopInterval   *int              `json:"autoStopInterval"`
	AutoDeleteInterval *int              `json:"autoDeleteInterval"`
	Volumes            []SandboxVolume   `json:"volumes"`
	BuildInfo          *struct {
		DockerfileContent string `json:"dockerfileContent"`
	} `json:"buildInfo"`
}

// sandboxJSON is the API's Sandbox.
type sandboxJSON struct {
	ID                 string            `json:"id"`
	OrganizationID     string            `json:"organizationId"`
	Name               string            `json:"name"`
	Snapshot           string            `json:"snapshot,omitempty"`
	User               string            `json:"user"`
	Env                map[string]string `json:"env"`
	Labels             map[string]string `json:"labels"`
	Public             bool              `json:"public"`
	NetworkBlockAll    bool              `json:"networkBlockAll"`
	Target             string            `json:"target"`
	CPU                int               `json:"cpu"`
	GPU                int               `json:"gpu"`
	Memory             int               `json:"memory"`
	Disk               int               `json:"disk"`
	State              string            `json:"state"`
	DesiredState       string            `json:"desiredState"`
	ErrorReason        string            `json:"errorReason,omitempty"`
	Recoverable        bool              `json:"recoverable"`
	AutoStopInterval   int               `json:"autoStopInterval"`
	AutoDeleteInterval int               `json:"autoDeleteInterval"`
	Volumes            []SandboxVolume   `json:"volumes"`
	CreatedAt          string            `json:"createdAt"`
	ToolboxProxyURL    string            `json:"toolboxProxyUrl"`
}

// sandbox is a sandbox of the fake.
type sandbox struct {
	dto      sandboxJSON
	dir      string // Its home on the host.
	polls    int    // Reads while starting.
	failWith string // A build failure, reported once it has "built".
	sessions map[string]*session
	procs    []*proc      // Every command it ran.
	mounts   []mountPoint // Its volumes.
}

func (sb *sandbox) describe() Sandbox {
	d := Sandbox{ID: sb.dto.ID, State: sb.dto.State, Labels: maps.Clone(sb.dto.Labels), Dir: sb.dir, Volumes: slices.Clone(sb.dto.Volumes)}
	for _, p := range sb.procs {
		d.Pgids = append(d.Pgids, p.Pgid)
	}
	return d
}

// env is the environment of the sandbox's processes.
func (sb *sandbox) env() map[string]string {
	env := map[string]string{
		"HOME":               sb.dir,
		"PATH":               "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"DAYTONA_SANDBOX_ID": sb.dto.ID,
	}
	maps.Copy(env, sb.dto.Env)
	return env
}

func (f *Fake) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/sandbox", f.listSandboxes)
	mux.HandleFunc("POST /api/sandbox", f.createSandbox)
	mux.HandleFunc("GET /api/sandbox/{id}", f.getSandbox)
	mux.HandleFunc("DELETE /api/sandbox/{id}", f.deleteSandbox)
	mux.HandleFunc("GET /api/volumes", f.listVolumes)
	mux.HandleFunc("POST /api/volumes", f.createVolume)
	mux.HandleFunc("GET /api/volumes/{volumeId}", f.getVolume)
	mux.HandleFunc("DELETE /api/volumes/{volumeId}", f.deleteVolume)
	mux.HandleFunc("GET /api/volumes/by-name/{name}", f.getVolumeByName)
	const tb = "/proxy/toolbox/{id}/process/"
	mux.HandleFunc("POST "+tb+"execute", f.execute)
	mux.HandleFunc("POST "+tb+"session", f.createSession)
	mux.HandleFunc("GET "+tb+"session/{sid}", f.getSession)
	mux.HandleFunc("DELETE "+tb+"session/{sid}", f.deleteSession)
	mux.HandleFunc("POST "+tb+"session/{sid}/exec", f.sessionExec)
	mux.HandleFunc("GET "+tb+"session/{sid}/command/{cid}", f.getCommand)
	mux.HandleFunc("GET "+tb+"session/{sid}/command/{cid}/logs", f.commandLogs)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.authorized(w, r) {
			mux.ServeHTTP(w, r)
		}
	})
}

func (f *Fake) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeMessage(w, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := &sandbox{sessions: make(map[string]*session)}
	sb.dto = sandboxJSON{
		ID: newID(), OrganizationID: "org-fake", User: "daytona", Env: req.Env, Labels: req.Labels,
		NetworkBlockAll: req.NetworkBlockAll, Target: req.Target, CPU: max(req.CPU, 1), Memory: max(req.Memory, 1),
		Disk: max(req.Disk, 3), State: "creating", DesiredState: "started", AutoStopInterval: 15,
		AutoDeleteInterval: -1, CreatedAt: time.Now().UTC().Format(time.RFC3339), ToolboxProxyURL: f.toolboxProxyURL(),
	}
	if sb.dto.Target == "" {
		sb.dto.Target = "us"
	}
	if req.AutoStopInterval != nil {
		sb.dto.AutoStopInterval = *req.AutoStopInterval
	}
	if req.AutoDeleteInterval != nil {
		sb.dto.AutoDeleteInterval = *req.AutoDeleteInterval
	}
	switch {
	case req.BuildInfo != nil:
		image, ok := strings.CutPrefix(strings.TrimSpace(req.BuildInfo.DockerfileContent), "FROM ")
		if !ok {
			writeMessage(w, http.StatusBadRequest, "buildInfo.dockerfileContent: expected a FROM line")
			return
		}
		sb.dto.State = "pending_build"
		sb.failWith = f.badImages[strings.TrimSpace(image)]
	case req.Snapshot != "":
		if !f.snapshots[req.Snapshot] {
			writeMessage(w, http.StatusBadRequest, "Snapshot "+req.Snapshot+" not found. Did you add it through the Daytona Dashboard?")
			return
		}
		sb.dto.Snapshot = req.Snapshot
	default:
		sb.dto.Snapshot = DefaultSnapshot
	}
	if req.Name != "" {
		sb.dto.Name = req.Name
	} else {
		sb.dto.Name = sb.dto.ID
	}
	if len(req.Volumes) > 0 {
		mounts, volumes, status, msg := f.mountVolumes(req.Volumes)
		if status != 0 {
			writeMessage(w, status, msg)
			return
		}
		if err := getMounter().err; err != nil {
			writeMessage(w, http.StatusNotImplemented, "daytonatest: "+err.Error())
			return
		}
		if _, err := rootOps(mounts); err != nil {
			writeMessage(w, http.StatusNotImplemented, err.Error())
			return
		}
		sb.mounts, sb.dto.Volumes = mounts, volumes
	}
	sb.dir = f.sandboxDir(sb.dto.ID)
	if err := os.MkdirAll(sb.dir, 0o700); err != nil {
		writeMessage(w, http.StatusInternalServerError, err.Error())
		return
	}
	f.sandboxes[sb.dto.ID] = sb
	f.order = append(f.order, sb.dto.ID)
	f.created = append(f.created, req)
	writeJSON(w, http.StatusOK, sb.public())
}

// public is sb's DTO as the API shows it.
func (sb *sandbox) public() sandboxJSON {
	d := sb.dto
	d.Labels = maps.Clone(d.Labels)
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	if d.Env == nil {
		d.Env = map[string]string{}
	}
	d.Volumes = slices.Clone(d.Volumes)
	if d.Volumes == nil {
		d.Volumes = []SandboxVolume{}
	}
	return d
}

func (f *Fake) getSandbox(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.sandboxes[r.PathValue("id")]
	if sb == nil {
		writeMessage(w, http.StatusNotFound, "Sandbox with ID or name "+r.PathValue("id")+" not found")
		return
	}
	if sb.dto.State != "started" && sb.dto.State != "build_failed" {
		sb.polls++
		if sb.polls >= f.startPolls {
			sb.dto.State = "started"
			if sb.failWith != "" {
				sb.dto.State, sb.dto.ErrorReason = "build_failed", sb.failWith
			}
		} else if sb.dto.State == "pending_build" {
			sb.dto.State = "building_snapshot"
		}
	}
	writeJSON(w, http.StatusOK, sb.public())
}

func (f *Fake) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.PathValue("id")
	sb := f.sandboxes[id]
	if sb == nil {
		writeMessage(w, http.StatusNotFound, "Sandbox with ID or name "+id+" not found")
		return
	}
	f.killAll(sb, sb.procs, syscall.SIGKILL, "sandbox deleted")
	delete(f.sandboxes, id)
	f.deleted = append(f.deleted, id)
	sb.dto.State, sb.dto.DesiredState = "destroyed", "destroyed"
	_ = os.RemoveAll(sb.dir)
	writeJSON(w, http.StatusOK, sb.public())
}

func (f *Fake) listSandboxes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var filter map[string]string
	if s := q.Get("labels"); s != "" {
		if err := json.Unmarshal([]byte(s), &filter); err != nil {
			writeMessage(w, http.StatusBadRequest, "labels: invalid JSON")
			return
		}
	}
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 200 {
			writeMessage(w, http.StatusBadRequest, "limit must be a number from 1 to 200")
			return
		}
		limit = n
	}
	from, _ := strconv.Atoi(q.Get("cursor"))
	f.mu.Lock()
	defer f.mu.Unlock()
	var matched []sandboxJSON
	for _, id := range f.order {
		sb, ok := f.sandboxes[id]
		if ok && hasLabels(sb.dto.Labels, filter) {
			matched = append(matched, sb.public())
		}
	}
	page := struct {
		Items      []sandboxJSON `json:"items"`
		NextCursor *string       `json:"nextCursor"`
	}{Items: []sandboxJSON{}}
	if from < len(matched) {
		end := min(from+limit, len(matched))
		page.Items = matched[from:end]
		if end < len(matched) {
			next := strconv.Itoa(end)
			page.NextCursor = &next
		}
	}
	writeJSON(w, http.StatusOK, page)
}

func hasLabels(labels, filter map[string]string) bool {
	for k, v := range filter {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// writeMessage answers an error the way the control plane (NestJS) does.
func writeMessage(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"statusCode": status, "message": msg, "error": http.StatusText(status)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
