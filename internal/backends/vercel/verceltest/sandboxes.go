package verceltest

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runtimes returns the runtimes the fake accepts, as the API does.
func runtimes() []string { return []string{"node26", "node24", "node22", "python3.13"} }

// nameRE is what the API accepts as a sandbox name.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// CreateRequest is the body of POST /v2/sandboxes, as the fake received it.
type CreateRequest struct {
	ProjectID string `json:"projectId"`
	Name      string `json:"name"`
	Runtime   string `json:"runtime"`
	Resources *struct {
		VCPUs int `json:"vcpus"`
	} `json:"resources"`
	Timeout       *int64            `json:"timeout"`
	Persistent    *bool             `json:"persistent"`
	Tags          map[string]string `json:"tags"`
	Env           map[string]string `json:"env"`
	NetworkPolicy *struct {
		Mode string `json:"mode"`
	} `json:"networkPolicy"`
}

// sandboxJSON is the API's Sandbox (a named sandbox).
type sandboxJSON struct {
	Name             string            `json:"name"`
	Persistent       bool              `json:"persistent"`
	Region           string            `json:"region"`
	VCPUs            int               `json:"vcpus"`
	Memory           int               `json:"memory"`
	Runtime          string            `json:"runtime"`
	Timeout          int64             `json:"timeout"`
	CreatedAt        int64             `json:"createdAt"`
	UpdatedAt        int64             `json:"updatedAt"`
	CurrentSessionID string            `json:"currentSessionId"`
	Status           string            `json:"status"`
	Cwd              string            `json:"cwd"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// sessionJSON is the API's Session.
type sessionJSON struct {
	ID          string `json:"id"`
	Memory      int    `json:"memory"`
	VCPUs       int    `json:"vcpus"`
	Region      string `json:"region"`
	Runtime     string `json:"runtime"`
	Timeout     int64  `json:"timeout"`
	Status      string `json:"status"`
	RequestedAt int64  `json:"requestedAt"`
	StartedAt   int64  `json:"startedAt,omitempty"`
	StoppedAt   int64  `json:"stoppedAt,omitempty"`
	CreatedAt   int64  `json:"createdAt"`
	UpdatedAt   int64  `json:"updatedAt"`
	Cwd         string `json:"cwd"`
}

// sandbox is a named sandbox of the fake and its one session.
type sandbox struct {
	dto      sandboxJSON
	ses      sessionJSON
	env      map[string]string
	dir      string // Its home on the host.
	polls    int    // Reads of the session while pending.
	commands map[string]*command
	order    []string
}

func (sb *sandbox) describe() Sandbox {
	d := Sandbox{Name: sb.dto.Name, SessionID: sb.ses.ID, Status: sb.ses.Status, Tags: maps.Clone(sb.dto.Tags)}
	for _, id := range sb.order {
		d.Pgids = append(d.Pgids, sb.commands[id].p.Pgid)
	}
	return d
}

// public returns the sandbox as the API shows it, its status its
// session's.
func (sb *sandbox) public() sandboxJSON {
	d := sb.dto
	d.Status, d.UpdatedAt, d.Tags = sb.ses.Status, sb.ses.UpdatedAt, maps.Clone(d.Tags)
	return d
}

func (f *Fake) routes() http.Handler {
	mux := http.NewServeMux()
	const v2 = "/api/v2/sandboxes"
	mux.HandleFunc("POST "+v2, f.createSandbox)
	mux.HandleFunc("GET "+v2, f.listSandboxes)
	mux.HandleFunc("GET "+v2+"/{name}", f.getSandbox)
	mux.HandleFunc("DELETE "+v2+"/{name}", f.deleteSandbox)
	mux.HandleFunc("GET "+v2+"/sessions/{sid}", f.getSession)
	mux.HandleFunc("POST "+v2+"/sessions/{sid}/stop", f.stopSession)
	mux.HandleFunc("POST "+v2+"/sessions/{sid}/cmd", f.runCommand)
	mux.HandleFunc("GET "+v2+"/sessions/{sid}/cmd/{cid}", f.getCommand)
	mux.HandleFunc("GET "+v2+"/sessions/{sid}/cmd/{cid}/logs", f.commandLogs)
	mux.HandleFunc("POST "+v2+"/sessions/{sid}/cmd/{cid}/kill", f.killCommand)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.authorized(w, r) {
			mux.ServeHTTP(w, r)
		}
	})
}

func (f *Fake) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "invalid body: "+err.Error())
		return
	}
	vcpus := 2
	if req.Resources != nil {
		vcpus = req.Resources.VCPUs
	}
	switch {
	case req.ProjectID != f.ProjectID:
		writeError(w, http.StatusNotFound, "not_found", "Project not found")
		return
	case req.Runtime != "" && !slices.Contains(runtimes(), req.Runtime):
		writeError(w, http.StatusBadRequest, "bad_request", "Invalid runtime "+req.Runtime)
		return
	case vcpus < 1 || (vcpus != 1 && vcpus%2 != 0):
		writeError(w, http.StatusBadRequest, "bad_request", "resources.vcpus must be 1 or an even number")
		return
	case len(req.Tags) > 5:
		writeError(w, http.StatusBadRequest, "bad_request", "at most 5 tags")
		return
	case req.Name != "" && !nameRE.MatchString(req.Name):
		writeError(w, http.StatusBadRequest, "bad_request", "invalid sandbox name")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Name == "" {
		req.Name = "sbx-" + randomHex(8)
	}
	if f.sandboxes[req.Name] != nil {
		writeError(w, http.StatusConflict, "conflict", "A sandbox named "+req.Name+" already exists")
		return
	}
	now := time.Now().UnixMilli()
	timeout := int64(5 * time.Minute / time.Millisecond)
	if req.Timeout != nil {
		timeout = *req.Timeout
	}
	runtime := req.Runtime
	if runtime == "" {
		runtime = "node24"
	}
	sb := &sandbox{env: req.Env, commands: make(map[string]*command), dir: filepath.Join(f.root, req.Name)}
	if err := os.MkdirAll(sb.dir, 0o700); err != nil {
		writeError(w, http.StatusInternalServerError, "internal_error", err.Error())
		return
	}
	sb.ses = sessionJSON{ID: "sbx_" + randomHex(12), Memory: vcpus * 2048, VCPUs: vcpus, Region: "iad1", Runtime: runtime,
		Timeout: timeout, Status: "pending", RequestedAt: now, CreatedAt: now, UpdatedAt: now, Cwd: sb.dir}
	sb.dto = sandboxJSON{Name: req.Name, Persistent: req.Persistent == nil || *req.Persistent, Region: "iad1", VCPUs: vcpus,
		Memory: vcpus * 2048, Runtime: runtime, Timeout: timeout, CreatedAt: now, UpdatedAt: now,
		CurrentSessionID: sb.ses.ID, Cwd: sb.dir, Tags: req.Tags}
	f.sandboxes[req.Name] = sb
	f.sessions[sb.ses.ID] = sb
	f.order = append(f.order, req.Name)
	f.created = append(f.created, req)
	writeJSON(w, http.StatusOK, map[string]any{"sandbox": sb.public(), "session": sb.ses, "routes": []any{}})
}

// named returns the sandbox the path names, in the project the query
// names, or answers 404. f.mu is held.
func (f *Fake) named(w http.ResponseWriter, r *http.Request) *sandbox {
	sb := f.sandboxes[r.PathValue("name")]
	if r.URL.Query().Get("projectId") != f.ProjectID || sb == nil {
		writeError(w, http.StatusNotFound, "not_found", "Sandbox not found")
		return nil
	}
	return sb
}

func (f *Fake) getSandbox(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sb := f.named(w, r); sb != nil {
		writeJSON(w, http.StatusOK, map[string]any{"sandbox": sb.public(), "session": sb.ses, "routes": []any{}})
	}
}

func (f *Fake) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.named(w, r)
	if sb == nil {
		return
	}
	f.stop(sb, "sandbox deleted")
	delete(f.sandboxes, sb.dto.Name)
	delete(f.sessions, sb.ses.ID)
	f.deleted = append(f.deleted, sb.dto.Name)
	_ = os.RemoveAll(sb.dir)
	writeJSON(w, http.StatusOK, map[string]any{"sandbox": sb.public()})
}

// stop kills the process groups of sb's commands and marks its session
// stopped. f.mu is held.
func (f *Fake) stop(sb *sandbox, reason string) {
	for _, id := range sb.order {
		if p := sb.commands[id].p; p.Signal(syscall.SIGKILL) {
			f.kills = append(f.kills, Kill{Sandbox: sb.dto.Name, Pgid: p.Pgid, Signal: syscall.SIGKILL, Reason: reason})
		}
	}
	if sb.ses.Status != "stopped" {
		now := time.Now().UnixMilli()
		sb.ses.Status, sb.ses.StoppedAt, sb.ses.UpdatedAt = "stopped", now, now
		f.stopped = append(f.stopped, sb.ses.ID)
	}
}

func (f *Fake) listSandboxes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("project") != f.ProjectID {
		writeError(w, http.StatusNotFound, "not_found", "Project not found")
		return
	}
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 50 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit must be from 1 to 50")
			return
		}
		limit = n
	}
	tagKey, tagValue, filtered := strings.Cut(q.Get("tags"), ":")
	from, _ := strconv.Atoi(q.Get("cursor"))
	f.mu.Lock()
	defer f.mu.Unlock()
	var matched []sandboxJSON
	for _, name := range slices.Backward(f.order) { // Newest first, as sortOrder=desc.
		sb, ok := f.sandboxes[name]
		if ok && (!filtered || sb.dto.Tags[tagKey] == tagValue) {
			matched = append(matched, sb.public())
		}
	}
	page := []sandboxJSON{}
	var next *string
	if from < len(matched) {
		end := min(from+limit, len(matched))
		page = matched[from:end]
		if end < len(matched) {
			n := strconv.Itoa(end)
			next = &n
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sandboxes": page, "pagination": map[string]any{"count": len(page), "next": next}})
}

// session returns the sandbox whose session the path names, or answers
// 404. f.mu is held.
func (f *Fake) session(w http.ResponseWriter, r *http.Request) *sandbox {
	sb := f.sessions[r.PathValue("sid")]
	if sb == nil {
		writeError(w, http.StatusNotFound, "not_found", "Session not found")
	}
	return sb
}

func (f *Fake) getSession(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.session(w, r)
	if sb == nil {
		return
	}
	if sb.ses.Status == "pending" {
		if sb.polls++; sb.polls >= f.startPolls {
			now := time.Now().UnixMilli()
			sb.ses.Status, sb.ses.StartedAt, sb.ses.UpdatedAt = "running", now, now
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": sb.ses, "routes": []any{}})
}

func (f *Fake) stopSession(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.session(w, r)
	if sb == nil {
		return
	}
	f.stop(sb, "session stopped")
	writeJSON(w, http.StatusOK, map[string]any{"session": sb.ses, "sandbox": sb.public()})
}
