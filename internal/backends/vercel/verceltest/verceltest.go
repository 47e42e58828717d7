// Package verceltest is a fake Vercel Sandbox API for tests: an HTTP
// server that serves the v2 endpoints (named sandboxes and their
// sessions) as the @vercel/sandbox SDK and the REST reference describe
// them, and runs commands as real local processes.
//
// What it covers: bearer authentication with the teamId query parameter
// (403 for a wrong or missing token or team), an access token and an OIDC
// token (a JWT whose payload names the team and project); creating a
// named sandbox (pending, then running), reading its session, listing
// sandboxes by project and one tag filter (key:value) with cursor
// pagination, stopping a session, deleting a sandbox; running commands,
// reading them (with ?wait=true, blocking until they end), streaming
// their logs as ND-JSON lines {stream, data} until they end, and killing
// them with a signal number (400 once they have ended). Requests are
// checked the way the API documents them: runtime, vcpus (1 or even),
// at most five tags, the project.
//
// Commands run as the given program and arguments on the host, each in a
// process group of its own, in the request's cwd (relative to the
// sandbox's home, a directory under the test's temporary directory), with
// the request's env merged over the sandbox's (HOME, PATH, the create
// request's env) — nothing of the test process's — and an empty standard
// input. A command ended by signal N reports exit code 128+N. Stopping a
// session or deleting its sandbox kills the process groups of all its
// commands (SIGKILL); kills are recorded.
//
// A sandbox's memory (2048 MB per vCPU, as the API reports it) bounds
// each of its commands' processes: their data segment is limited to it
// (RLIMIT_DATA; sandboxtest.LimitMemory), so a command that allocates
// more fails, as it would be killed in a Vercel sandbox. SetMemoryScale
// scales that down for tests of the limit, which then need not hold the
// 2 GB of the smallest sandbox.
//
// Log data that is not UTF-8 is written as lone surrogates \udc80-\udcff,
// one per byte, so that it round-trips; the hosted API's handling of such
// output is not documented. The fake does not cover isolation (commands
// run on the host as the test's user), runtimes (the name is checked, the
// host's programs run), CPU, memory for the sandbox as a whole (the limit
// is per process), network policies, the sandbox timeout,
// snapshots and persistence, ports and routes, files, the v1 and v3
// endpoints, or OIDC token refresh and signatures.
package verceltest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Fake is a running fake Sandbox API. Its methods are safe for concurrent
// use.
type Fake struct {
	// URL is the API's base URL (a profile's api_url).
	URL string
	// Token, TeamID and ProjectID are the credentials the fake accepts.
	Token, TeamID, ProjectID string

	srv     *httptest.Server
	root    string
	oidc    string
	closing chan struct{}
	wg      sync.WaitGroup

	mu          sync.Mutex
	sandboxes   map[string]*sandbox // By name.
	sessions    map[string]*sandbox // By session ID.
	order       []string            // Sandbox names in creation order.
	deleted     []string
	stopped     []string
	kills       []Kill
	created     []CreateRequest
	startPolls  int
	memoryScale int64 // a sandbox's memory is enforced divided by it (SetMemoryScale)
	stallLogs   int   // a log stream opened while its command runs goes silent after this many lines; < 0 never
}

// Kill records a signal the fake sent to a command's process group.
type Kill struct {
	Sandbox string // Its name.
	Pgid    int
	Signal  syscall.Signal
	Reason  string // "kill", "session stopped", "sandbox deleted"
}

// Start starts a fake whose sandboxes live under t.TempDir(). It is
// closed when the test ends: every process it started is killed.
func Start(t testing.TB) *Fake {
	t.Helper()
	f := &Fake{
		Token:       "vc_test_" + randomHex(12),
		TeamID:      "team_" + randomHex(8),
		ProjectID:   "prj_" + randomHex(8),
		root:        t.TempDir(),
		closing:     make(chan struct{}),
		sandboxes:   make(map[string]*sandbox),
		sessions:    make(map[string]*sandbox),
		startPolls:  1,
		memoryScale: 1,
		stallLogs:   -1,
	}
	f.oidc = jwt(map[string]any{"owner_id": f.TeamID, "project_id": f.ProjectID, "exp": time.Now().Add(12 * time.Hour).Unix()})
	// Set f.srv before serving: handlers read its URL.
	f.srv = httptest.NewUnstartedServer(f.routes())
	f.srv.Start()
	f.URL = f.srv.URL + "/api"
	t.Cleanup(f.Close)
	return f
}

// OIDCToken returns an OIDC token the fake accepts: a JWT whose payload
// carries owner_id (the team), project_id and exp. Its signature is
// nothing; the fake does not check it.
func (f *Fake) OIDCToken() string { return f.oidc }

// jwt returns a JWT with claims and an empty signature.
func jwt(claims map[string]any) string {
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(payload) + "."
}

// Close stops the server and kills every process the fake started. It is
// idempotent.
func (f *Fake) Close() {
	f.mu.Lock()
	select {
	case <-f.closing:
		f.mu.Unlock()
		return
	default:
	}
	close(f.closing)
	for _, sb := range f.sandboxes {
		for _, c := range sb.commands {
			c.p.Signal(syscall.SIGKILL)
		}
	}
	f.mu.Unlock()
	f.srv.Close()
	f.wg.Wait()
}

// SetStartPolls sets how many reads a new session takes to run
// (default 1).
func (f *Fake) SetStartPolls(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startPolls = n
}

// SetMemoryScale makes every sandbox enforce 1/n of its memory on its
// commands' processes (default n = 1: a sandbox of 1 vCPU lets each
// process hold 2048 MiB). A test of the limit sets n so that the 2048 MB
// of a vCPU are a few MiB on this host; n < 1 counts as 1.
func (f *Fake) SetMemoryScale(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.memoryScale = max(n, 1)
}

// StallLogs makes every log stream opened while its command still runs
// go silent once it has sent n lines: it sends nothing more, and does
// not end, until the client leaves, as a stream whose link died without
// a reset does. A stream opened after the command ended is whole. n < 0
// (the default) restores whole streams.
func (f *Fake) StallLogs(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stallLogs = n
}

// Sandbox describes a sandbox of the fake.
type Sandbox struct {
	Name, SessionID, Status string
	Tags                    map[string]string
	// Pgids are the process groups of the commands it ran.
	Pgids []int
}

// Sandboxes returns the sandboxes not deleted, in creation order.
func (f *Fake) Sandboxes() []Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	var list []Sandbox
	for _, name := range f.order {
		if sb, ok := f.sandboxes[name]; ok {
			list = append(list, sb.describe())
		}
	}
	return list
}

// Deleted returns the names of the deleted sandboxes, in order.
func (f *Fake) Deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deleted)
}

// Stopped returns the IDs of the stopped sessions, in order.
func (f *Fake) Stopped() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stopped)
}

// Kills returns the signals sent to process groups, in order.
func (f *Fake) Kills() []Kill {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.kills)
}

// Created returns the create requests received, in order.
func (f *Fake) Created() []CreateRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.created)
}

// authorized checks the bearer token and the team, answering 403 as the
// API does when either is wrong.
func (f *Fake) authorized(w http.ResponseWriter, r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || (token != f.Token && token != f.oidc):
		writeError(w, http.StatusForbidden, "forbidden", "Not authorized")
	case r.URL.Query().Get("teamId") != f.TeamID:
		writeError(w, http.StatusForbidden, "forbidden", "You don't have access to this team")
	default:
		return true
	}
	return false
}

// writeError answers an error the way the API does.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
