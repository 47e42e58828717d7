package modaltest

import (
	"context"
	"maps"
	"os"
	"syscall"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// router is the fake's command router: exec start, stdio read and wait.
type router struct {
	pb.UnimplementedTaskCommandRouterServer
	f *Fake
}

// maxChunk bounds one stdio message.
const maxChunk = 1 << 20

func (r *router) TaskExecStart(_ context.Context, req *pb.TaskExecStartRequest) (*pb.TaskExecStartResponse, error) {
	if len(req.GetCommandArgs()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no command")
	}
	if req.GetPtyInfo() != nil || req.HasTimeoutSecs() || len(req.GetSecretIds()) > 0 || req.GetContainerId() != "" {
		return nil, status.Error(codes.Unimplemented, "modaltest: PTYs, exec timeouts, secret IDs and sidecars are not faked")
	}
	env := maps.Clone(req.GetEnv())
	if env == nil {
		env = map[string]string{}
	}
	for _, src := range req.GetSecretSources() {
		if src.HasSecretId() {
			return nil, status.Error(codes.Unimplemented, "modaltest: secret IDs are not faked")
		}
		maps.Copy(env, src.GetEnv().GetContents())
	}
	pipe := [2]bool{
		req.GetStdoutConfig() == pb.TaskExecStdoutConfig_TASK_EXEC_STDOUT_CONFIG_PIPE,
		req.GetStderrConfig() == pb.TaskExecStderrConfig_TASK_EXEC_STDERR_CONFIG_PIPE,
	}

	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	var sb *sandbox
	for _, s := range f.sandboxes {
		if s.TaskID == req.GetTaskId() {
			sb = s
		}
	}
	switch {
	case f.stopped:
		return nil, status.Error(codes.Unavailable, "modaltest: stopped")
	case sb == nil:
		return nil, status.Errorf(codes.NotFound, "task %s not found", req.GetTaskId())
	case sb.Status != "":
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %s has finished (%s)", sb.ID, sb.Status)
	}
	for _, p := range sb.procs {
		if p.id == req.GetExecId() {
			return nil, status.Errorf(codes.AlreadyExists, "exec %s exists", p.id)
		}
	}
	dir := firstNonEmpty(req.GetWorkdir(), sb.Workdir, sb.Dir)
	hostDir := sb.hostDir(dir)
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		return nil, status.Errorf(codes.InvalidArgument, "workdir %s is not a directory", dir)
	}
	p, err := f.spawn(req.GetExecId(), req.GetCommandArgs(), env, dir, hostDir, pipe, sb.MemoryMiBMax)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "exec: %v", err)
	}
	sb.procs = append(sb.procs, p)
	return pb.TaskExecStartResponse_builder{}.Build(), nil
}

// TaskExecStdioRead streams one of an exec's outputs from the request's
// offset until the pipe's end.
func (r *router) TaskExecStdioRead(req *pb.TaskExecStdioReadRequest, stream grpc.ServerStreamingServer[pb.TaskExecStdioReadResponse]) error {
	p, err := r.f.process(req.GetTaskId(), req.GetExecId())
	if err != nil {
		return err
	}
	var out *output
	switch req.GetFileDescriptor() {
	case pb.TaskExecStdioFileDescriptor_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT:
		out = p.out[0]
	case pb.TaskExecStdioFileDescriptor_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR:
		out = p.out[1]
	default:
		return status.Error(codes.InvalidArgument, "bad file descriptor")
	}
	if out == nil {
		return nil
	}
	off := req.GetOffset()
	for {
		chunk, eof, wake := out.next(off, maxChunk)
		if len(chunk) > 0 {
			if err := stream.Send(pb.TaskExecStdioReadResponse_builder{Data: chunk}.Build()); err != nil {
				return err
			}
			off += uint64(len(chunk))
			continue
		}
		if eof {
			return nil
		}
		select {
		case <-wake:
		case <-stream.Context().Done():
			return status.FromContextError(stream.Context().Err()).Err()
		}
	}
}

// TaskExecWait waits for an exec's process: its exit code, or the signal
// that ended it.
func (r *router) TaskExecWait(ctx context.Context, req *pb.TaskExecWaitRequest) (*pb.TaskExecWaitResponse, error) {
	p, err := r.f.process(req.GetTaskId(), req.GetExecId())
	if err != nil {
		return nil, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	ws, _ := p.state.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		sig := int32(ws.Signal())
		return pb.TaskExecWaitResponse_builder{Signal: &sig}.Build(), nil
	}
	code := int32(ws.ExitStatus())
	return pb.TaskExecWaitResponse_builder{Code: &code}.Build(), nil
}

// process finds an exec by task and exec ID.
func (f *Fake) process(taskID, execID string) (*process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sb := range f.sandboxes {
		if sb.TaskID != taskID {
			continue
		}
		for _, p := range sb.procs {
			if p.id == execID {
				return p, nil
			}
		}
	}
	return nil, status.Errorf(codes.NotFound, "exec %s of task %s not found", execID, taskID)
}
