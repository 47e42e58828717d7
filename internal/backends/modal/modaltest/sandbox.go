package modaltest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// How a sandbox ended (Sandbox.Status).
const (
	statusTerminated = "terminated"
	statusTimeout    = "timeout"
)

// sandbox is one fake sandbox; all of it is guarded by Fake.mu.
type sandbox struct {
	Sandbox
	created float64
	procs   []*process
	timer   *time.Timer
	ended   chan struct{} // closed once Status is set
}

// create makes the sandbox req asks for and starts its timeout.
func (f *Fake) create(req *pb.SandboxCreateV2Request) (*sandbox, error) {
	def := req.GetDefinition()
	f.mu.Lock()
	defer f.mu.Unlock()
	mounts, err := f.mounts(def)
	if err != nil {
		return nil, err
	}
	f.seq++
	// Not "sb-" and 22 base62 characters: the SDK takes that for a V1 ID.
	id := fmt.Sprintf("sb-v2-%d-%s", f.seq, randomID())
	dir := filepath.Join(f.root, id)
	if err := os.Mkdir(dir, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "modaltest: %v", err)
	}
	res := def.GetResources()
	sb := &sandbox{Sandbox: Sandbox{
		ID: id, AppID: req.GetAppId(), TaskID: fmt.Sprintf("ta-%d", f.seq), ImageID: def.GetImageId(),
		Dir: dir, Tags: map[string]string{}, Workdir: def.GetWorkdir(),
		MilliCPU: res.GetMilliCpu(), MilliCPUMax: res.GetMilliCpuMax(),
		MemoryMiB: res.GetMemoryMb(), MemoryMiBMax: res.GetMemoryMbMax(),
		Network:      def.GetNetworkAccess().GetNetworkAccessType().String(),
		AllowedCIDRs: def.GetNetworkAccess().GetAllowedCidrs(),
		Timeout:      time.Duration(def.GetTimeoutSecs()) * time.Second,
		IdleTimeout:  time.Duration(def.GetIdleTimeoutSecs()) * time.Second,
		Mounts:       mounts,
	}, created: float64(f.seq), ended: make(chan struct{})}
	for _, t := range req.GetTags() {
		sb.Tags[t.GetTagName()] = t.GetTagValue()
	}
	if sb.Timeout > 0 {
		sb.timer = time.AfterFunc(sb.Timeout, func() { f.finish(sb, statusTimeout) })
	}
	f.sandboxes = append(f.sandboxes, sb)
	return sb, nil
}

// lookup returns the first sandbox match accepts, or nil.
func (f *Fake) lookup(match func(*sandbox) bool) *sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sb := range f.sandboxes {
		if match(sb) {
			return sb
		}
	}
	return nil
}

// finish ends sb with status: every exec's process group is killed,
// leftovers of finished execs included. It returns the status sb had
// already ended with, if it had.
func (f *Fake) finish(sb *sandbox, status string) (prev string) {
	f.mu.Lock()
	if sb.Status != "" {
		f.mu.Unlock()
		return sb.Status
	}
	sb.Status = status
	close(sb.ended)
	if sb.timer != nil {
		sb.timer.Stop()
	}
	procs := slices.Clone(sb.procs)
	f.mu.Unlock()
	for _, p := range procs {
		if p.kill() {
			f.mu.Lock()
			f.killed = append(f.killed, p.pid)
			f.mu.Unlock()
		}
	}
	return ""
}

// result is the GenericResult of a sandbox that ended with status.
func result(status string) *pb.GenericResult {
	s := pb.GenericResult_GENERIC_STATUS_TERMINATED
	if status == statusTimeout {
		s = pb.GenericResult_GENERIC_STATUS_TIMEOUT
	}
	return pb.GenericResult_builder{Status: s}.Build()
}

// snapshot copies sb for a test; f.mu must be held.
func (sb *sandbox) snapshot() Sandbox {
	s := sb.Sandbox
	s.Tags = maps.Clone(sb.Tags)
	s.AllowedCIDRs = slices.Clone(sb.AllowedCIDRs)
	s.Mounts = slices.Clone(sb.Mounts)
	s.Execs = make([]Exec, 0, len(sb.procs))
	for _, p := range sb.procs {
		s.Execs = append(s.Execs, Exec{ID: p.id, Args: slices.Clone(p.args), Env: maps.Clone(p.env), Dir: p.dir, HostDir: p.hostDir, PID: p.pid})
	}
	return s
}
