package verceltest

import (
	"encoding/json"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// command is a command run in a session.
type command struct {
	id, name  string
	args      []string
	cwd       string
	sessionID string
	startedAt int64
	p         *proc
}

// commandJSON is the API's Command.
type commandJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Args       []string `json:"args"`
	Cwd        string   `json:"cwd"`
	SessionID  string   `json:"sessionId"`
	ExitCode   *int     `json:"exitCode"`
	StartedAt  int64    `json:"startedAt"`
	DurationMs int64    `json:"durationMs,omitempty"`
}

func (c *command) public() commandJSON {
	j := commandJSON{ID: c.id, Name: c.name, Args: c.args, Cwd: c.cwd, SessionID: c.sessionID, StartedAt: c.startedAt}
	if c.p.Ended() {
		code := c.p.Status()
		j.ExitCode = &code
	}
	return j
}

func (f *Fake) runCommand(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Cwd     string            `json:"cwd"`
		Env     map[string]string `json:"env"`
		Sudo    bool              `json:"sudo"`
		Wait    bool              `json:"wait"`
		Logs    bool              `json:"logs"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Command == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "command is required")
		return
	}
	f.mu.Lock()
	sb := f.session(w, r)
	if sb == nil {
		f.mu.Unlock()
		return
	}
	if sb.ses.Status != "running" {
		f.mu.Unlock()
		writeError(w, http.StatusGone, "sandbox_stopped", "The session is "+sb.ses.Status)
		return
	}
	env := map[string]string{"HOME": sb.dir, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	maps.Copy(env, sb.env)
	maps.Copy(env, req.Env)
	var list []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	dir := sb.dir
	if req.Cwd != "" {
		dir = req.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(sb.dir, dir)
		}
	}
	p, err := f.start(req.Command, req.Args, dir, list, sb.ses.Memory)
	if err != nil {
		f.mu.Unlock()
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	c := &command{id: "cmd_" + randomHex(12), name: req.Command, args: req.Args, cwd: dir, sessionID: sb.ses.ID,
		startedAt: time.Now().UnixMilli(), p: p}
	sb.commands[c.id] = c
	sb.order = append(sb.order, c.id)
	f.mu.Unlock()
	if !req.Wait {
		writeJSON(w, http.StatusOK, map[string]any{"command": c.public()})
		return
	}
	// wait: ND-JSON, the command, its logs if asked, the ended command.
	nd := f.ndjson(w)
	_ = nd.line(map[string]any{"command": c.public()})
	if req.Logs {
		f.streamLogs(r, nd, c)
	} else {
		f.waitFor(r, c)
	}
	if c.p.Ended() {
		_ = nd.line(map[string]any{"command": c.public()})
	}
}

// waitFor waits until c ends, the client leaves or the fake closes.
func (f *Fake) waitFor(r *http.Request, c *command) {
	select {
	case <-c.p.Done():
	case <-r.Context().Done():
	case <-f.closing:
	}
}

// command returns the command the path names, or answers 404.
func (f *Fake) command(w http.ResponseWriter, r *http.Request) *command {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb := f.session(w, r)
	if sb == nil {
		return nil
	}
	c := sb.commands[r.PathValue("cid")]
	if c == nil {
		writeError(w, http.StatusNotFound, "not_found", "Command not found")
	}
	return c
}

func (f *Fake) getCommand(w http.ResponseWriter, r *http.Request) {
	c := f.command(w, r)
	if c == nil {
		return
	}
	if r.URL.Query().Get("wait") == "true" {
		f.waitFor(r, c)
	}
	writeJSON(w, http.StatusOK, map[string]any{"command": c.public()})
}

func (f *Fake) killCommand(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Signal *int `json:"signal"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Signal == nil || *req.Signal < 1 || *req.Signal > 64 {
		writeError(w, http.StatusBadRequest, "bad_request", "signal: a POSIX signal number is required")
		return
	}
	c := f.command(w, r)
	if c == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.p.Ended() || !c.p.Signal(syscall.Signal(*req.Signal)) {
		writeError(w, http.StatusBadRequest, "command_not_running", "The command is not running")
		return
	}
	name := ""
	if sb := f.sessions[r.PathValue("sid")]; sb != nil {
		name = sb.dto.Name
	}
	f.kills = append(f.kills, Kill{Sandbox: name, Pgid: c.p.Pgid, Signal: syscall.Signal(*req.Signal), Reason: "kill"})
	writeJSON(w, http.StatusOK, map[string]any{"command": c.public()})
}

func (f *Fake) commandLogs(w http.ResponseWriter, r *http.Request) {
	if c := f.command(w, r); c != nil {
		f.streamLogs(r, f.ndjson(w), c)
	}
}

// streamLogs writes c's output as {stream, data} lines until it has
// ended, the client leaves or the fake closes.
func (f *Fake) streamLogs(r *http.Request, nd *ndjson, c *command) {
	f.mu.Lock()
	stall := f.stallLogs
	f.mu.Unlock()
	if c.p.Ended() {
		stall = -1
	}
	var line []byte
	for i, sent := 0, 0; ; {
		chunks, ended, changed := c.p.Since(i)
		for _, ch := range chunks {
			if sent == stall {
				// Silent from here on, until the client leaves.
				select {
				case <-r.Context().Done():
				case <-f.closing:
				}
				return
			}
			sent++
			line = append(line[:0], `{"stream":"`...)
			line = append(line, [2]string{"stdout", "stderr"}[ch.Stream]...)
			line = append(line, `","data":`...)
			line = append(appendData(line, ch.Data), '}')
			if nd.raw(line) != nil {
				return
			}
		}
		i += len(chunks)
		if ended && len(chunks) == 0 {
			return
		}
		if len(chunks) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-f.closing:
			return
		}
	}
}

// ndjson writes an application/x-ndjson answer, a line at a time.
type ndjson struct {
	w  http.ResponseWriter
	fl http.Flusher
}

func (f *Fake) ndjson(w http.ResponseWriter) *ndjson {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return &ndjson{w: w, fl: fl}
}

func (n *ndjson) line(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return n.raw(data)
}

// raw writes line and a newline, and flushes them.
func (n *ndjson) raw(line []byte) error {
	if _, err := n.w.Write(append(line, '\n')); err != nil {
		return err
	}
	if n.fl != nil {
		n.fl.Flush()
	}
	return nil
}
