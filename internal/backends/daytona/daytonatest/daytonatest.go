// Package daytonatest is a fake Daytona for tests: one HTTP server that
// serves the control-plane API and the sandboxes' toolbox API as the
// v0.190.0 OpenAPI definitions describe them (paths, fields, status
// codes), and runs commands as real local processes.
//
// What it covers: sandboxes created, listed by label, read and deleted,
// with the states creating → started (or pending_build → build_failed for
// an image RejectImage names, and 400 for an unknown snapshot); bearer
// authentication (401 for a wrong or missing key); on the toolbox,
// execute (its timeout kills the command's process group and answers
// 408), sessions, asynchronous and synchronous session commands, their
// status, and their logs as JSON or, with follow=true, as a WebSocket of
// chunks marked 01 01 01 (stdout) and 02 02 02 (stderr).
//
// Volumes: POST /volumes, GET /volumes (includeDeleted), GET
// /volumes/{volumeId}, GET /volumes/by-name/{name} and DELETE
// /volumes/{volumeId}, with the API's rules: a name is taken by one volume
// that is not deleted (400 otherwise; an empty name becomes the ID); a new
// volume goes pending_create → creating → ready, one step per read of it
// (SetVolumePolls); only a ready or error volume can be deleted (400),
// and not while a sandbox that is not deleted mounts it (409); it then
// goes pending_delete → deleting → deleted, renamed NAME-deleted, and by
// name it is no longer found; BreakVolume puts one in state error. A
// sandbox create's volumes (by ID or name) must exist (404) and be ready
// (400), with the API's mount path and subpath checks (400); the sandbox
// shows them with their IDs.
//
// Each volume's data is a real directory under the test's temporary
// directory, made when the volume is ready and removed when it is
// deleted; what one sandbox writes there the next one reads. The commands
// of a sandbox with volumes run in a mount namespace of their own
// (`unshare --mount`, plus `--user --map-root-user` when the test is not
// root), chrooted into a tmpfs where every entry of the host's / is bound
// at its own path and each volume's directory at its mount path (mount.go):
// they see the host's files, as every command of the fake does, and the
// volumes where the sandbox mounts them, and the host's filesystem is left
// as it was. This needs Linux, util-linux's unshare and mount, chroot,
// and root or unprivileged user namespaces (RequireVolumes; VolumesWork;
// elsewhere such a create answers 501). Its limits: without root the
// commands run as root of a user namespace (id -u prints 0; files they
// make are still the test user's); a mount path under a host symlink or
// file is refused (501); a mount path over a host directory the sandbox's
// home lies in (/tmp, say) hides that home; each command's namespace costs
// about a tenth of a second of mounts (one that fails exits 125, its
// complaint on stderr); and a volume is a plain directory,
// not Daytona's S3-backed FUSE mount (no size quota, no eventual
// consistency, ownership as the host has it).
//
// Commands run as `/bin/sh -c TEXT` on the host, each in a process group
// of its own, with the sandbox's environment (HOME, its directory under
// the test's temporary directory; PATH; DAYTONA_SANDBOX_ID; the create
// request's env) plus, for execute, the request's envs — nothing of the
// test process's — and an empty standard input. Deleting a sandbox kills
// the process groups of all its commands (SIGKILL) and records it.
//
// A sandbox's memory (the create request's, in GB; 1 when it asks for
// none, the API's default) bounds each of its commands' processes: their
// data segment is limited to it (RLIMIT_DATA; sandboxtest.LimitMemory),
// so a command that allocates more fails, as it would be killed in a
// Daytona sandbox. SetMemoryScale scales that down for tests of the
// limit, which then need not hold gigabytes.
//
// What it does not cover: isolation (commands run on the host, as the
// test's user, so absolute paths are the host's), images and snapshots
// (nothing is built or pulled; the name is only checked), CPU and disk
// resources, memory for the sandbox as a whole (the limit is per process),
// auto-stop and auto-delete timers, the session shell (each session
// command runs in a shell of its own, so commands share no shell state),
// volume quotas and volume backends, PTYs, files, git, and the rest of
// the API. Output written by a command's leftover processes after it
// ended is dropped.
package daytonatest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultSnapshot is the snapshot a new Fake knows.
const DefaultSnapshot = "daytonaio/sandbox:0.4.3"

// Fake is a running fake Daytona. Its methods are safe for concurrent use.
type Fake struct {
	// URL is the control-plane API's base URL (a profile's api_url).
	URL string
	// APIKey is the only key the fake accepts.
	APIKey string

	srv     *httptest.Server
	root    string
	closing chan struct{}
	wg      sync.WaitGroup

	mu             sync.Mutex
	sandboxes      map[string]*sandbox
	volumes        map[string]*volume // By ID, deleted ones too.
	volumePolls    int
	order          []string // Sandbox IDs in creation order, for listing.
	deleted        []string
	kills          []Kill
	created        []CreateRequest
	executes       []ExecuteRequest
	snapshots      map[string]bool
	badImages      map[string]string
	startPolls     int
	executeTimeout time.Duration
	toolboxHost    string // host:port sandboxes report; "" is the fake's own
	memoryScale    int64  // a sandbox's memory is enforced divided by it (SetMemoryScale)
	stallFollows   int    // a follow stream goes silent after this many bytes; < 0 never
}

// Kill records a signal the fake sent to a command's process group.
type Kill struct {
	Sandbox string
	Pgid    int
	Signal  syscall.Signal
	Reason  string // "sandbox deleted", "execute timeout", "session deleted"
}

