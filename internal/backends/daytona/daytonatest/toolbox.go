package daytonatest

import (
	"encoding/json"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// session is a toolbox session: its commands, by ID.
type session struct {
	commands map[string]*sessionCommand
	order    []string
}

type sessionCommand struct {
	id, text string
	p        *proc
}

// commandJSON is the toolbox's Command.
type commandJSON struct {
	ID       string `json:"id"`
	Command  string `json:"command"`
	ExitCode *int   `json:"exitCode,omitempty"`
}

func (c *sessionCommand) public() commandJSON {
	j := commandJSON{ID: c.id, Command: c.text}
	select {
	case <-c.p.Done():
		code := c.p.Status()
		j.ExitCode = &code
	default:
	}
	return j
}

// toolboxError answers an error the way the daemon does.
func toolboxError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// started returns the started sandbox the path names, or answers 404.
// f.mu is held.
func (f *Fake) started(w http.ResponseWriter, r *http.Request) *sandbox {
	sb := f.sandboxes[r.PathValue("id")]
	if sb == nil || sb.dto.State != "started" {
		toolboxError(w, http.StatusNotFound, "sandbox not found or not started")
		return nil
	}
	return sb
}

// environ turns env into NAME=VALUE words, sorted.
func environ(env map[string]string) []string {
	var list []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}

func (f *Fake) execute(w http.ResponseWriter, r *http.Request) {
	var req ExecuteRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Command) == "" {
		toolboxError(w, http.StatusBadRequest, "invalid request body: command is required")
		return
	}
	f.mu.Lock()
	f.executes = append(f.executes, req)
	sb := f.started(w, r)
	if sb == nil {
		f.mu.Unlock()
		return
	}
	env := sb.env()
	maps.Copy(env, req.Envs)
	dir := sb.dir
	if req.Cwd != "" {
		dir = req.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(sb.dir, dir)
		}
	}
	p, err := f.start(sb, req.Command, dir, environ(env), false)
	if err != nil {
		f.mu.Unlock()
		toolboxError(w, http.StatusBadRequest, err.Error())
		return
	}
	sb.procs = append(sb.procs, p)
	// The daemon applies a timeout only when one is given.
	var timeout time.Duration
	if req.Timeout != nil && *req.Timeout > 0 {
		timeout = time.Duration(*req.Timeout) * time.Second
	}
	if f.executeTimeout > 0 {
		timeout = f.executeTimeout
	}
	f.mu.Unlock()

	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-p.Done():
		_, _, all := p.Output()
		writeJSON(w, http.StatusOK, map[string]any{"exitCode": p.Status(), "result": string(all)})
	case <-expired:
		f.mu.Lock()
		f.killAll(sb, []*proc{p}, syscall.SIGKILL, "execute timeout")
		f.mu.Unlock()
		toolboxError(w, http.StatusRequestTimeout, "command execution timeout")
	case <-r.Context().Done(): // The client left; the command runs on, as the daemon's does.
	case <-f.closing:
	}
}

func (f *Fake) createSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.SessionID == "" {
		toolboxError(w, http.StatusBadRequest, "invalid request body: sessionId is required")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.started(w, r)
	if sb == nil {
		return
	}
	if sb.sessions[req.SessionID] != nil {
		toolboxError(w, http.StatusConflict, "session already exists")
		return
	}
	sb.sessions[req.SessionID] = &session{commands: make(map[string]*sessionCommand)}
	w.WriteHeader(http.StatusCreated)
}

// session returns the session the path names, or answers 404. f.mu is held.
func (f *Fake) session(w http.ResponseWriter, r *http.Request) (*sandbox, *session) {
	sb := f.started(w, r)
	if sb == nil {
		return nil, nil
	}
	s := sb.sessions[r.PathValue("sid")]
	if s == nil {
		toolboxError(w, http.StatusNotFound, "session not found")
	}
	return sb, s
}

func (f *Fake) getSession(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, s := f.session(w, r)
	if s == nil {
		return
	}
	cmds := []commandJSON{}
	for _, id := range s.order {
		cmds = append(cmds, s.commands[id].public())
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessionId": r.PathValue("sid"), "commands": cmds})
}

func (f *Fake) deleteSession(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, s := f.session(w, r)
	if s == nil {
		return
	}
	for _, c := range s.commands {
		f.killAll(sb, []*proc{c.p}, syscall.SIGKILL, "session deleted")
	}
	delete(sb.sessions, r.PathValue("sid"))
	w.WriteHeader(http.StatusNoContent)
}

func (f *Fake) sessionExec(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Command  string `json:"command"`
		RunAsync bool   `json:"runAsync"`
		Async    bool   `json:"async"` // The old name of runAsync.
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || strings.TrimSpace(req.Command) == "" {
		toolboxError(w, http.StatusBadRequest, "invalid request body: command cannot be empty")
		return
	}
	f.mu.Lock()
	sb, s := f.session(w, r)
	if s == nil {
		f.mu.Unlock()
		return
	}
	p, err := f.start(sb, req.Command, sb.dir, environ(sb.env()), true)
	if err != nil {
		f.mu.Unlock()
		toolboxError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := &sessionCommand{id: newID(), text: req.Command, p: p}
	sb.procs = append(sb.procs, p)
	s.commands[c.id] = c
	s.order = append(s.order, c.id)
	f.mu.Unlock()
	if req.RunAsync || req.Async {
		writeJSON(w, http.StatusAccepted, map[string]string{"cmdId": c.id})
		return
	}
	select {
	case <-p.Done():
	case <-r.Context().Done():
		return
	case <-f.closing:
		return
	}
	stdout, stderr, all := p.Output()
	writeJSON(w, http.StatusOK, map[string]any{"cmdId": c.id, "exitCode": p.Status(),
		"output": string(all), "stdout": string(stdout), "stderr": string(stderr)})
}

// command returns the command the path names, or answers 404.
func (f *Fake) command(w http.ResponseWriter, r *http.Request) *sessionCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, s := f.session(w, r)
	if s == nil {
		return nil
	}
	c := s.commands[r.PathValue("cid")]
	if c == nil {
		toolboxError(w, http.StatusNotFound, "command not found")
	}
	return c
}

func (f *Fake) getCommand(w http.ResponseWriter, r *http.Request) {
	if c := f.command(w, r); c != nil {
		writeJSON(w, http.StatusOK, c.public())
	}
}
