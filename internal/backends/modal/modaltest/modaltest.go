// Package modaltest is an in-process fake of Modal's gRPC API for the
// modal backend's tests, driven by Modal's own Go SDK.
//
// One gRPC server on a loopback port registers the SDK's generated
// service definitions: the control plane (modal.client.ModalClient) and
// the per-task command router (TaskCommandRouter), which Modal serves at a
// URL it hands out per sandbox. It implements the RPCs the SDK sends for
// V2 sandboxes — auth token, app, environment, image, sandbox create
// (with volume mounts), terminate, wait, list by tags, tags get and set,
// named volume get-or-create and delete, exec start, stdio read, exec wait
// — and fails the test on any other. It checks the auth metadata of every
// call: the token pair and the JWT from AuthTokenGet on the control plane,
// the router JWT as a Bearer token on the router.
//
// A sandbox is a directory under the test's temp dir (its default working
// directory; absolute paths a job asks for work as they are). Each exec
// runs its argv as a real local process in a process group of its own,
// with exactly the environment the request gives and an open, empty
// stdin pipe, as a Modal exec has. Terminating a sandbox, or its timeout
// passing, kills the process group of every exec it ran. Output is kept
// whole, so a stdio read resumes at any offset. A sandbox's memory limit
// (memory_mb_max; none when it is not sent, as with Modal, where the
// memory request alone is no limit) bounds each exec's processes: their
// data segment is limited to it (RLIMIT_DATA; sandboxtest.LimitMemory),
// so an exec that allocates more fails, as Modal would kill it.
//
// A named volume is a directory under the test's temp dir, made by
// VolumeGetOrCreate (by environment and name, with Modal's name rules)
// and removed with its files by VolumeDelete. A sandbox created with a
// volume mounted at a path binds that path to the volume's directory for
// its execs' working directories only: an exec whose working directory is
// the mount path, or under it, runs in the volume's directory (or the
// same subdirectory of it), so what a command reads and writes by
// relative path persists in the volume from one sandbox to the next. The
// processes run on the host, without a mount namespace: an absolute path
// under the mount point in a command (cat /workspace/f) does not reach
// the volume, and pwd prints the host directory. Writes reach the volume
// at once, where Modal writes a sandbox's changes back when it ends.
//
// Not faked: V1 sandboxes (GPU), images (refs are recorded, never pulled),
// CPU limits, memory for the sandbox as a whole (the limit is per
// process), network policy and idle timeouts (recorded only),
// stdin writes, processes that leave their exec's process group,
// ephemeral volumes, read-only and sub-path mounts (refused as
// Unimplemented, which fails the test), volume commits and reloads.
package modaltest

import (
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
)

// Fake is a running fake Modal API. Its methods are safe for concurrent use.
type Fake struct {
	// URL is the server URL to give the SDK (server_url or
	// MODAL_SERVER_URL): http://127.0.0.1:PORT, so it dials without TLS.
	URL string
	// TokenID and TokenSecret are the one token the fake accepts.
	TokenID, TokenSecret string

	t         testing.TB
	root      string
	routerURL string
	authJWT   string
	routerJWT string
	srv       *grpc.Server
	procs     sync.WaitGroup // process waiters and output readers

	mu        sync.Mutex
	stopped   bool // no exec starts once set
	seq       int
	apps      map[string]string  // "env/name" -> app ID
	volumes   map[string]*Volume // "env/name" -> volume
	images    []string
	sandboxes []*sandbox
	calls     map[string]int
	killed    []int
}

