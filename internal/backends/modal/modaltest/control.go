package modaltest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// control is the fake's control plane: the ModalClient RPCs the SDK sends
// for V2 sandboxes. The embedded server answers Unimplemented to the
// rest, which fails the test.
type control struct {
	pb.UnimplementedModalClientServer
	f *Fake
}

func (c *control) AuthTokenGet(context.Context, *pb.AuthTokenGetRequest) (*pb.AuthTokenGetResponse, error) {
	return pb.AuthTokenGetResponse_builder{Token: c.f.authJWT}.Build(), nil
}

func (c *control) AppGetOrCreate(_ context.Context, req *pb.AppGetOrCreateRequest) (*pb.AppGetOrCreateResponse, error) {
	if req.GetAppName() == "" {
		return nil, status.Error(codes.InvalidArgument, "app name required")
	}
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	key := req.GetEnvironmentName() + "/" + req.GetAppName()
	id, ok := f.apps[key]
	if !ok {
		f.seq++
		id = fmt.Sprintf("ap-%d", f.seq)
		f.apps[key] = id
	}
	return pb.AppGetOrCreateResponse_builder{AppId: id}.Build(), nil
}

func (c *control) EnvironmentGetOrCreate(_ context.Context, req *pb.EnvironmentGetOrCreateRequest) (*pb.EnvironmentGetOrCreateResponse, error) {
	return pb.EnvironmentGetOrCreateResponse_builder{
		EnvironmentId: "en-1",
		Metadata: pb.EnvironmentMetadata_builder{
			Name:     firstNonEmpty(req.GetDeploymentName(), "main"),
			Settings: pb.EnvironmentSettings_builder{ImageBuilderVersion: "2024.10"}.Build(),
		}.Build(),
	}.Build(), nil
}

// ImageGetOrCreate records the image and reports it built at once.
func (c *control) ImageGetOrCreate(_ context.Context, req *pb.ImageGetOrCreateRequest) (*pb.ImageGetOrCreateResponse, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images = append(f.images, strings.Join(req.GetImage().GetDockerfileCommands(), "\n"))
	return pb.ImageGetOrCreateResponse_builder{
		ImageId: fmt.Sprintf("im-%d", len(f.images)),
		Result:  pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_SUCCESS}.Build(),
	}.Build(), nil
}

func (c *control) SandboxCreateV2(_ context.Context, req *pb.SandboxCreateV2Request) (*pb.SandboxCreateV2Response, error) {
	sb, err := c.f.create(req)
	if err != nil {
		return nil, err
	}
	return pb.SandboxCreateV2Response_builder{
		SandboxId: sb.ID,
		TaskId:    sb.TaskID,
		CommandRouterAccess: pb.CommandRouterAccess_builder{
			Jwt: c.f.routerJWT,
			Url: c.f.routerURL,
		}.Build(),
	}.Build(), nil
}

func (c *control) SandboxTerminateV2(_ context.Context, req *pb.SandboxTerminateRequest) (*pb.SandboxTerminateResponse, error) {
	sb := c.f.lookup(func(s *sandbox) bool { return s.ID == req.GetSandboxId() })
	if sb == nil {
		return nil, status.Errorf(codes.NotFound, "sandbox %s not found", req.GetSandboxId())
	}
	resp := pb.SandboxTerminateResponse_builder{}
	if prev := c.f.finish(sb, statusTerminated); prev != "" {
		resp.ExistingResult = result(prev)
	}
	return resp.Build(), nil
}

// SandboxWaitV2 waits up to the request's timeout for a sandbox to end,
// and returns how it ended, or no result.
func (c *control) SandboxWaitV2(ctx context.Context, req *pb.SandboxWaitRequest) (*pb.SandboxWaitResponse, error) {
	sb := c.f.lookup(func(s *sandbox) bool { return s.ID == req.GetSandboxId() })
	if sb == nil {
		return nil, status.Errorf(codes.NotFound, "sandbox %s not found", req.GetSandboxId())
	}
	ended := func() *pb.SandboxWaitResponse {
		c.f.mu.Lock()
		defer c.f.mu.Unlock()
		return pb.SandboxWaitResponse_builder{Result: result(sb.Status)}.Build()
	}
	select {
	case <-sb.ended:
		return ended(), nil
	default:
	}
	timer := time.NewTimer(time.Duration(float64(req.GetTimeout()) * float64(time.Second)))
	defer timer.Stop()
	select {
	case <-sb.ended:
		return ended(), nil
	case <-timer.C:
		return pb.SandboxWaitResponse_builder{}.Build(), nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// SandboxListV2 lists the running sandboxes of the request's app that
// carry all its tags, newest first, older than BeforeTimestamp when set.
func (c *control) SandboxListV2(_ context.Context, req *pb.SandboxListRequest) (*pb.SandboxListResponse, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	var infos []*pb.SandboxInfo
	for _, sb := range slices.Backward(f.sandboxes) {
		switch {
		case req.GetAppId() != "" && sb.AppID != req.GetAppId(),
			sb.Status != "" && !req.GetIncludeFinished(),
			req.GetBeforeTimestamp() != 0 && sb.created >= req.GetBeforeTimestamp(),
			!hasTags(sb.Tags, req.GetTags()):
			continue
		}
		infos = append(infos, pb.SandboxInfo_builder{
			Id: sb.ID, CreatedAt: sb.created, AppId: sb.AppID, Tags: tagList(sb.Tags),
		}.Build())
	}
	return pb.SandboxListResponse_builder{Sandboxes: infos}.Build(), nil
}

func (c *control) SandboxTagsGetV2(_ context.Context, req *pb.SandboxTagsGetRequest) (*pb.SandboxTagsGetResponse, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sb := range f.sandboxes {
		if sb.ID == req.GetSandboxId() {
			return pb.SandboxTagsGetResponse_builder{Tags: tagList(sb.Tags)}.Build(), nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "sandbox %s not found", req.GetSandboxId())
}

// SandboxTagsSetV2 replaces a running sandbox's tags.
func (c *control) SandboxTagsSetV2(_ context.Context, req *pb.SandboxTagsSetRequest) (*emptypb.Empty, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sb := range f.sandboxes {
		if sb.ID == req.GetSandboxId() {
			if sb.Status != "" {
				return nil, status.Errorf(codes.FailedPrecondition, "sandbox %s has finished", sb.ID)
			}
			sb.Tags = map[string]string{}
			for _, t := range req.GetTags() {
				sb.Tags[t.GetTagName()] = t.GetTagValue()
			}
			return &emptypb.Empty{}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "sandbox %s not found", req.GetSandboxId())
}

func hasTags(have map[string]string, want []*pb.SandboxTag) bool {
	for _, t := range want {
		if v, ok := have[t.GetTagName()]; !ok || v != t.GetTagValue() {
			return false
		}
	}
	return true
}

func tagList(tags map[string]string) []*pb.SandboxTag {
	list := make([]*pb.SandboxTag, 0, len(tags))
	for k, v := range tags {
		list = append(list, pb.SandboxTag_builder{TagName: k, TagValue: v}.Build())
	}
	return list
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
