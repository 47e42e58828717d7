package modaltest

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Modal's rules for object names, as its SDK checks them.
var (
	objectNameRE = regexp.MustCompile(`^[a-zA-Z0-9\-_.]+$`)
	appIDRE      = regexp.MustCompile(`^ap-[a-zA-Z0-9]{22}$`)
)

// VolumeGetOrCreate looks a named volume up in the request's environment
// and, as the request's creation type says, makes it: missing is NotFound
// for a lookup, existing is AlreadyExists for create-fail-if-exists.
// Other creation types (ephemeral, overwrite) are not faked.
func (c *control) VolumeGetOrCreate(_ context.Context, req *pb.VolumeGetOrCreateRequest) (*pb.VolumeGetOrCreateResponse, error) {
	name := req.GetDeploymentName()
	if len(name) > 64 || !objectNameRE.MatchString(name) || appIDRE.MatchString(name) {
		return nil, status.Errorf(codes.InvalidArgument, "Invalid Volume name: '%s'", name)
	}
	create := false
	switch req.GetObjectCreationType() {
	case pb.ObjectCreationType_OBJECT_CREATION_TYPE_UNSPECIFIED:
	case pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_IF_MISSING, pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS:
		create = true
	default:
		return nil, status.Errorf(codes.Unimplemented, "modaltest: volume creation type %s is not faked", req.GetObjectCreationType())
	}
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	key := req.GetEnvironmentName() + "/" + name
	v, ok := f.volumes[key]
	switch {
	case ok && req.GetObjectCreationType() == pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_FAIL_IF_EXISTS:
		return nil, status.Errorf(codes.AlreadyExists, "Volume '%s' already exists", name)
	case !ok && !create:
		return nil, status.Errorf(codes.NotFound, "Volume '%s' not found", name)
	case !ok:
		f.seq++
		id := fmt.Sprintf("vo-%d-%s", f.seq, randomID())
		dir := filepath.Join(f.root, "volumes", id)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, status.Errorf(codes.Internal, "modaltest: %v", err)
		}
		v = &Volume{ID: id, Name: name, Environment: req.GetEnvironmentName(), Dir: dir}
		f.volumes[key] = v
	}
	return pb.VolumeGetOrCreateResponse_builder{
		VolumeId: v.ID,
		Metadata: pb.VolumeMetadata_builder{Name: v.Name, Version: pb.VolumeFsVersion_VOLUME_FS_VERSION_V1}.Build(),
	}.Build(), nil
}

// VolumeDelete deletes a volume by ID, files and all.
func (c *control) VolumeDelete(_ context.Context, req *pb.VolumeDeleteRequest) (*emptypb.Empty, error) {
	f := c.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, v := range f.volumes {
		if v.ID == req.GetVolumeId() {
			delete(f.volumes, key)
			if err := os.RemoveAll(v.Dir); err != nil {
				return nil, status.Errorf(codes.Internal, "modaltest: %v", err)
			}
			return &emptypb.Empty{}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "volume %s not found", req.GetVolumeId())
}

// mounts checks a sandbox definition's volume mounts and returns them;
// f.mu must be held. Mount paths must be absolute, clean, not / and not
// one within another; volumes must exist.
func (f *Fake) mounts(def *pb.Sandbox) ([]Mount, error) {
	var out []Mount
	for _, m := range def.GetVolumeMounts() {
		p := m.GetMountPath()
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			return nil, status.Errorf(codes.InvalidArgument, "volume mount path %q: not an absolute path below /", p)
		}
		if m.GetReadOnly() || m.HasSubPath() {
			return nil, status.Error(codes.Unimplemented, "modaltest: read-only and sub-path volume mounts are not faked")
		}
		for _, o := range out {
			if within(p, o.Path) || within(o.Path, p) {
				return nil, status.Errorf(codes.InvalidArgument, "volume mount paths %q and %q overlap", o.Path, p)
			}
		}
		var vol *Volume
		for _, v := range f.volumes {
			if v.ID == m.GetVolumeId() {
				vol = v
			}
		}
		if vol == nil {
			return nil, status.Errorf(codes.NotFound, "volume %s not found", m.GetVolumeId())
		}
		out = append(out, Mount{VolumeID: vol.ID, Path: p, AllowBackgroundCommits: m.GetAllowBackgroundCommits(), Dir: vol.Dir})
	}
	return out, nil
}

// hostDir is where an exec of sb asked to run in dir runs: the same place
// in a volume's directory when dir is a mount path or under one, else
// dir itself.
func (sb *sandbox) hostDir(dir string) string {
	clean := path.Clean(dir)
	for _, m := range sb.Mounts {
		if within(clean, m.Path) {
			return filepath.Join(m.Dir, filepath.FromSlash(strings.TrimPrefix(clean, m.Path)))
		}
	}
	return dir
}

// within reports whether p is dir or under it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}