// Start starts a fake on a loopback port; it stops, and kills every
// process it started, when the test ends.
func Start(t testing.TB) *Fake {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("modaltest: listen: %v", err)
	}
	addr := lis.Addr().String()
	f := &Fake{
		URL:         "http://" + addr,
		TokenID:     "ak-" + randomID(),
		TokenSecret: "as-" + randomID(),
		t:           t,
		root:        t.TempDir(),
		// The SDK insists on https for the router; it dials it without TLS
		// because the control plane's host is a loopback one.
		routerURL: "https://" + addr,
		authJWT:   jwt(),
		routerJWT: jwt(),
		apps:      map[string]string{},
		volumes:   map[string]*Volume{},
		calls:     map[string]int{},
	}
	f.srv = grpc.NewServer(grpc.ChainUnaryInterceptor(f.unary), grpc.ChainStreamInterceptor(f.stream))
	pb.RegisterModalClientServer(f.srv, &control{f: f})
	pb.RegisterTaskCommandRouterServer(f.srv, &router{f: f})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = f.srv.Serve(lis)
	}()
	t.Cleanup(func() {
		f.mu.Lock()
		f.stopped = true
		all := slices.Clone(f.sandboxes)
		f.mu.Unlock()
		f.srv.Stop()
		<-served
		for _, sb := range all {
			f.finish(sb, statusTerminated)
		}
		f.mu.Lock()
		for _, sb := range all {
			for _, p := range sb.procs {
				p.abandon()
			}
		}
		f.mu.Unlock()
		f.procs.Wait()
	})
	return f
}

// Sandbox is what the fake knows of one sandbox.
type Sandbox struct {
	ID, AppID, TaskID, ImageID string
	// Dir is the sandbox's directory, an exec's default working directory.
	Dir  string
	Tags map[string]string
	// The definition, as the SDK sent it.
	Workdir                 string
	MilliCPU, MilliCPUMax   uint32
	MemoryMiB, MemoryMiBMax uint32
	Network                 string // OPEN, BLOCKED or ALLOWLIST
	AllowedCIDRs            []string
	Timeout, IdleTimeout    time.Duration
	// Mounts are the volumes mounted in it, as the SDK sent them.
	Mounts []Mount
	// Status is "" while it runs, then "terminated" or "timeout".
	Status string
	Execs  []Exec
}

// Mount is one volume mounted in a sandbox.
type Mount struct {
	VolumeID, Path         string
	AllowBackgroundCommits bool
	// Dir is the volume's directory the mount path stands for.
	Dir string
}

// Volume is a named volume.
type Volume struct {
	ID, Name, Environment string
	// Dir holds the volume's files.
	Dir string
}

// Exec is one exec a sandbox ran.
type Exec struct {
	ID   string
	Args []string
	Env  map[string]string
	// Dir is the working directory in the sandbox, HostDir where the
	// process ran (a volume's directory, for a Dir under a mount path).
	Dir, HostDir string
	PID          int
}

// Sandboxes returns every sandbox, live or not, oldest first.
func (f *Fake) Sandboxes() []Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Sandbox, 0, len(f.sandboxes))
	for _, sb := range f.sandboxes {
		out = append(out, sb.snapshot())
	}
	return out
}

// Live returns the sandboxes not terminated yet.
func (f *Fake) Live() []Sandbox {
	return slices.DeleteFunc(f.Sandboxes(), func(s Sandbox) bool { return s.Status != "" })
}

// Terminated returns the sandboxes terminated, or timed out, so far.
func (f *Fake) Terminated() []Sandbox {
	return slices.DeleteFunc(f.Sandboxes(), func(s Sandbox) bool { return s.Status == "" })
}

// Killed returns the process groups (their leaders' pids) that ending a
// sandbox killed, leftovers of finished execs included.
func (f *Fake) Killed() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.killed)
}

// Calls returns how many times each RPC was called, by method name
// ("SandboxCreateV2", "TaskExecStart", ...).
func (f *Fake) Calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.calls)
}

// Volumes returns the named volumes that exist, by ID.
func (f *Fake) Volumes() map[string]Volume {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]Volume, len(f.volumes))
	for _, v := range f.volumes {
		out[v.ID] = *v
	}
	return out
}

// Images returns the Dockerfile commands of each image the SDK asked for.
func (f *Fake) Images() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.images)
}