// Start starts a fake whose sandboxes live under t.TempDir(). It is
// closed when the test ends: every process it started is killed.
func Start(t testing.TB) *Fake {
	t.Helper()
	f := &Fake{
		APIKey:       "dtn_test_" + randomHex(12),
		root:         t.TempDir(),
		closing:      make(chan struct{}),
		sandboxes:    make(map[string]*sandbox),
		volumes:      make(map[string]*volume),
		volumePolls:  2,
		snapshots:    map[string]bool{DefaultSnapshot: true},
		badImages:    make(map[string]string),
		startPolls:   1,
		memoryScale:  1,
		stallFollows: -1,
	}
	// Set f.srv before serving: handlers read its URL.
	f.srv = httptest.NewUnstartedServer(f.routes())
	f.srv.Start()
	f.URL = f.srv.URL + "/api"
	t.Cleanup(f.Close)
	return f
}

// toolboxProxyURL is what sandboxes report as their toolboxProxyUrl.
// f.mu is held.
func (f *Fake) toolboxProxyURL() string {
	if f.toolboxHost != "" {
		return "http://" + f.toolboxHost + "/proxy/toolbox"
	}
	return f.srv.URL + "/proxy/toolbox"
}

// SetToolboxHost makes sandboxes created from now on report a
// toolboxProxyUrl on addr (host:port) instead of the fake's own (that of
// URL), as the hosted API names a proxy host of its own: a test puts a TCP
// proxy to the fake there to reach the toolboxes through it. "" restores
// the fake's own.
func (f *Fake) SetToolboxHost(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.toolboxHost = addr
}

// Close stops the server and kills every process the fake started. It
// is idempotent.
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
		for _, p := range sb.procs {
			p.Signal(syscall.SIGKILL)
		}
	}
	f.mu.Unlock()
	f.srv.Close()
	f.wg.Wait()
}

// RejectImage makes builds from image fail (state build_failed) with
// reason.
func (f *Fake) RejectImage(image, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.badImages[image] = reason
}

// AddSnapshot makes a snapshot known.
func (f *Fake) AddSnapshot(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.snapshots[name] = true
}

// SetStartPolls sets how many reads a new sandbox takes to be started
// (default 1).
func (f *Fake) SetStartPolls(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startPolls = n
}

// SetMemoryScale makes every sandbox enforce 1/n of its memory on its
// processes (default n = 1: a sandbox of 1 GB lets each process hold
// 1 GiB). A test of the limit sets n so that a few GB, the API's unit,
// are a few MiB on this host; n < 1 counts as 1.
func (f *Fake) SetMemoryScale(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.memoryScale = max(n, 1)
}

// memoryLimit is how many bytes each process of sb may hold. f.mu is held.
func (f *Fake) memoryLimit(sb *sandbox) int64 {
	return int64(sb.dto.Memory) << 30 / f.memoryScale
}

// StallFollows makes every log stream that follows (follow=true) go
// silent once it has sent n bytes of the log: it sends nothing more, not
// even its close, and holds the connection open until the client leaves,
// as a stream whose link died without a reset does. A read of the log
// that does not follow is not affected. n < 0 (the default) restores
// whole streams.
func (f *Fake) StallFollows(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stallFollows = n
}

// SetExecuteTimeout makes every execute time out after d (then 408), as
// if it had asked for that timeout; 0 restores the requests' own.
func (f *Fake) SetExecuteTimeout(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.executeTimeout = d
}

// Sandbox describes a sandbox of the fake.
type Sandbox struct {
	ID     string
	State  string
	Labels map[string]string
	// Dir is the sandbox's home directory on the host.
	Dir string
	// Pgids are the process groups of the commands it ran.
	Pgids []int
	// Volumes are the volumes it mounts, their IDs resolved.
	Volumes []SandboxVolume
}

// Sandboxes returns the sandboxes not deleted, in creation order.
func (f *Fake) Sandboxes() []Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	var list []Sandbox
	for _, id := range f.order {
		if sb, ok := f.sandboxes[id]; ok {
			list = append(list, sb.describe())
		}
	}
	return list
}

// Deleted returns the IDs of the deleted sandboxes, in order.
func (f *Fake) Deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deleted)
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

// ExecuteRequest is the toolbox's ExecuteRequest, as the fake received it.
type ExecuteRequest struct {
	Command string            `json:"command"`
	Cwd     string            `json:"cwd"`
	Envs    map[string]string `json:"envs"`
	Timeout *int              `json:"timeout"`
}

// Executes returns the execute requests received, in order.
func (f *Fake) Executes() []ExecuteRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.executes)
}

// killAll sends sig to the process groups of sb's commands and records
// those it reached. f.mu is held.
func (f *Fake) killAll(sb *sandbox, procs []*proc, sig syscall.Signal, reason string) {
	for _, p := range procs {
		if p.Signal(sig) {
			f.kills = append(f.kills, Kill{Sandbox: sb.dto.ID, Pgid: p.Pgid, Signal: sig, Reason: reason})
		}
	}
}

// authorized checks the bearer key, answering 401 as the API does when
// it is wrong.
func (f *Fake) authorized(w http.ResponseWriter, r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && key == f.APIKey {
		return true
	}
	writeJSON(w, http.StatusUnauthorized, map[string]any{"statusCode": 401, "message": "Unauthorized"})
	return false
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newID returns a sandbox ID shaped like the API's (a UUID).
func newID() string {
	h := randomHex(16)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// sandboxDir is the home directory of sandbox id.
func (f *Fake) sandboxDir(id string) string { return filepath.Join(f.root, id) }
